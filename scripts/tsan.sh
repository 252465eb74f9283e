#!/usr/bin/env bash
# The code that runs on threads of its own, under ThreadSanitizer: lt-server
# (its I/O threads, the compute loop, the file worker, signals and the drain)
# through its test scripts, and the library's tests that push audio from
# other threads while a stream group steps. Fails if any report was written.
#   scripts/tsan.sh [BUILD_DIR]   (default: build-tsan)
# libgomp is not instrumented, so its barriers would read as races between
# the OpenMP threads of every parallel loop: OMP_THREAD_LIMIT=1 runs each
# loop on the thread that reaches it, which leaves the program's own threads
# as the ones TSan watches. docs/reliability.md has what it found.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-tsan}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLT_CUDA=OFF -DLT_TSAN=ON >&2
cmake --build "$build" -j "$(nproc)" >&2
reports="$(realpath -m "$build")/tsan-reports"  # absolute: the tests run in folders of their own
rm -rf "$reports" && mkdir -p "$reports"
export OMP_THREAD_LIMIT=1 TSAN_OPTIONS="exitcode=0 log_path=$reports/report"
"$build/tests/lt-tests" -tc='streams pushed from other threads*,lt_audio_reader gives*' >&2
ctest --test-dir "$build" -L server -E browser --output-on-failure >&2
if compgen -G "$reports/report*" >/dev/null; then
  cat "$reports"/report* >&2
  echo "tsan.sh: ThreadSanitizer reported $(cat "$reports"/report* | grep -c '^WARNING: ThreadSanitizer') problems (above)" >&2
  exit 1
fi
echo "tsan.sh: no ThreadSanitizer report" >&2
