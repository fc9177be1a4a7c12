#!/usr/bin/env bash
# scripts/fuzz_runtime.sh — fuzzes the runtime's file readers with libFuzzer + ASan + UBSan.
#
#   scripts/fuzz_runtime.sh [SECONDS [TARGET...]]   (per target; default 30, all targets)
#
# 1. configures and builds build-fuzz-runtime/ (clang-22, runtime-only,
#    -DTRC_ENABLE_FUZZER=ON, RelWithDebInfo): trc-fuzz-npy, -npz, -safetensors,
#    -json, -manifest, -plan, -training-info, -bundle, -checkpoint, -tokens,
#    -cluster, -profile
#    (runtime/fuzz/RuntimeFuzzers.cpp);
# 2. writes valid seed files for each (numpy's .npy/.npz, the safetensors
#    package's files, JSON and plan specs, a manifest, training.trc, a bundle
#    and a checkpoint's state.json made by this checkout's trc-opt/trc-run
#    when build/ has them);
# 3. runs each target SECONDS with one job and prints one line per target:
#    "npy: 1377242 runs in 16 s, no failure". A crash, leak, UB report,
#    timeout or out-of-memory input stops that target, is saved in
#    $WORK/artifacts/ and makes the script exit 1 at the end.
# Reproduce an input with build-fuzz-runtime/runtime/fuzz/trc-fuzz-NAME FILE.
# Preconditions: scripts/setup.sh has run (clang-22, libclang-rt-22-dev, .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_PER_TARGET=${1:-30}
[[ "$SECONDS_PER_TARGET" =~ ^[1-9][0-9]*$ ]] ||
  { echo "fuzz_runtime.sh: error: SECONDS must be a positive integer, got '$SECONDS_PER_TARGET'" >&2; exit 1; }
PY=$ROOT/.venv/bin/python
BUILD=$ROOT/build-fuzz-runtime
TARGETS=(npy npz safetensors json manifest plan training-info bundle checkpoint tokens cluster
         profile)
if [[ $# -gt 1 ]]; then
  shift
  for t in "$@"; do
    [[ " ${TARGETS[*]} " == *" $t "* ]] ||
      { echo "fuzz_runtime.sh: error: unknown target '$t' (${TARGETS[*]})" >&2; exit 1; }
  done
  TARGETS=("$@")
fi

# --- 1. build -----------------------------------------------------------------
export CCACHE_BASEDIR=$ROOT
CC=clang-22 CXX=clang++-22 nice -n 10 cmake -G Ninja -S "$ROOT" -B "$BUILD" \
  -DTRC_ENABLE_FUZZER=ON -DTRC_ENABLE_COMPILER=OFF -DTRC_USE_OPENBLAS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
nice -n 10 ninja -C "$BUILD" -j"$(nproc)" trc-runtime-fuzzers >"$BUILD/fuzzers-build.log" 2>&1 ||
  { tail -30 "$BUILD/fuzzers-build.log" >&2; exit 1; }

# --- 2. seeds ------------------------------------------------------------------
WORK=${FUZZ_WORK:-$(mktemp -d /tmp/trc-fuzz-runtime.XXXXXX)}
echo "fuzz work folder: $WORK"
mkdir -p "$WORK/artifacts"
for t in npy npz safetensors json manifest plan training-info bundle checkpoint tokens cluster \
    profile; do
  mkdir -p "$WORK/seeds/$t"
done
"$PY" - "$WORK/seeds" <<'EOF'
import json, os, sys
import numpy as np
out = sys.argv[1]
def put(target, name, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(os.path.join(out, target, name), mode) as f:
        f.write(data)
for i, a in enumerate([np.arange(12, dtype=np.float32).reshape(3, 4),
                       np.arange(5, dtype=np.int64), np.zeros((2, 2), np.float16),
                       np.array(3.5), np.ones((2, 3), dtype=np.bool_)]):
    np.save(os.path.join(out, "npy", f"{i}.npy"), a)
np.savez(os.path.join(out, "npz", "stored.npz"), input_ids=np.arange(8).reshape(2, 4),
         labels=np.array([0, 1]))
np.savez_compressed(os.path.join(out, "npz", "deflated.npz"), x=np.ones((4, 4), np.float32))
try:
    from safetensors.numpy import save_file
    save_file({"w": np.ones((2, 3), np.float32), "b": np.arange(3, dtype=np.int64)},
              os.path.join(out, "safetensors", "a.safetensors"), metadata={"k": "v"})
except ImportError:
    pass
put("json", "a.json", json.dumps({"a": [1, 2.5e-3, -4], "b": {"c": None, "d": "x\u00e9"},
                                  "e": True}))
put("json", "b.json", "[[[]], {}, \"\\u0041\", 1e308, -0.0]")
for i, plan in enumerate([{"zero_stage": 3}, {"tensor_parallel_degree": 2, "sequence_parallel": True},
                          {"pipeline_parallel_degree": 2, "microbatches": 4,
                           "pipeline_schedule": "1f1b"},
                          {"hybrid_shard_degree": 2, "bucket_cap_mb": 25}]):
    put("plan", f"{i}.json", json.dumps(plan))
put("training-info", "training.trc",
    "trc-training 1\ninputs input_ids\ntargets targets\ntargets_window next\nvocab 256\n"
    "batch 4\nseq 64\ngrad_accum 1\nranks 1\nparallel \nsetting precision fp32\n")
put("manifest", "m.trc",
    "trc-artifact 1\ntarget cpu\nprogram program.so 10 xxh3:0123456789abcdef\n"
    "entry trc_entry\narena 64\nweights weights.bin 24 xxh3:0123456789abcdef\n"
    "slot 0 input x f32 2 4 3\nslot 1 param W f32 2 3 2 0 trainable\n"
    "slot 2 output y f32 2 4 2\nend\n")
# llm.c token files (a header of 256 int32: magic, version, count) and text.
header = np.zeros(256, np.int32)
header[:3] = [20240520, 1, 40]
put("tokens", "tokens.bin", header.tobytes() + (np.arange(40, dtype=np.uint16) * 7).tobytes())
put("tokens", "text.txt", "to be or not to be, that is the question. " * 3)
put("cluster", "inline.txt", "a100-80gb:32")
put("cluster", "c.json", json.dumps({"device": "h100", "nodes": 2, "gpus_per_node": 8,
                                     "inter_node_bandwidth_gbs": 50}))
EOF
cp "$ROOT"/test/Plan/Inputs/*profile*.json "$WORK/seeds/profile/"
cp "$ROOT"/test/Plan/Inputs/h200-2x4.json "$WORK/seeds/cluster/"
# Real files from this checkout's tools, when built.
TRC_OPT=$ROOT/build/tools/trc-opt/trc-opt
TRC_RUN=$ROOT/build/tools/trc-run/trc-run
MODEL=$ROOT/build/test/models/gpt2_op17_dyn.onnx
if [[ -x "$TRC_OPT" && -x "$TRC_RUN" && -f "$MODEL" ]]; then
  "$TRC_OPT" "$MODEL" --dim batch=2,sequence=8 --trc-compile="target=cpu" -o "$WORK/art" >/dev/null 2>&1 &&
    cp "$WORK/art/manifest.trc" "$WORK/seeds/manifest/real.trc" || true
  "$TRC_OPT" "$MODEL" --dim batch=2,sequence=8 --trc-compile="target=cpu" -o "$WORK/art.trc" >/dev/null 2>&1 &&
    cp "$WORK/art.trc" "$WORK/seeds/bundle/real.trc" || true
  printf 'to be or not to be, that is the question. %.0s' {1..40} >"$WORK/data.txt"
  if "$TRC_RUN" "$MODEL" --data "$WORK/data.txt" --batch-size 2 --seq-len 16 --steps 1 \
      --save-artifact "$WORK/step" >/dev/null 2>&1; then
    cp "$WORK/step/training.trc" "$WORK/seeds/training-info/real.trc"
  fi
  "$TRC_RUN" "$MODEL" --data "$WORK/data.txt" --batch-size 2 --seq-len 16 --steps 1 \
    --checkpoint-dir "$WORK/ckpt" --checkpoint-every 1 >/dev/null 2>&1 &&
    cp "$WORK/ckpt/step-1/state.json" "$WORK/seeds/checkpoint/state.json" || true
fi

# --- 3. run ----------------------------------------------------------------------
failed=0
for t in "${TARGETS[@]}"; do
  mkdir -p "$WORK/corpus/$t"
  log=$WORK/$t.log
  set +e
  (cd "$WORK" && nice -n 10 "$BUILD/runtime/fuzz/trc-fuzz-$t" "$WORK/corpus/$t" "$WORK/seeds/$t" \
      -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$WORK/artifacts/$t-" >"$log" 2>&1)
  status=$?
  set -e
  done_line=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | tail -1)
  if [[ $status -eq 0 && -n "$done_line" ]]; then
    read -r _ runs _ _ secs _ <<<"$done_line"
    echo "$t: $runs runs in $secs s, no failure"
  else
    failed=1
    echo "$t: FAILED (status $status): $(grep -m1 -E 'ERROR|runtime error|SUMMARY' "$log" || tail -1 "$log")"
  fi
done
exit $failed
