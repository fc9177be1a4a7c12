#!/usr/bin/env bash
# scripts/demo.sh — the built-in default job: sets up, builds, exports a small
# GPT-2-style model with PyTorch (loss inside, dynamic batch and sequence) and
# compiles it with trc-opt to static-shaped trc IR for batch 8 x sequence 64,
# printing the op census and the first lines of the IR.
# (Training with trc-run comes with the training issue; see README.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
.venv/bin/python scripts/export_models.py --out "$out" --models gpt2 --opsets 17 >/dev/null
model="$out/gpt2_op17_dyn.onnx"
echo "== trc-opt $model --dim batch=8,sequence=64"
build/tools/trc-opt/trc-opt "$model" --dim batch=8,sequence=64 \
  --test-trc-print-op-stats --mlir-elide-resource-strings-if-larger=32 -o "$out/gpt2.mlir"
echo "== imported IR ($(wc -l < "$out/gpt2.mlir") lines), first lines of @main:"
grep -A12 "func.func @main" "$out/gpt2.mlir"
