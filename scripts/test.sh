#!/usr/bin/env bash
# scripts/test.sh — sets up the machine, builds trc and runs every test:
# the lit suite (FileCheck: dialect, passes, import, conformance) and the
# GoogleTest unit tests, both through ctest (its last line is the summary).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ninja -C build trc-test-models
ctest --test-dir build --output-on-failure
