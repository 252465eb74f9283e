#!/usr/bin/env bash
# The paper's Figure 2: copy-task convergence of softmax, causal-linear and
# Reformer (lsh-1, lsh-4) attention with the paper's settings (sequences of
# up to 128 over 10 symbols, 4 layers of 8 heads x 32, batch 64, RAdam 1e-3
# divided by 10 at step 3,000, 10,000 steps), then the plot and the final
# test accuracies (docs/training.md, "Figure 2").
#   scripts/figure2.sh [OUT] [lt-train options...]
# OUT (default figure2/) receives ATTENTION.safetensors and ATTENTION.jsonl
# per run, figure2.png and accuracies.txt. Options after OUT go to every
# run (-t 2, -d cuda, or --steps 300 to time a few hundred steps); the
# runs use --resume, so the same line continues an interrupted figure.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-figure2}"
[ $# -gt 0 ] && shift
train="${LT_BIN:-build/bin}/lt-train"
[ -x "$train" ] || { echo "figure2.sh: $train not found: build first (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$out"
for attention in softmax causal-linear lsh-1 lsh-4; do
  echo "figure2.sh: $attention" >&2
  "$train" --task copy --attention "$attention" --schedule step --milestones 3000 --epochs 100 \
      -o "$out/$attention.safetensors" --log "$out/$attention.jsonl" --resume "$@"
done
python3 scripts/plot_figure2.py "$out"/{softmax,causal-linear,lsh-1,lsh-4}.jsonl -o "$out/figure2.png" \
    | tee "$out/accuracies.txt"
