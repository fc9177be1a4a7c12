#!/usr/bin/env python3
"""The static memory plan of each exported test model: compiles every model
with `trc-opt --trc-compile` and prints the arena against its lower bound (the
most bytes live at once; goal <= 1.05) and against no reuse.

    .venv/bin/python bench/memory_plan.py [--build build] [--batch 8] [--seq 64]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=64)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="trc-memplan-")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts/export_models.py"),
                    "--out", tmp, "--opsets", "13,17"], check=True, capture_output=True)
    print(f"{'model':<16} {'arena bytes':>12} {'lower bound':>12} {'no reuse':>12} "
          f"{'arena/bound':>12} {'arena/no-reuse':>15}")
    worst = 0.0
    for name in sorted(f for f in os.listdir(tmp) if f.endswith("_dyn.onnx")):
        out = subprocess.run(
            [os.path.join(args.build, "tools/trc-opt/trc-opt"), os.path.join(tmp, name),
             f"--dim=batch={args.batch},sequence={args.seq}", "--trc-compile=target=cpu",
             "-o", os.path.join(tmp, name + ".art")],
            capture_output=True, text=True, check=True).stderr
        m = re.search(r"arena (\d+) bytes, lower bound (\d+) .*no reuse (\d+)", out)
        arena, bound, none = (int(g) for g in m.groups())
        worst = max(worst, arena / bound)
        print(f"{name[:-9]:<16} {arena:>12} {bound:>12} {none:>12} {arena / bound:>12.3f} "
              f"{arena / none:>15.3f}")
    print(f"worst arena/bound: {worst:.3f} (goal <= 1.05)")


if __name__ == "__main__":
    main()
