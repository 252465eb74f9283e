#!/usr/bin/env bash
# Packs lt's built programs, the CUDA module (lib/liblt-cuda.so) and the
# shared libraries they need, except the
# C library, the CUDA driver and CUDA's own libraries (cuBLAS, NCCL), into one
# folder that runs on another x86-64 Linux machine with the same CUDA major
# version, e.g. a GPU machine without Debian's development packages. It
# also writes OUT_DIR.tar.xz (about a fifth of the size) to copy over:
#   scripts/bundle.sh [BUILD_DIR] [OUT_DIR] [PROGRAM...]   (defaults: build, bundle,
#                     every lt-* program and the CUDA tests; naming fewer makes it smaller)
#   tar xJf bundle.tar.xz
#   LD_LIBRARY_PATH=bundle/lib:/usr/local/cuda/lib64 bundle/bin/lt-bench ...
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}" out="${2:-bundle}"
shift $(($# < 2 ? $# : 2))
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
programs=()
for name in "$@"; do
  found=
  for dir in bin tests; do [ -x "$build/$dir/$name" ] && found="$build/$dir/$name"; done
  [ -n "$found" ] || { echo "bundle.sh: no program $name in $build/bin or $build/tests" >&2; exit 1; }
  programs+=("$found")
done
if [ ${#programs[@]} -eq 0 ]; then
  programs=("$build"/bin/lt-*)
  [ -x "$build/tests/lt-tests-cuda" ] && programs+=("$build/tests/lt-tests-cuda")
fi
cp "${programs[@]}" "$out/bin/"
# The CUDA backend, a module the programs load on first use from ../lib.
modules=()
if [ -f "$build/lib/liblt-cuda.so" ]; then
  cp "$build/lib/liblt-cuda.so" "$out/lib/"
  modules=("$build/lib/liblt-cuda.so")
fi
# Everything ldd resolves, less what the target provides itself.
ldd "${programs[@]}" "${modules[@]}" | awk '/=> \//{print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libcuda|libcublas[^/]*|libcudart|libnccl)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
strip "$out"/bin/* "$out"/lib/*
tar cJf "$out.tar.xz" "$out"
du -sh "$out" "$out.tar.xz" >&2
