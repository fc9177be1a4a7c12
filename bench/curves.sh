#!/usr/bin/env bash
# bench/curves.sh — the loss curves a restructuring must keep bit for bit.
#
#   bash bench/curves.sh OUT_DIR [BUILD_DIR]
#
# Trains the demo's model (scripts/demo.sh: GPT-2-style, opset 17, dynamic
# batch and sequence, GPT-2's initialization) with the demo's flags, four ways: 1 rank, and on 2 MPI ranks with ZeRO-3, with
# tensor parallelism 2 and with 2 pipeline stages (4 microbatches), and
# writes each run's per-step loss and gradient norm as exact decimal text
# (shortest round-trip, one step per line) to OUT_DIR/<run>.losses. Compare two OUT_DIRs with
# `diff -r`: empty output means bit-identical curves. The text trained on is
# made here from a fixed seed (the demo's own corpus is this repository's
# README, which a change under test changes too).
# Preconditions: scripts/setup.sh has run, BUILD_DIR (default ./build)
# holds a built trc-run, mpirun exists.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "$1")
build=$(realpath "${2:-build}")
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
.venv/bin/python scripts/export_models.py --out "$work" --models gpt2 --opsets 17 --init gpt2 >/dev/null
model="$work/gpt2_op17_dyn.onnx"
.venv/bin/python - "$work/corpus.txt" <<'PY'
import random, sys
words = ("the a of to in is that for it as was with be by on not he this are or his from at "
         "which but have an they you were her she there been one all we their has would when "
         "tensor rank step loss model train shard pipeline stage gradient layer").split()
rng = random.Random(1234)
lines = (" ".join(rng.choice(words) for _ in range(rng.randint(4, 14))) for _ in range(6000))
open(sys.argv[1], "w").write(".\n".join(lines) + ".\n")
PY
flags=(--data "$work/corpus.txt" --batch-size 8 --seq-len 64 --steps 60 --lr 3e-3
       --lr-schedule cosine:warmup=5)
mpi=(mpirun --oversubscribe --allow-run-as-root -np 2)

run() { # name, launcher words..., -- trc-run extra flags...
  local name=$1; shift
  local launcher=()
  while [ "$1" != -- ]; do launcher+=("$1"); shift; done
  shift
  "${launcher[@]}" "$build/tools/trc-run/trc-run" "$model" "${flags[@]}" \
    --metrics "$work/$name.jsonl" "$@" > "$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; echo "curves: run $name failed" >&2; exit 1; }
  .venv/bin/python -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(repr(float(r["loss"])), repr(float(r["grad_norm"])))' "$work/$name.jsonl" > "$out/$name.losses"
  echo "$name: $(wc -l < "$out/$name.losses") steps, last loss $(tail -1 "$out/$name.losses")"
}

run one-rank env --
run zero3-2ranks "${mpi[@]}" -- --config '{"zero_stage": 3}'
run tp2 "${mpi[@]}" -- --config '{"tensor_parallel_degree": 2}'
run pp2 "${mpi[@]}" -- --config '{"pipeline_parallel_degree": 2, "microbatches": 4}'
