#!/usr/bin/env bash
# The paper's Table 1 bits/dim at one equal budget: softmax, lsh-1, lsh-4
# and causal-linear attention trained on MNIST with the same options (so
# the same steps), each then scored on the held-out digits; the table, the
# paper's numbers beside, goes to stdout and OUT/table1.md
# (docs/training.md, "Tables 1 and 2").
#   scripts/table1.sh DATA OUT lt-train options...
# DATA holds MNIST's IDX files (scripts/prepare-mnist.sh). The options go to
# every run and to its evaluation, e.g. --layers 4 --d-model 128 --heads 4
# --batch 16 --lr 5e-4 --schedule cosine --steps 2000 -t 1. OUT receives
# ATTENTION.safetensors, ATTENTION.jsonl and ATTENTION.eval.json per run;
# the runs use --resume, so the same line continues an interrupted table.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: scripts/table1.sh DATA OUT lt-train options..." >&2; exit 2; }
data="$1" out="$2"
shift 2
train="${LT_BIN:-build/bin}/lt-train"
[ -x "$train" ] || { echo "table1.sh: $train not found: build first (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$out"
for attention in softmax lsh-1 lsh-4 causal-linear; do
  echo "table1.sh: $attention" >&2
  "$train" --data "$data" --attention "$attention" -o "$out/$attention.safetensors" --log "$out/$attention.jsonl" \
      --resume "$@" >&2  # its own summary line: a log here, the table is the result
  "$train" --eval -m "$out/$attention.safetensors" --data "$data" -f json "$@" > "$out/$attention.eval.json.part"
  mv "$out/$attention.eval.json.part" "$out/$attention.eval.json"
done
python3 - "$out" <<'EOF' | tee "$out/table1.md"
import json, sys
out = sys.argv[1]
paper = {"softmax": 0.621, "lsh-1": 0.745, "lsh-4": 0.676, "causal-linear": 0.644}
print("| attention | steps | held-out bits/dim | held-out images | paper bits/dim |")
print("| --- | ---: | ---: | ---: | ---: |")
for attention, theirs in paper.items():
    steps = 0
    with open(f"{out}/{attention}.jsonl") as f:
        for line in f:
            event = json.loads(line)
            if event.get("event") == "train":
                steps = max(steps, int(event["step"]))
    with open(f"{out}/{attention}.eval.json") as f:
        ours = json.load(f)
    print(f"| {attention} | {steps} | {ours['bits_per_dim']:.4f} | {ours['images']} | {theirs} |")
EOF
