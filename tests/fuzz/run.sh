#!/usr/bin/env bash
# Runs every harness (or those named) over its committed seeds and dictionary
# for a fixed time each; any finding stops with a non-zero status and leaves
# the reproducer in WORK/artifacts. CI runs it with 20 s each (.ci/run);
# docs/reliability.md records the long runs made with -runs=N.
#   tests/fuzz/run.sh BUILD_DIR WORK_DIR 'LIBFUZZER_LIMIT' [harness...]
#   tests/fuzz/run.sh build-fuzz /tmp/lt-fuzz -max_total_time=20
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$1" work="$2" limit="$3"
shift 3
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(safetensors png idx idx_gzip cifar10 image_dataset model audio manifest language_model recognizer server_requests)
# One thread: the folder reader decodes with OpenMP, and the runs share cores.
export OMP_NUM_THREADS=1
mkdir -p "$work/artifacts"
for h in "${harnesses[@]}"; do
  mkdir -p "$work/corpus/$h"
  echo "== fuzz_$h $limit ==" >&2
  # The issue's limits: a hang over 5 s or 2 GB of memory is a finding.
  # New inputs go to WORK's corpus; the committed seeds are only read.
  set +e
  "$build/tests/fuzz/fuzz_$h" "$limit" -timeout=5 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -dict="$here/$h.dict" -artifact_prefix="$work/artifacts/$h-" -print_final_stats=1 \
    "$work/corpus/$h" "$here/corpus/$h" 2>&1 | tee "$work/$h.log" | grep -E "^(#[0-9]+ +(INITED|DONE)|stat::|==[0-9]+==ERROR|SUMMARY)" >&2
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -ne 0 ]; then
    echo "fuzz_$h: finding (exit $status); log $work/$h.log, reproducer in $work/artifacts/" >&2
    tail -40 "$work/$h.log" >&2
    exit 1
  fi
done
