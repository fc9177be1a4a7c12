#!/usr/bin/env bash
# scripts/sst2_example.sh — the project's seed job: a small GPT-2-style
# sequence classifier trained on GLUE SST-2 for one epoch on the CPU with
# trc-run, reporting train_loss, train_samples_per_second, train_runtime and
# the dev set's loss and accuracy.
#
#   bash scripts/sst2_example.sh [OUT_DIR]        (default: build/sst2)
#
# Steps: setup and build trc-run; scripts/prepare_sst2.py tokenizes
# ../shared/data/sst2 (byte-level BPE of 4096 tokens trained on the train
# split with the `tokenizers` package, rows of 64 tokens padded with 0) into
# OUT_DIR/{train,dev,test}.npz; scripts/export_models.py exports
# GPT2Classifier (2 layers, width 64, 4 heads, GPT-2's N(0, 0.02) init:
# last non-pad token -> linear head -> cross-entropy over 2 classes; inputs
# input_ids and labels, outputs loss and logits); trc-run trains one epoch
# (ceil(N / batch) steps, shuffled, AdamW, linear decay after a warm-up)
# and evaluates on dev every EVAL_EVERY steps and at the end. The model is
# trained from scratch: no pretrained GPT-2 weights are fetched.
# Environment: SST2_DATA (the .tsv folder), BATCH (32), LR (1e-3),
# EVAL_EVERY (500), SEED (1). Precondition: ../shared/data/sst2 (or
# SST2_DATA) exists.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/sst2}
data=${SST2_DATA:-../shared/data/sst2}
batch=${BATCH:-32}
lr=${LR:-1e-3}
eval_every=${EVAL_EVERY:-500}
seed=${SEED:-1}
if [ ! -f "$data/train.tsv" ]; then
  echo "sst2_example.sh: error: $data/train.tsv not found (set SST2_DATA)" >&2
  exit 1
fi
bash scripts/setup.sh
export CCACHE_BASEDIR="$PWD"
[ -f build/build.ninja ] || cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release
ninja -C build trc-run
mkdir -p "$out"
echo "== tokenizing $data into $out"
.venv/bin/python scripts/prepare_sst2.py --data "$data" --out "$out" --vocab 4096 --seq 64
echo "== exporting the classifier"
.venv/bin/python scripts/export_models.py --out "$out" --models gpt2cls --opsets 17 \
  --init gpt2 --vocab 4096
rows=$(.venv/bin/python -c "import numpy as np; print(len(np.load('$out/train.npz')['labels']))")
steps=$(( (rows + batch - 1) / batch ))
echo "== trc-run: one epoch, $rows rows, $steps steps of $batch"
build/tools/trc-run/trc-run "$out/gpt2cls_op17_dyn.onnx" --device cpu \
  --data "$out/train.npz" --batch-size "$batch" --steps "$steps" --shuffle --seed "$seed" \
  --optimizer adamw --lr "$lr" --lr-schedule linear:warmup=100 \
  --eval-data "$out/dev.npz" --eval-every "$eval_every" --log-every 250 \
  --metrics "$out/metrics.jsonl" 2>&1 | tee "$out/train.log"
.venv/bin/python - "$out/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
runtime = sum(r["step_time_ms"] for r in rows) / 1000
samples = sum(r["samples_per_second"] * r["step_time_ms"] / 1000 for r in rows)
final = rows[-1]
print(json.dumps({"train_loss": round(sum(r["loss"] for r in rows) / len(rows), 4),
                  "train_runtime": round(runtime, 1),
                  "train_samples_per_second": round(samples / runtime, 1),
                  "eval_loss": round(final["eval_loss"], 4),
                  "eval_accuracy": round(final["eval_accuracy"], 4), "steps": len(rows)}))
PY
