#!/usr/bin/env bash
# scripts/gpu.sh — check and time trc on a GPU machine.
#
#   bash scripts/gpu.sh [CUDA_ARTIFACT[:CPU_ARTIFACT] ...]
#
# For a machine with an NVIDIA GPU and driver, the CUDA toolkit, cmake,
# ninja, a C++ compiler, Abseil and xxHash (Debian's libabsl-dev and
# libxxhash-dev: the runtime links them) and Python (PyTorch's environment):
# no MLIR, no package installs. It
#   1. checks that a GPU is visible (nvidia-smi, where installed);
#   2. configures a runtime-only build (-DTRC_ENABLE_COMPILER=OFF: the runtime
#      and trc-run, no MLIR/LLVM/protobuf) in build-gpu/ and builds trc-run
#      and trc-runtime-tests; GoogleTest comes from the system, else it is
#      built from a source tree (TRC_GTEST_SOURCE, ./googletest or
#      /usr/src/googletest: copy the build machine's /usr/src/googletest over);
#   3. runs every runtime test with TRC_REQUIRE_GPU=1, so the GPU tests
#      (runtime/tests/backends/CudaBackendTest.cpp) fail instead of skipping when the
#      GPU is not usable;
#   4. for each artifact argument, runs trc-run on it with --device cuda
#      (CUDA graphs on, then TRC_CUDA_GRAPHS=0) and, when a CPU artifact of the
#      same model is given after a colon, with --device cpu; compares every
#      output with the CPU's; prints a table of times per step (mean and best
#      of TRC_GPU_REPEAT runs after a first one, default 20) and differences.
#      A saved training step (trc-run MODEL.onnx ... --save-artifact DIR, with
#      --device cuda; the cpu one with --device cpu) is trained
#      TRC_GPU_TRAIN_STEPS steps (20) on TRC_GPU_DATA (the shared
#      tinyshakespeare, else generated text) on each device; the per-step
#      losses must agree (fp32 1e-4 relative, bf16/fp16 2%); compute-sanitizer's
#      memcheck runs 2 steps of it and must find no error (TRC_GPU_SANITIZE=0
#      skips it).
# Artifacts are compiled on the build machine (trc-opt MODEL
# --trc-compile="target=cuda" -o ART, and target=cpu for the reference) and
# copied here. Inputs: ART/inputs/<name>.npy where present, else generated
# (floats ~ N(0,1) with a fixed seed; integers and booleans zero, which are
# valid token ids and labels).
#
# Anything missing (GPU, driver, tool, artifact file) or failing ends the
# script with "gpu.sh: error: ..." and a non-zero status; it never prints a
# number it did not measure.
#
# Environment: TRC_GPU_BUILD_DIR (build-gpu), TRC_GPU_REPEAT (20),
# TRC_GPU_JOBS (nproc), TRC_GPU_PYTHON (python3; numpy or torch),
# TRC_GTEST_SOURCE, CUDA_HOME (for cuBLASLt's folder);
# the runtime's own TRC_CUDA_DEVICE, TRC_ALLOW_TF32, TRC_CUBLASLT_LIBRARY.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${TRC_GPU_BUILD_DIR:-$ROOT/build-gpu}
REPEAT=${TRC_GPU_REPEAT:-20}
JOBS=${TRC_GPU_JOBS:-$(nproc)}
PYTHON=${TRC_GPU_PYTHON:-python3}

die() { echo "gpu.sh: error: $*" >&2; exit 1; }
note() { echo "gpu.sh: $*" >&2; }

[[ "$REPEAT" =~ ^[1-9][0-9]*$ ]] || die "TRC_GPU_REPEAT must be a positive integer, got '$REPEAT'"
for tool in cmake ninja "$PYTHON"; do
  command -v "$tool" >/dev/null || die "$tool is not installed (needed: cmake, ninja, a C++ compiler, Python)"
done

# --- 1. a GPU ----------------------------------------------------------------
if command -v nvidia-smi >/dev/null; then
  gpus=$(nvidia-smi -L 2>&1) || die "nvidia-smi failed: $gpus"
  grep -q '^GPU ' <<<"$gpus" || die "nvidia-smi lists no GPU: $gpus"
  note "$gpus"
else
  note "nvidia-smi not found; the GPU tests below decide whether a GPU is usable"
fi

# The artifacts exist before anything is built.
for spec in "$@"; do
  [[ -f "${spec%%:*}/manifest.trc" ]] || die "${spec%%:*}: not an artifact folder (no manifest.trc)"
  if [[ "$spec" == *:* ]]; then
    [[ -f "${spec#*:}/manifest.trc" ]] || die "${spec#*:}: not an artifact folder (no manifest.trc)"
  fi
done

# --- 2. runtime-only build ---------------------------------------------------
mkdir -p "$BUILD"
configure() {
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DTRC_ENABLE_COMPILER=OFF \
    -DCMAKE_BUILD_TYPE=Release "$@" >"$BUILD/configure.log" 2>&1
}
if ! configure; then
  grep -q 'GTest' "$BUILD/configure.log" || { cat "$BUILD/configure.log" >&2; die "cmake failed (log above)"; }
  src=${TRC_GTEST_SOURCE:-}
  if [[ -z "$src" ]]; then
    for d in "$ROOT/googletest" /usr/src/googletest; do
      [[ -f "$d/CMakeLists.txt" ]] && { src=$d; break; }
    done
  fi
  [[ -n "$src" && -f "$src/CMakeLists.txt" ]] ||
    die "GoogleTest is not installed and no source tree was found: set TRC_GTEST_SOURCE to a googletest checkout (e.g. a copy of the build machine's /usr/src/googletest)"
  note "building GoogleTest from $src"
  # gmock too: the runtime tests use its matchers (HasSubstr).
  cmake -S "$src" -B "$BUILD/_gtest-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$BUILD/_gtest" -DBUILD_GMOCK=ON -DINSTALL_GTEST=ON \
    >"$BUILD/gtest.log" 2>&1 || { cat "$BUILD/gtest.log" >&2; die "configuring GoogleTest failed"; }
  ninja -C "$BUILD/_gtest-build" install >>"$BUILD/gtest.log" 2>&1 ||
    { tail -30 "$BUILD/gtest.log" >&2; die "building GoogleTest failed"; }
  configure -DCMAKE_PREFIX_PATH="$BUILD/_gtest" ||
    { cat "$BUILD/configure.log" >&2; die "cmake failed (log above)"; }
fi
grep -E '^-- trc:' "$BUILD/configure.log" >&2 || true
ninja -C "$BUILD" -j"$JOBS" trc-run trc-runtime-tests >"$BUILD/build.log" 2>&1 ||
  { tail -40 "$BUILD/build.log" >&2; die "the build failed (log: $BUILD/build.log)"; }
TRC_RUN=$BUILD/tools/trc-run/trc-run
# One test executable per runtime library (runtime/tests/CMakeLists.txt);
# the GPU tests are in trc-artifact-tests (backend through artifacts) and
# trc-backends-tests (driver, manifests).
TESTS=$BUILD/runtime/tests/trc-artifact-tests
ALL_TESTS=(support formats spec backends comm artifact train)

# cuBLASLt: from the loader's path, else the toolkit's or PyTorch's folder.
if ! ldconfig -p 2>/dev/null | grep -qE 'libcublasLt\.so\.1[23] ' && [[ -z "${TRC_CUBLASLT_LIBRARY:-}" ]]; then
  for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64 \
      "$("$PYTHON" -c 'import nvidia.cublas, os; print(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))' 2>/dev/null || true)"; do
    if [[ -n "$d" ]] && ls "$d"/libcublasLt.so.1[23] >/dev/null 2>&1; then
      export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      note "cuBLASLt from $d"
      break
    fi
  done
fi

# --- 3. tests ------------------------------------------------------------------
probe=$(TRC_REQUIRE_GPU=1 "$TESTS" --gtest_filter=CudaTest.DescribesTheDevice 2>&1) ||
  die "no usable GPU: $(grep -m1 -o 'TRC_REQUIRE_GPU=1 but .*' <<<"$probe" || tail -8 <<<"$probe")"
DEVICE=$(grep -m1 '^\[ CUDA     \]' <<<"$probe" | sed 's/^\[ CUDA     \] //')
note "device: $DEVICE"
# The tests' CPU stand-in for the driver (runtime/tests/FakeCuda.h) must never
# be what is measured here.
[[ "$DEVICE" != *fake* ]] || die "the driver found is the tests' fake libcuda.so.1 (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
set +e
status=0
: >"$BUILD/gpu-tests.log"
for t in "${ALL_TESTS[@]}"; do
  TRC_REQUIRE_GPU=1 "$BUILD/runtime/tests/trc-$t-tests" >>"$BUILD/gpu-tests.log" 2>&1 || status=1
done
set -e
grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]' "$BUILD/gpu-tests.log" >&2 || true
[[ $status -eq 0 ]] || { grep -B2 -A12 'Failure' "$BUILD/gpu-tests.log" | head -80 >&2; die "runtime tests failed (log: $BUILD/gpu-tests.log)"; }
grep -q '^\[       OK \] CudaEndToEnd' "$BUILD/gpu-tests.log" || die "the GPU end-to-end test did not run"

[[ $# -gt 0 ]] || { note "no artifacts given; tests passed on $DEVICE"; exit 0; }

# --- 4. artifacts ----------------------------------------------------------------
WORK=$BUILD/gpu-runs
rm -rf "$WORK"
mkdir -p "$WORK"
cat >"$WORK/npy.py" <<'PY'
# Inputs for an artifact (from its manifest) and output comparison; numpy
# where installed, else torch (PyTorch's environment has one of them).
import ast, os, struct, sys, urllib.parse
try:
    import numpy as np
except ImportError:
    np = None
    import torch

DTYPES = {"f32": "<f4", "f64": "<f8", "f16": "<f2", "bf16": "<f4", "i1": "|b1", "i8": "|i1",
          "i16": "<i2", "i32": "<i4", "i64": "<i8", "u8": "|u1", "u16": "<u2", "u32": "<u4",
          "u64": "<u8"}
TORCH = {"<f4": "float32", "<f8": "float64", "<f2": "float16", "|b1": "bool", "|i1": "int8",
         "<i2": "int16", "<i4": "int32", "<i8": "int64", "|u1": "uint8"}

def inputs(art):
    with open(os.path.join(art, "manifest.trc")) as f:
        for line in f:
            x = line.split()
            if len(x) >= 6 and x[0] == "slot" and x[2] == "input":
                rank = int(x[5])
                yield urllib.parse.unquote(x[3]), x[4], [int(d) for d in x[6:6 + rank]]

def write_npy(path, descr, shape, fill):
    # bf16 inputs are not accepted as .npy by trc-run; refuse them clearly.
    header = repr({"descr": descr, "fortran_order": False, "shape": tuple(shape)})
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    count = 1
    for d in shape:
        count *= d
    if np is not None:
        rng = np.random.default_rng(0)
        data = (rng.standard_normal(count).astype(descr) if fill == "normal"
                else np.zeros(count, dtype=descr)).tobytes()
    else:
        g = torch.Generator().manual_seed(0)
        t = (torch.randn(count, generator=g, dtype=getattr(torch, TORCH[descr])) if fill == "normal"
             else torch.zeros(count, dtype=getattr(torch, TORCH[descr])))
        data = t.numpy().tobytes() if hasattr(t, "numpy") else bytes(t.untyped_storage())
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)

def read_npy(path):
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:6] == b"\x93NUMPY", path
    major = raw[6]
    n, start = (struct.unpack("<H", raw[8:10])[0], 10) if major == 1 else (struct.unpack("<I", raw[8:12])[0], 12)
    h = ast.literal_eval(raw[start:start + n].decode())
    data = raw[start + n:]
    if np is not None:
        return np.frombuffer(data, dtype=h["descr"]).astype(np.float64).reshape(h["shape"])
    return torch.frombuffer(bytearray(data), dtype=getattr(torch, TORCH[h["descr"]])).double()

def cmd_inputs(art, out):
    os.makedirs(out, exist_ok=True)
    for name, dtype, shape in inputs(art):
        given = os.path.join(art, "inputs", name.replace("%", "%25").replace("/", "%2F") + ".npy")
        if os.path.exists(given):
            print(f"{name}={given}")
            continue
        if dtype == "bf16":
            sys.exit(f"input '{name}' is bf16: give it as {given} (f32 .npy files are not bf16)")
        path = os.path.join(out, f"input{len(os.listdir(out))}.npy")
        write_npy(path, DTYPES[dtype], shape, "normal" if dtype in ("f32", "f64", "f16") else "zero")
        print(f"{name}={path}")

def cmd_compare(got_dir, want_dir):
    worst = 0.0
    for f in sorted(os.listdir(want_dir)):
        if not f.endswith(".npy"):
            continue
        if not os.path.exists(os.path.join(got_dir, f)):
            sys.exit(f"output {f} is missing from {got_dir}")
        a, b = read_npy(os.path.join(got_dir, f)), read_npy(os.path.join(want_dir, f))
        if tuple(a.shape) != tuple(b.shape):
            sys.exit(f"output {f}: shape {tuple(a.shape)} vs {tuple(b.shape)}")
        if a.numel() if np is None else a.size:
            diff = float(abs(a - b).max())
            ref = float(abs(b).max())
            if diff != diff:
                sys.exit(f"output {f}: NaN in the difference")
            worst = max(worst, diff / ref if ref > 0 else diff)
    print(f"{worst:.2e}")

if __name__ == "__main__":
    {"inputs": cmd_inputs, "compare": cmd_compare}[sys.argv[1]](*sys.argv[2:])
PY

ROWS=()
# run LABEL ART DEVICE OUT [ENV...]: one trc-run; appends a table row.
run() {
  local label=$1 art=$2 device=$3 out=$4
  shift 4
  local -a args=()
  "$PYTHON" "$WORK/npy.py" inputs "$art" "$out.inputs" >"$out.bindings" ||
    die "$art: cannot make its inputs"
  while IFS= read -r binding; do args+=(--input "$binding"); done <"$out.bindings"
  local log=$out.log
  if ! env "$@" "$TRC_RUN" "$art" --device "$device" ${args[@]+"${args[@]}"} \
      --output-dir "$out" --repeat "$REPEAT" >"$log" 2>&1; then
    cat "$log" >&2
    die "trc-run $art --device $device failed (log above)"
  fi
  local times
  times=$(grep -m1 -E '^trc-run: [0-9]+ runs, mean' "$log") || { cat "$log" >&2; die "$art: trc-run printed no timing"; }
  local mean best
  mean=$(sed -E 's/.*mean ([0-9.]+) ms.*/\1/' <<<"$times")
  best=$(sed -E 's/.*best ([0-9.]+) ms.*/\1/' <<<"$times")
  ROWS+=("$label|$mean|$best")
}

# Training steps saved with `trc-run MODEL.onnx ... --save-artifact DIR`
# (DIR/training.trc): trained TRC_GPU_TRAIN_STEPS steps on cuda (and on the
# cpu step after a colon) on the same data; the per-step losses must agree
# (fp32 1e-4 relative, bf16/fp16 2%); a row per device with ms/step.
DATA=${TRC_GPU_DATA:-$ROOT/../shared/data/tinyshakespeare.txt}
TRAIN_STEPS=${TRC_GPU_TRAIN_STEPS:-20}
[[ "$TRAIN_STEPS" =~ ^[1-9][0-9]*$ ]] || die "TRC_GPU_TRAIN_STEPS must be a positive integer"
train() { # train LABEL STEP DEVICE METRICS
  local field batch seq
  batch=$(awk '$1 == "batch" {print $2}' "$2/training.trc")
  seq=$(awk '$1 == "seq" {print $2}' "$2/training.trc")
  [[ -n "$batch" && -n "$seq" ]] || die "$2/training.trc has no batch or seq"
  if [[ ! -f "$DATA" ]]; then
    DATA=$WORK/data.txt
    "$PYTHON" -c "import random; random.seed(0); open('$DATA','w').write(''.join(random.choice('abcdefghij klmnop\n') for _ in range(2000000)))"
  fi
  "$TRC_RUN" "$2" --device "$3" --data "$DATA" --batch-size "$batch" --seq-len "$seq" \
      --steps "$TRAIN_STEPS" --metrics "$4" >"$4.log" 2>&1 ||
    { cat "$4.log" >&2; die "trc-run $2 --device $3 (training) failed (log above)"; }
  local ms
  ms=$("$PYTHON" -c "import json,statistics; t=[json.loads(l)['step_time_ms'] for l in open('$4')]; t=t[2:] or t; print(f'{statistics.mean(t):.2f}|{min(t):.2f}')")
  ROWS+=("$1|$ms")
}
# memcheck STEP OUT: compute-sanitizer's memcheck over 2 training steps of a
# saved cuda step; any error fails (TRC_GPU_SANITIZE=0 skips it).
memcheck() {
  if [[ "${TRC_GPU_SANITIZE:-1}" == 0 ]]; then ROWS[-1]+="|memcheck skipped"; return; fi
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || true)
  [[ -n "$sanitizer" ]] || sanitizer="${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer"
  [[ -x "$sanitizer" ]] || die "compute-sanitizer not found (PATH, \$CUDA_HOME/bin): needed for the memcheck of $1 (TRC_GPU_SANITIZE=0 skips it)"
  local batch seq
  batch=$(awk '$1 == "batch" {print $2}' "$1/training.trc")
  seq=$(awk '$1 == "seq" {print $2}' "$1/training.trc")
  if ! "$sanitizer" --tool memcheck --error-exitcode 99 "$TRC_RUN" "$1" --device cuda \
      --data "$DATA" --batch-size "$batch" --seq-len "$seq" --steps 2 >"$2" 2>&1; then
    tail -40 "$2" >&2
    die "compute-sanitizer memcheck found errors in $1 (log: $2)"
  fi
  grep -m1 'ERROR SUMMARY' "$2" >&2 || true
  ROWS[-1]+="|memcheck clean"
}

compare_losses() { # compare_losses CUDA.jsonl CPU.jsonl TOLERANCE
  "$PYTHON" - "$@" <<'PY'
import json, sys
a = [json.loads(l)["loss"] for l in open(sys.argv[1])]
b = [json.loads(l)["loss"] for l in open(sys.argv[2])]
tol = float(sys.argv[3])
if len(a) != len(b):
    sys.exit(f"{len(a)} cuda steps against {len(b)} cpu steps")
worst = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b))
if worst != worst or worst > tol:
    sys.exit(f"per-step losses differ by {worst:.2e} relative (tolerance {tol}): "
             f"cuda {a[-1]:.6f}, cpu {b[-1]:.6f} at the last step")
print(f"{worst:.2e}")
PY
}

for spec in "$@"; do
  cuda=${spec%%:*}
  cpu=""
  [[ "$spec" == *:* ]] && cpu=${spec#*:}
  grep -qx 'target cuda' "$cuda/manifest.trc" || die "$cuda: not a target cuda artifact"
  [[ -z "$cpu" ]] || grep -qx 'target cpu' "$cpu/manifest.trc" || die "$cpu: not a target cpu artifact"
  name=$(basename "$cuda")
  out=$WORK/$name
  if [[ -f "$cuda/training.trc" ]]; then
    train "$name|cuda (train step)" "$cuda" cuda "$out.cuda.jsonl"
    memcheck "$cuda" "$out.memcheck.log"
    if [[ -n "$cpu" ]]; then
      [[ -f "$cpu/training.trc" ]] || die "$cpu: not a saved training step (no training.trc)"
      tol=1e-4
      grep -qE '^setting precision (bf16|fp16)' "$cuda/training.trc" && tol=0.02
      train "$name|cpu (train step)" "$cpu" cpu "$out.cpu.jsonl"
      rel=$(compare_losses "$out.cuda.jsonl" "$out.cpu.jsonl" "$tol") || die "$name: $rel"
      ROWS[-2]+=", losses $rel vs cpu"
      ROWS[-1]+="|reference"
    fi
    continue
  fi
  run "$name|cuda (graphs)" "$cuda" cuda "$out.cuda" TRC_CUDA_GRAPHS=1
  run "$name|cuda (no graphs)" "$cuda" cuda "$out.cuda-nographs" TRC_CUDA_GRAPHS=0
  diff=$("$PYTHON" "$WORK/npy.py" compare "$out.cuda-nographs" "$out.cuda") ||
    die "$name: graph and plain outputs differ in kind"
  ROWS[-1]+="|$diff vs graphs"
  if [[ -n "$cpu" ]]; then
    run "$name|cpu" "$cpu" cpu "$out.cpu"
    rel=$("$PYTHON" "$WORK/npy.py" compare "$out.cuda" "$out.cpu") || die "$name: cuda and cpu outputs cannot be compared"
    ROWS[-3]+="|$rel vs cpu"
    ROWS[-1]+="|reference"
  fi
done

echo
echo "device: $DEVICE; $REPEAT timed runs each after a first one; max |diff| / max |reference| over all outputs"
printf '%-28s %-18s %12s %12s  %s\n' artifact device "mean ms" "best ms" "max rel. diff"
for row in "${ROWS[@]}"; do
  IFS='|' read -r art dev mean best diff <<<"$row"
  printf '%-28s %-18s %12s %12s  %s\n' "$art" "$dev" "$mean" "$best" "${diff:--}"
done
