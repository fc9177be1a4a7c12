#!/usr/bin/env bash
# dry_run_test.sh BUILD_DIR — ctest gpu-bundle-dry-run: makes the GPU bundle
# (scripts/gpu-bundle.sh, its runtime-only build beside BUILD_DIR's), unpacks
# it elsewhere and runs its run.sh --dry-run against the tests' fake driver.
# It checks what can be checked without a GPU: the bundle is complete and
# under 30 MiB, its binaries load only glibc from the system, the CUDA tests'
# host side passes from the unpacked folder, both small steps train two steps
# with GPU utilisation counters in their profiles (the fake NVML), nothing is
# reported as measured; and a damaged bundle is refused.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "$1" && pwd)
PYTHON=$ROOT/.venv/bin/python
fail() { echo "dry_run_test.sh: FAILED: $*" >&2; exit 1; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/trc-bundle-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

bash "$ROOT/scripts/gpu-bundle.sh" "$BUILD/trc-gpu-bundle.tar.xz" --main-build "$BUILD"
size=$(stat -c %s "$BUILD/trc-gpu-bundle.tar.xz")
(( size <= 30 * 1024 * 1024 )) || fail "the bundle is $size bytes"
tar -C "$TMP" -xJf "$BUILD/trc-gpu-bundle.tar.xz"
B=$TMP/trc-gpu-bundle

# Only glibc (and the driver, loaded later) may come from the machine.
for f in "$B"/bin/*; do
  outside=$(LD_LIBRARY_PATH="$B/lib" ldd "$f" | awk '$2 == "=>" {print $3}' |
            grep -v "^$B/lib/" | grep -vE '/(libc|libm|libdl|libpthread|librt)\.so' || true)
  [[ -z "$outside" ]] || fail "$(basename "$f") loads from outside the bundle: $outside"
done

"$PYTHON" - "$B/prediction.json" <<'PY' || fail "prediction.json"
import json, sys
p = json.load(open(sys.argv[1]))["precisions"]
for precision in ("bf16", "fp32"):
    s = p[precision]["summary"]
    assert s["kernel_launches"] > 1000 and s["matmul_calls"] > 100, s
    assert all(r["tokens_per_s"] > 0 for r in p[precision]["predicted"])
PY

TRC_GPU_PYTHON=$PYTHON OUT=$TMP/results bash "$B/run.sh" --dry-run
"$PYTHON" - "$TMP/results/results.json" <<'PY' || fail "results.json (above)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["dry_run"] is True and r["bundle"]["complete"], r["bundle"]
ph = r["phases"]
assert set(ph) == {"tests", "parity", "sanitizer", "throughput", "profile"}, ph.keys()
assert all(p["ok"] for p in ph.values()), ph
for t in ("backends", "artifact"):
    assert ph["tests"][t]["tests"] > 10 and ph["tests"][t]["failures"] == 0, ph["tests"][t]
for p in ("fp32", "bf16"):
    assert ph["parity"][p]["steps"] == 2 and "max_rel_diff" not in ph["parity"][p], ph["parity"][p]
    # trc-run's --profile read the fake device's NVML (FakeNvml.cpp).
    assert ph["parity"][p]["gpu_counters"].startswith("present"), ph["parity"][p]
text = json.dumps(r)
for measured in ("tokens_per_s", "max_rel_diff", "peak_gpu_bytes", "mfu", "median_step_ms",
                 "gpu_percent_mean"):
    assert measured not in text, f"a dry run reported '{measured}'"
print("dry run results: ok")
PY

# A damaged bundle is refused before anything runs.
echo garbage >>"$B/steps/small-gpt-fp32/manifest.trc"
if TRC_GPU_PYTHON=$PYTHON OUT=$TMP/bad bash "$B/run.sh" --dry-run 2>"$TMP/bad.err"; then
  fail "run.sh accepted a damaged bundle"
fi
grep -q "error: the bundle is incomplete: steps/small-gpt-fp32/manifest.trc differs" "$TMP/bad.err" ||
  fail "unexpected error for a damaged bundle: $(cat "$TMP/bad.err")"
echo "gpu-bundle dry run: PASS"
