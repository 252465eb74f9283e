#!/usr/bin/env bash
# Links Fashion-MNIST (70,000 28x28 grey images, IDX .gz) into
# data/fashion-mnist (or the folder given as $1), installing Debian's
# dataset-fashion-mnist package first when it is missing.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$repo/data/fashion-mnist}"
src=/usr/share/datasets/fashion-mnist
if ! dpkg-query -W -f='${Status}' dataset-fashion-mnist 2>/dev/null | grep -q "ok installed"; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "prepare-fashion-mnist: installing dataset-fashion-mnist" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends dataset-fashion-mnist >&2
fi
mkdir -p "$out"
for name in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [ -f "$src/$name.gz" ] || { echo "prepare-fashion-mnist: $src/$name.gz is missing" >&2; exit 1; }
  ln -sfn "$src/$name.gz" "$out/$name.gz"
done
echo "fashion-mnist: train and t10k images and labels (.gz) linked into $out" >&2
