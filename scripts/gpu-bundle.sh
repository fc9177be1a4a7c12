#!/usr/bin/env bash
# scripts/gpu-bundle.sh — builds, on this machine, everything one GPU call needs.
#
#   bash scripts/gpu-bundle.sh OUT.tar.xz [--build-dir DIR] [--main-build DIR]
#
# GPU machines lent to this project have the driver, CUDA 13, PyTorch, cmake
# and ninja, but no MLIR, Abseil, xxHash, GoogleTest or network, about 15
# minutes in all, and take at most 64 MiB along. So nothing is built there:
# this script makes a tar.xz (at most 30 MiB) holding
#   bin/       a runtime-only trc-run and the runtime's CUDA tests
#              (trc-backends-tests, trc-artifact-tests), libstdc++ linked in;
#   lib/       every shared library they load except glibc's and the driver's
#              (Abseil, xxHash, zlib: run.sh puts it on LD_LIBRARY_PATH);
#   fixtures/  the tests' fixture programs (TRC_TEST_FIXTURES points here);
#   fake-cuda/ the tests' CPU stand-in for the driver, cuBLASLt and NVML (dry runs);
#   steps/     saved CUDA training steps (weights=init): GPT-2 124M at batch 8 x
#              1024 in bf16 and fp32, and a small GPT (4 layers, 256 wide,
#              batch 4 x 256) in fp32 and bf16 for parity;
#   reference/ the small GPT's per-step losses, trained here on the CPU with the
#              same seed, data and flags;
#   data/      the token stream every engine reads (tinyshakespeare's bytes, or
#              seeded text where ../shared/data is absent);
#   scripts/export_models.py, bench/train_gpu.py, python/trc/*.py  the same
#              GPT-2 in PyTorch (eager and torch.compile, same batch and data);
#   prediction.json  GPT-2 124M's step priced kernel by kernel on H100/H200
#              rates (bench/predict_gpu_step.py), printed beside the measurement;
#   run.sh, device_run.py, bundle.json  the one command to run there, and what
#              the bundle holds (files, sizes, the settings of each step).
# On the GPU machine: `tar xJf OUT.tar.xz && bash trc-gpu-bundle/run.sh`
# (README "Running on a GPU"). `bash run.sh --dry-run` runs its logic here
# against the fake driver (ctest gpu-bundle-dry-run).
#
# Preconditions: scripts/setup.sh has run (the main build's trc-run compiles
# the steps; .venv's PyTorch exports the models). Each failure ends with
# "gpu-bundle.sh: error: ..." and a non-zero status.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
die() { echo "gpu-bundle.sh: error: $*" >&2; exit 1; }
note() { echo "gpu-bundle.sh: $*" >&2; }

OUT_FILE=""
MAIN_BUILD=$ROOT/build
BUILD=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) [[ $# -ge 2 ]] || die "--build-dir needs a folder"; BUILD=$2; shift 2 ;;
    --main-build) [[ $# -ge 2 ]] || die "--main-build needs a folder"; MAIN_BUILD=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown flag '$1' (usage: gpu-bundle.sh OUT.tar.xz [--build-dir DIR] [--main-build DIR])" ;;
    *) [[ -z "$OUT_FILE" ]] || die "one output file only, got '$OUT_FILE' and '$1'"; OUT_FILE=$1; shift ;;
  esac
done
[[ -n "$OUT_FILE" ]] || die "usage: gpu-bundle.sh OUT.tar.xz [--build-dir DIR] [--main-build DIR]"
# The runtime-only build lives beside the main one (the main build, with the
# compiler, saves the steps).
BUILD=${BUILD:-$MAIN_BUILD/gpu-bundle}
[[ "$OUT_FILE" == *.tar.xz ]] || die "the output '$OUT_FILE' must end in .tar.xz"
[[ -d "$(dirname "$OUT_FILE")" ]] || die "the output's folder $(dirname "$OUT_FILE") does not exist"
MAX_BYTES=$((30 * 1024 * 1024))
PYTHON=$ROOT/.venv/bin/python
TRC_RUN=$MAIN_BUILD/tools/trc-run/trc-run
DATA=$ROOT/../shared/data/tinyshakespeare.txt
[[ -x "$PYTHON" ]] || die "no $PYTHON (run scripts/setup.sh first)"
[[ -x "$TRC_RUN" ]] || die "no $TRC_RUN with the compiler (run scripts/build.sh first)"

# --- 1. runtime-only, portable binaries -----------------------------------------
# ccache keys on paths relative to the checkout (as scripts/build.sh does).
export CCACHE_BASEDIR=$ROOT
LINK_FLAGS="-static-libstdc++ -static-libgcc"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTRC_ENABLE_COMPILER=OFF \
    -DTRC_USE_OPENBLAS=OFF -DTRC_USE_LIBOMP=OFF \
    "-DCMAKE_EXE_LINKER_FLAGS=$LINK_FLAGS" "-DCMAKE_SHARED_LINKER_FLAGS=$LINK_FLAGS" \
    >"$BUILD.configure.log" 2>&1 || { tail -30 "$BUILD.configure.log" >&2; die "configuring $BUILD failed"; }
fi
note "building the runtime-only trc-run and CUDA tests in $BUILD"
ninja -C "$BUILD" -j"$(nproc)" trc-run trc-backends-tests trc-artifact-tests \
  trc-fake-cuda trc-fake-cublaslt trc-fake-nvml >"$BUILD.build.log" 2>&1 ||
  { tail -30 "$BUILD.build.log" >&2; die "building $BUILD failed (log: $BUILD.build.log)"; }

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/trc-gpu-bundle.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
B=$STAGE/trc-gpu-bundle
mkdir -p "$B"/{bin,lib,fixtures,fake-cuda,steps,reference,data,scripts,bench}
cp "$BUILD/tools/trc-run/trc-run" "$BUILD/runtime/tests/trc-backends-tests" \
   "$BUILD/runtime/tests/trc-artifact-tests" "$B/bin/"
cp "$BUILD"/runtime/tests/libtrc-test-*.so "$B/fixtures/"
cp -L "$BUILD"/runtime/tests/fake-cuda/libcuda.so.1 "$BUILD"/runtime/tests/fake-cuda/libcublasLt.so.13 \
   "$BUILD"/runtime/tests/fake-cuda/libnvidia-ml.so.1 "$B/fake-cuda/"
cp -L "$BUILD"/runtime/tests/fake-cuda/libnvidia-ml.so.1 "$B/fixtures/"
# The loader's view of each binary: everything but glibc and the driver goes
# along (a newer Linux has a newer glibc; the driver is the machine's own).
for f in "$B"/bin/* "$B"/fixtures/*.so; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libcuda.so.*) ;;
    *) cp -L "$lib" "$B/lib/" ;;
  esac
done
strip --strip-unneeded "$B"/bin/* "$B"/lib/*.so* 2>/dev/null || true

# --- 2. the steps and the CPU reference -------------------------------------------
WORK=$STAGE/work
mkdir -p "$WORK"
if [[ -f "$DATA" ]]; then
  cp "$DATA" "$B/data/tokens.txt"
else # a checkout without ../shared (CI elsewhere): 1 MiB of seeded text
  note "no $DATA; the bundle trains on generated text"
  "$PYTHON" -c 'import random, sys; r = random.Random(0); w = "the of and to a in that is was he for it with as his on be at by".split()
sys.stdout.write(" ".join(r.choice(w) for _ in range(300000))[:1 << 20])' >"$B/data/tokens.txt"
fi
note "exporting GPT-2 124M and the small GPT (PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)'))"
"$PYTHON" - "$WORK" <<'EOF' || die "exporting the models failed"
import sys
sys.path.insert(0, "scripts")
import export_models as em
for size, name in (("gpt2-124m", "gpt2-124m"), ("bench", "small-gpt")):
    em.configure(size)
    em.export(em.build("gpt2", init="gpt2"), f"{sys.argv[1]}/{name}.onnx", 17, dynamic=True)
EOF
# Every engine trains with these (compile-time flags go into the step; run
# time ones are run.sh's, recorded in bundle.json for it to read).
COMMON=(--init-weights --attention fused)
save_step() { # NAME MODEL DEVICE PRECISION BATCH SEQ OUT_DIR
  "$TRC_RUN" "$WORK/$2.onnx" "${COMMON[@]}" --device "$3" --precision "$4" \
    --batch-size "$5" --seq-len "$6" --save-artifact "$7" >"$WORK/$1.log" 2>&1 ||
    { tail -20 "$WORK/$1.log" >&2; die "saving the step $1 failed"; }
}
note "saving the training steps"
save_step gpt2-124m-bf16 gpt2-124m cuda bf16 8 1024 "$B/steps/gpt2-124m-bf16"
save_step gpt2-124m-fp32 gpt2-124m cuda fp32 8 1024 "$B/steps/gpt2-124m-fp32"
PARITY_STEPS=20
PARITY_LR=3e-4
for p in fp32 bf16; do
  save_step "small-$p" small-gpt cuda "$p" 4 256 "$B/steps/small-gpt-$p"
  save_step "small-$p-cpu" small-gpt cpu "$p" 4 256 "$WORK/small-gpt-$p-cpu"
  note "training the small GPT ($p) on the CPU for the reference losses"
  "$TRC_RUN" "$WORK/small-gpt-$p-cpu" --device cpu --data "$B/data/tokens.txt" \
    --batch-size 4 --seq-len 256 --steps "$PARITY_STEPS" --lr "$PARITY_LR" \
    --metrics "$WORK/small-$p.jsonl" >"$WORK/small-$p-train.log" 2>&1 ||
    { tail -20 "$WORK/small-$p-train.log" >&2; die "the CPU reference run ($p) failed"; }
  "$PYTHON" - "$WORK/small-$p.jsonl" "$B/reference/small-gpt-$p.json" "$p" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
json.dump({"step": "small-gpt-" + sys.argv[3], "device": "cpu",
           "losses": [r["loss"] for r in rows]}, open(sys.argv[2], "w"), indent=1)
EOF
done

# The prediction the measurement is held against (bench/predict_gpu_step.py).
"$PYTHON" bench/predict_gpu_step.py --onnx "$WORK/gpt2-124m.onnx" \
  --trc-opt "$MAIN_BUILD/tools/trc-opt/trc-opt" --json "$B/prediction.json" >"$WORK/predict.log" 2>&1 ||
  { tail -20 "$WORK/predict.log" >&2; die "predicting the GPT-2 124M step failed"; }

# --- 3. the PyTorch side and the driver --------------------------------------------
cp scripts/export_models.py "$B/scripts/"
# export_models.py imports trc.onnx_export (pure Python; the extension
# stays unloaded): the package's Python half rides along.
mkdir -p "$B/python/trc" && cp python/trc/*.py "$B/python/trc/"
cp bench/train_gpu.py "$B/bench/"
cp scripts/gpu_bundle/run.sh scripts/gpu_bundle/device_run.py "$B/"
"$PYTHON" - "$B" "$PARITY_STEPS" "$PARITY_LR" "$(git rev-parse HEAD 2>/dev/null || echo unknown)" <<'EOF'
import hashlib, json, os, sys
root, steps, lr, commit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
files = {}
for folder, _, names in os.walk(root):
    for n in sorted(names):
        path = os.path.join(folder, n)
        files[os.path.relpath(path, root)] = {
            "bytes": os.path.getsize(path),
            "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest()}
json.dump({
    "commit": commit,
    "parity": {"steps": steps, "lr": lr, "batch": 4, "seq": 256,
               "tolerance": {"fp32": 1e-4, "bf16": 2e-2}},
    "throughput": {"model": "gpt2-124m", "batch": 8, "seq": 1024, "lr": 1e-4},
    "files": files}, open(os.path.join(root, "bundle.json"), "w"), indent=1, sort_keys=True)
EOF

# --- 4. the archive ------------------------------------------------------------------
tar -C "$STAGE" -cf - trc-gpu-bundle | xz -6 -T2 >"$OUT_FILE.partial"
size=$(stat -c %s "$OUT_FILE.partial")
if (( size > MAX_BYTES )); then
  rm -f "$OUT_FILE.partial"
  die "the bundle is $size bytes, over the $MAX_BYTES (30 MiB) a device call can afford"
fi
mv "$OUT_FILE.partial" "$OUT_FILE"
note "wrote $OUT_FILE ($((size / 1024)) KiB); on the GPU machine: tar xJf $(basename "$OUT_FILE") && bash trc-gpu-bundle/run.sh"
