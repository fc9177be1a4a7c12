#!/usr/bin/env bash
# scripts/build.sh — configures (once) and builds trc into ./build with Ninja.
# Precondition: scripts/setup.sh has run. Uses every core; ccache when present.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on paths relative to the checkout, so a fresh clone elsewhere
# reuses what any other checkout on this machine compiled.
export CCACHE_BASEDIR="$PWD"
if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release
fi
ninja -C build -j"$(nproc)"
