#!/usr/bin/env bash
# Builds lt and runs the whole test suite. CUDA tests (label cuda) report
# themselves skipped on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh "$@"
ctest --test-dir build -j "$(nproc)" --output-on-failure
