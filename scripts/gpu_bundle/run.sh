#!/usr/bin/env bash
# run.sh — the one command to run on a GPU machine, from an unpacked bundle
# (scripts/gpu-bundle.sh made it on the build machine):
#
#   tar xJf trc-gpu-bundle.tar.xz && bash trc-gpu-bundle/run.sh [--dry-run] [--budget-s S]
#
# Runs the runtime's CUDA tests, the small GPT's CUDA-vs-CPU loss parity,
# compute-sanitizer memcheck and GPT-2 124M tokens/s and peak memory for trc
# and PyTorch (device_run.py says how), writing results.json and log.txt to
# $OUT when set (the device tool's folder), else ./trc-gpu-results. Python:
# $TRC_GPU_PYTHON, else python3 (PyTorch's, on the GPU machines).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RESULTS=${OUT:-$PWD/trc-gpu-results}
PYTHON=${TRC_GPU_PYTHON:-python3}
command -v "$PYTHON" >/dev/null || { echo "run.sh: error: no $PYTHON (set TRC_GPU_PYTHON)" >&2; exit 1; }
exec "$PYTHON" "$HERE/device_run.py" --out "$RESULTS" "$@"
