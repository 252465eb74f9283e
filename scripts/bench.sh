#!/usr/bin/env bash
# Runs the benchmarks behind docs/benchmarks.md and writes one Markdown table
# per benchmark into OUT (default bench-results/). With --cuda it runs the
# CUDA tests first and the GPU rows (fp32 and TF32); without, the CPU rows.
# Run on a quiet machine: other work shows up in the numbers.
#   scripts/bench.sh [--cuda] [OUT]
# The speech streams replay sentences spoken by espeak-ng; on a machine
# without it, BENCH_AUDIO names recordings to replay instead (spoken
# elsewhere: BENCH_AUDIO="$(ls DIR/*.wav)").
set -euo pipefail
cd "$(dirname "$0")/.."
device=cpu
if [ "${1:-}" = "--cuda" ]; then
  device=cuda
  shift
fi
out="${1:-bench-results}"
mkdir -p "$out"
bench=build/bin/lt-bench
[ -x "$bench" ] || { echo "bench.sh: build first (scripts/build.sh)" >&2; exit 1; }

audio=()
for f in ${BENCH_AUDIO:-}; do audio+=(--audio "$f"); done
# A streams row: its arguments, then the recordings if given.
streams() { run "$1" streams "${@:2}" ${audio[@]+"${audio[@]}"}; }

run() {  # name, lt-bench arguments...
  local name="$1"
  shift
  echo "== $name: lt-bench $*" >&2
  "$bench" "$@" -f md > "$out/$name.md"
}

if [ "$device" = cuda ]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" || true
  build/tests/lt-tests-cuda > "$out/cuda-tests.log" 2>&1 || { tail -20 "$out/cuda-tests.log" >&2; exit 1; }
  run attention-cuda attention -d cuda -r 5
  run attention-cuda-tf32 attention --tf32 -d cuda -a causal-linear -r 5
  run generate-cuda-fp32 generate -d cuda -a linear -b 1 16 64 256 1024 4096 10000
  run generate-cuda-tf32 generate --tf32 -d cuda -a linear -b 1 16 64 256 1024 4096 10000
  run generate-cuda-bf16-state generate --tf32 --bf16 -d cuda -a linear -b 1024 4096 10000
  run generate-cuda-cifar-bf16-state generate --tf32 --bf16 -d cuda --shape cifar -a linear -b 1024 4096 --steps 192
  run generate-cuda-softmax generate --tf32 -d cuda -a softmax -b 1 64 256 1024 --steps 98 --max-memory 60
  run generate-cuda-cifar generate --tf32 -d cuda --shape cifar -a linear softmax -b 64 256 1024 4096 --steps 192 --max-memory 60
  run train-cuda-fp32 train -d cuda --shape mnist cifar -r 5
  run train-cuda-tf32 train --tf32 -d cuda --shape mnist cifar -r 5
  run speech-cuda speech -d cuda -a linear softmax causal-linear bilstm --frame-stack 1 3 --tf32 -r 3
  run asr-cuda asr -d cuda --thread-counts 1
  for n in 64 256 1024 4096 8192; do  # the state pool: one group's streams in one step
    streams "streams-cuda-saturated-$n" -d cuda --mode saturated -n "$n" --chunk-ms 30 --seconds 5
  done
  streams streams-cuda-find-batched -d cuda --find -n 1024 --max-streams 32768 --mode batched --seconds 8 --arrival 3
  streams streams-cuda-find-alone -d cuda --find -n 16 --mode alone --seconds 8 --arrival 3
  run streams-cuda-images streams -d cuda --images 64 --arrival 3
  run streams-cuda-images-4096 streams -d cuda --images 4096 --arrival 3 --mode batched  # alone would take minutes
else
  run attention-cpu attention --tokens 16384 -r 3
  run generate-cpu-linear generate -b 1 16 64 256 -a linear
  run generate-cpu-softmax generate -b 1 16 64 256 -a softmax --steps 98
  run generate-cpu-length generate --shape mnist cifar --layers 8 -b 16 --steps 48 -a linear softmax
  run generate-cpu-reformer generate -b 1 16 -a lsh-1 lsh-4 --steps 32 -r 2   # recomputation: O(L^2) an image
  run train-cpu train --shape mnist cifar -r 3
  run train-cpu-mnist-model train --layers 8 --d-model 192 --heads 6 -r 3      # the shipped models' shapes
  run train-cpu-fashion-model train --layers 6 --d-model 128 --heads 4 -r 3
  run speech-cpu speech -a linear softmax causal-linear bilstm -r 2 --hours 20
  run asr-cpu asr
  run asr-cpu-stream-30min asr --mode stream --thread-counts 1 --stream-seconds 1800
  for n in 16 64 256 512; do  # the state pool: one group's streams in one step
    streams "streams-cpu-saturated-$n" -t 2 --mode saturated -n "$n" --chunk-ms 30 --seconds 5
  done
  run streams-cpu-images streams --images 64 --arrival 3
  if grep -q avx512_bf16 /proc/cpuinfo; then
    streams streams-cpu-saturated-448-bf16 -t 2 --mode saturated -n 448 --bf16 --chunk-ms 30 --seconds 5
    # The streams held in real time, stepped alone and batched, one after the other.
    streams streams-cpu-find-alone-bf16 -t 2 --find -n 200 --mode alone --bf16 --seconds 8 --arrival 3
    streams streams-cpu-find-batched-bf16 -t 2 --find -n 850 --mode batched --bf16 --seconds 8 --arrival 3
    run train-cpu-bf16 train --bf16 --shape mnist cifar -r 3
    run train-cpu-mnist-model-bf16 train --bf16 --layers 8 --d-model 192 --heads 6 -r 3
    run train-cpu-fashion-model-bf16 train --bf16 --layers 6 --d-model 128 --heads 4 -r 3
  fi
fi
echo "bench.sh: tables in $out/" >&2
