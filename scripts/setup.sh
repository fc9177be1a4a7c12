#!/usr/bin/env bash
# scripts/setup.sh — installs everything trc needs on a fresh Debian 12 machine.
#
# Idempotent: packages already present are skipped by apt, and the Python
# virtual environment (.venv, with Debian's site packages visible so that
# python3-torch is importable) is only created once.
# Preconditions: root (or sudo), Debian's package lists and PyPI reachable.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

DEBIAN_PACKAGES=(
  # compiler toolchain and build
  cmake ninja-build ccache g++ pkg-config
  # LLVM / MLIR 22 (mlir-tblgen, FileCheck, lit, NVPTX backend)
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # clang for the libFuzzer + sanitizer build of the importer fuzzer
  clang-22 libclang-rt-22-dev lld-22
  # LLVM's OpenMP runtime: compiled CPU programs run parallel loops on it
  libomp-22-dev
  # ONNX, protobuf, Abseil, GoogleTest
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler libabsl-dev
  libgtest-dev libgmock-dev
  # XXH3 checksums of artifacts and checkpoints (runtime/formats/Checksum.h)
  libxxhash-dev
  # distributed and BLAS
  libopenmpi-dev openmpi-bin libopenblas-dev libopenblas0-pthread
  # a one-node Slurm cluster for the srun tests (scripts/slurm_local.sh)
  slurmctld slurmd slurm-client munge
  # Python: reference trainer/exporter and test tools; pybind11 and the
  # headers for the package's extension (python/)
  python3 python3-venv python3-numpy python3-torch python3-dev pybind11-dev
  # torchvision 0.14 (matches torch 1.13): ResNet-18 of scripts/export_hf.py
  python3-torchvision
  # zlib1g-dev: also the runtime's inflate of np.savez_compressed .npz data
  zlib1g-dev libzstd-dev libedit-dev libxml2-dev libcurl4-openssl-dev
)

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Python virtual environment: Debian's python3 so python3-torch is visible.
if [ ! -x .venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
# safetensors: the runtime tests check trc's safetensors files against it.
# tokenizers: scripts/prepare_sst2.py trains its byte-level BPE with it.
# tensorboard: the tests read trc-run --tensorboard's event files with its
# own reader (event_accumulator).
# pytest: the Python package's tests (python/tests, run by ctest);
# accelerate 0.25 (the line transformers 4.36 was released with):
# transformers.Trainer needs it, and trc.hf.Trainer's tests compare with it.
# transformers 4.36.2: the last line that works with Debian's torch 1.13;
# scripts/export_hf.py builds its model families from its own classes. pip
# resolves tokenizers 0.15 and huggingface_hub 0.36 for it (torch is left
# alone: transformers does not require it).
PY_PACKAGES=(lit onnx onnxruntime safetensors tokenizers transformers==4.36.2 tensorboard pytest accelerate==0.25.0)
if ! .venv/bin/python -c "import lit, onnx, onnxruntime, safetensors, tokenizers, transformers, tensorboard, pytest, accelerate" 2>/dev/null; then
  # numpy comes from Debian (python3-numpy) so that python3-torch keeps working.
  .venv/bin/pip install -q --disable-pip-version-check "${PY_PACKAGES[@]}" "numpy<2"
fi
echo "setup: done"
