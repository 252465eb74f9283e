#!/usr/bin/env bash
# Installs a build into a temporary prefix and builds and runs the examples in
# docs/examples as an outside project would: the C one with CMake's
# find_package and with pkg-config (both must print the same image for the
# same seed), the C++ one with find_package, and the Python one from the
# prefix's dist-packages. Nothing sets LD_LIBRARY_PATH: each program finds
# liblt.so.0 in the prefix by itself (CMake's rpath, and the one
# docs/api.md's pkg-config line adds), as it must from any prefix.
#   scripts/test-install.sh [BUILD_DIR]   (default: build)
set -euo pipefail
unset LD_LIBRARY_PATH
cd "$(dirname "$0")/.."
build="${1:-build}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
model="$work/prefix/share/lt/weights/mnist.safetensors"

cmake -S docs/examples/c -B "$work/c" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/c" >/dev/null
"$work/c/sample" "$model" 7 >"$work/cmake.txt"

export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
cc docs/examples/c/sample.c $(pkg-config --cflags --libs lt) -Wl,-rpath,$(pkg-config --variable=libdir lt) \
  -o "$work/sample-pc"
"$work/sample-pc" "$model" 7 >"$work/pkg-config.txt"

cmp "$work/cmake.txt" "$work/pkg-config.txt"

# C++: a WAV streamed through the shipped streaming model, phones as they settle.
cmake -S docs/examples/cpp -B "$work/cpp" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cpp" >/dev/null
espeak-ng -v en-us -w "$work/speech.wav" "seven days without rain"
"$work/cpp/stream" "$work/prefix/share/lt/weights/asr-stream.safetensors" "$work/speech.wav" >"$work/stream.txt"
[ "$(wc -l <"$work/stream.txt")" -ge 5 ] || { echo "test-install: the C++ example streamed no phones" >&2; exit 1; }

# The Python package from the prefix, finding liblt.so.0 beside it.
site="$(echo "$work"/prefix/lib/python3*/dist-packages)"
PYTHONPATH="$site" /usr/bin/python3 -c "
import lt, sys
m = lt.Model(sys.argv[1])
a, b = m.sample_images(2, 7), m.sample_images(2, 7)
assert a.shape == (2, 28, 28, 1) and (a == b).all()
print('python: lt', lt.version(), 'sampled', a.shape, file=sys.stderr)" "$model"
PYTHONPATH="$site" /usr/bin/python3 docs/examples/python/sample_and_complete.py "$model" 7 >"$work/python.txt"
[ "$(wc -l <"$work/python.txt")" -eq 56 ] || { echo "test-install: the Python example printed no digits" >&2; exit 1; }
[ "$(wc -l <"$work/cmake.txt")" -eq 28 ] || { echo "test-install: expected 28 rows of an MNIST image" >&2; exit 1; }
cat "$work/cmake.txt"
echo "test-install: the C example built with find_package(lt) and pkg-config, the C++ one with find_package, and both ran; so did the Python one" >&2
