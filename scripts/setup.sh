#!/usr/bin/env bash
# Installs lt's build dependencies from Debian 12 / Ubuntu packages; installs
# only what is missing, so it is cheap to run again. CUDA is not a Debian
# package: when nvcc is installed (e.g. /usr/local/cuda) the build uses it,
# and NCCL with it. Open MPI lets lt-train run over many processes.
# pocketsphinx-en-us brings the CMU dictionary and a general English trigram
# (scripts/speech/sphinx_lm_to_arpa.py, which sphinxbase-utils' tools test).
# lt-server: Boost.Beast (libboost-dev, header-only) and OpenSSL; its tests
# use python3-websockets and openssl, its browser test chromium and node
# with npm (puppeteer-core, .ci/run).
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config git
          libopenblas-openmp-dev libcli11-dev doctest-dev libstb-dev libsndfile1-dev
          nlohmann-json3-dev zlib1g-dev libfftw3-dev libsoxr-dev espeak-ng python3
          libopenmpi-dev openmpi-bin python3-numpy python3-pytest pocketsphinx-en-us sphinxbase-utils
          libboost-dev libssl-dev openssl python3-websockets chromium nodejs "$@")
# Debian's npm is a package of its own; a Node.js from elsewhere brings its own npm.
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
