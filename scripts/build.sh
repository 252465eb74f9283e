#!/usr/bin/env bash
# Configures and builds lt into ./build (Release). Extra arguments go to cmake,
# e.g. scripts/build.sh -DLT_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >&2
cmake --build build -j "$(nproc)" >&2
