#!/usr/bin/env bash
# scripts/demo.sh — the built-in default job: sets up, builds, exports a small
# GPT-2-style model with PyTorch (loss inside, dynamic batch and sequence),
# imports it with trc-opt for batch 8 x sequence 64 (op census), compiles it
# for the CPU and runs it with trc-run on a text sample, comparing the loss
# with onnxruntime, then trains it with trc-run (AdamW, 60 steps) on text the
# machine has after setup (this repository's README and sources), showing
# the loss fall and the throughput, and, where mpirun exists, the same steps
# on 2 ranks under ZeRO-3 with the largest difference from the 1-rank curve.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# GPT-2's own initialization (N(0, 0.02)): the loss starts near ln(256) = 5.5.
.venv/bin/python scripts/export_models.py --out "$out" --models gpt2 --opsets 17 --init gpt2 >/dev/null
model="$out/gpt2_op17_dyn.onnx"
echo "== trc-opt $model --dim batch=8,sequence=64"
build/tools/trc-opt/trc-opt "$model" --dim batch=8,sequence=64 \
  --test-trc-print-op-stats --mlir-elide-resource-strings-if-larger=32 -o "$out/gpt2.mlir"
echo "== imported IR ($(wc -l < "$out/gpt2.mlir") lines), first lines of @main:"
grep -A6 "func.func @main" "$out/gpt2.mlir"
echo "== trc-opt --trc-compile=target=cpu"
build/tools/trc-opt/trc-opt "$model" --dim batch=8,sequence=64 --trc-compile=target=cpu -o "$out/artifact"
echo "== trc-run on bytes of README.md (next-byte prediction loss), against onnxruntime"
.venv/bin/python - "$out" <<'PY'
import sys, numpy as np
out = sys.argv[1]
data = np.frombuffer(open("README.md", "rb").read()[: 8 * 64 + 1], dtype=np.uint8).astype(np.int64)
np.save(f"{out}/ids.npy", data[:-1].reshape(8, 64))
np.save(f"{out}/targets.npy", data[1:].reshape(8, 64))
PY
build/tools/trc-run/trc-run "$out/artifact" --input input_ids="$out/ids.npy" \
  --input targets="$out/targets.npy" --output-dir "$out/result" --repeat 20
.venv/bin/python - "$out" "$model" <<'PY'
import sys, numpy as np, onnxruntime as ort
out, model = sys.argv[1], sys.argv[2]
feeds = {"input_ids": np.load(f"{out}/ids.npy"), "targets": np.load(f"{out}/targets.npy")}
want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)[0]
got = np.load(f"{out}/result/loss.npy")
print(f"loss: trc {float(got):.6f}, onnxruntime {float(want):.6f}")
PY
echo "== trc-run training: 60 AdamW steps on this repository's text (batch 8 x 64 bytes)"
cat README.md docs/*.md dialects/Trc/*.td > "$out/corpus.txt"
build/tools/trc-run/trc-run "$model" --data "$out/corpus.txt" --batch-size 8 --seq-len 64 \
  --steps 60 --lr 3e-3 --lr-schedule cosine:warmup=5 --metrics "$out/metrics.jsonl"
.venv/bin/python - "$out/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
for r in rows[::10] + [rows[-1]]:
    print(f"step {r['step']:3d}  loss {r['loss']:8.4f}  lr {r['learning_rate']:.2e}  "
          f"grad_norm {r['grad_norm']:7.3f}  {r['tokens_per_second']:8.0f} tokens/s")
PY
if command -v mpirun > /dev/null; then
  echo "== the same 60 steps on 2 ranks (mpirun, ZeRO-3: parameters, gradients and optimizer state sharded)"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np 2 \
    build/tools/trc-run/trc-run "$model" --data "$out/corpus.txt" --batch-size 8 --seq-len 64 \
    --steps 60 --lr 3e-3 --lr-schedule cosine:warmup=5 --metrics "$out/metrics-2.jsonl" \
    --config '{"zero_stage": 3}' 2>&1 | grep -v '^\s*$' | grep -v 'step [0-9]*/' || true
  .venv/bin/python - "$out/metrics.jsonl" "$out/metrics-2.jsonl" <<'PY'
import json, sys
one, two = ([json.loads(line)["loss"] for line in open(p)] for p in sys.argv[1:])
worst = max(abs(a - b) / abs(a) for a, b in zip(one, two))
print(f"2 ranks vs 1: {len(two)} steps, final loss {two[-1]:.4f}, "
      f"largest relative difference {worst:.1e}")
PY
fi
