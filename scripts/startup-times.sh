#!/usr/bin/env bash
# Start-up time of every tool: `--help`, and one short real job each on the
# shipped models, measured from outside over RUNS runs (default 10). For the
# jobs that report their own work (lt-sample-image, lt-asr), set-up is the
# median wall time less that work. Markdown on stdout; run on a quiet machine.
#   scripts/startup-times.sh [BIN_DIR] [RUNS]      (default: build/bin, 10)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/bin}" runs="${2:-10}"
[ -x "$bin/lt-asr" ] || { echo "startup-times.sh: no tools in $bin (scripts/build.sh)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Inputs: one second of speech, a digit to complete (its last row), test images.
espeak-ng -w "$tmp/one.wav" "hello world" 2>/dev/null
"$bin/lt-sample-image" -n 1 -s 1 -q -o "$tmp/digit.png"
# Two random 28x28 test images (and two to train on) as MNIST's IDX files.
python3 - "$tmp/data" <<'PY'
import os, random, struct, sys
os.makedirs(sys.argv[1])
for split in ("train", "t10k"):
    with open(os.path.join(sys.argv[1], split + "-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 0x803, 2, 28, 28) + bytes(random.randrange(256) for _ in range(2 * 784)))
PY

# One command RUNS times: median and fastest wall ms, median CPU ms (user +
# system: what the start-up costs on a machine whose other cores are busy),
# and the median of the work the tool reports (seconds after "in " on its
# summary line), if any.
TIMEFORMAT='%R %U %S'
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
measure() {  # label, command...
  local label="$1" walls=() cpus=() works=() work
  shift
  for ((i = 0; i < runs; i++)); do
    { time "$@" > "$tmp/out" 2> "$tmp/err"; } 2> "$tmp/time" ||
      { echo "startup-times.sh: failed: $*" >&2; cat "$tmp/err" >&2; exit 1; }
    read -r real user sys < "$tmp/time"
    walls+=("$(awk -v r="$real" 'BEGIN { printf "%d", r * 1000 }')")
    cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%d", (u + s) * 1000 }')")
    work=$(grep -oE ' in [0-9.]+ s' "$tmp/err" | tail -1 | grep -oE '[0-9.]+' || true)
    [ -n "$work" ] && works+=("$(awk -v s="$work" 'BEGIN { printf "%d", s * 1000 }')")
  done
  local wall fastest cpu work_ms="" setup=""
  wall=$(printf '%s\n' "${walls[@]}" | median)
  fastest=$(printf '%s\n' "${walls[@]}" | sort -n | head -1)
  cpu=$(printf '%s\n' "${cpus[@]}" | median)
  if [ ${#works[@]} -gt 0 ]; then
    work_ms=$(printf '%s\n' "${works[@]}" | median)
    setup=$((wall - work_ms))
  fi
  echo "| $label | $wall | $fastest | $cpu | $work_ms | $setup |"
}

echo "| command | wall, median ms | wall, fastest ms | CPU, median ms | the tool's own work, ms | set-up, ms |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
for tool in lt-train lt-sample-image lt-complete lt-bench lt-asr; do
  measure "\`$tool --help\`" "$bin/$tool" --help
done
measure "\`lt-sample-image -n 1 -b 1\`" "$bin/lt-sample-image" -n 1 -b 1 -s 2 -o "$tmp/x.png"
measure "\`lt-complete digit.png --keep-rows 27\`" "$bin/lt-complete" "$tmp/digit.png" --keep-rows 27 -s 2 -o "$tmp/c.png"
measure "\`lt-asr\` on 1 s of speech" "$bin/lt-asr" "$tmp/one.wav"
measure "\`lt-asr --stream\` on 1 s of speech" "$bin/lt-asr" --stream "$tmp/one.wav"
measure "\`lt-bench generate -b 1 --steps 8\`" "$bin/lt-bench" generate -a linear -b 1 --steps 8 -q
measure "\`lt-train --eval\` of the shipped MNIST model on 2 images" "$bin/lt-train" --eval -m weights/mnist.safetensors --data "$tmp/data"
