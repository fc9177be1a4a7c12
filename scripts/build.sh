#!/usr/bin/env bash
# scripts/build.sh — configures (once) and builds trc into ./build with Ninja.
# Precondition: scripts/setup.sh has run. Uses every core; ccache when present.
# Then points the .venv at this checkout's Python package (trc.pth).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=Release
fi
ninja -C build -j"$(nproc)"
# The Python package: its sources (python/) and its extension
# (build/python/trc/_trc*.so) on the project's .venv path, so that
# `.venv/bin/python -c "import trc"` works in this checkout.
if [ -x .venv/bin/python ]; then
  site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  printf '%s\n%s\n' "$PWD/python" "$PWD/build/python" > "$site/trc.pth"
fi
