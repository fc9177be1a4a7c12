#!/usr/bin/env python3
"""What --detect-anomaly costs: trc-run on the bench GPT-2 with and without
it, side by side in one run (same data, same steps): each run's compile
time (wall time to its first step line), median step time over the last
steps (metrics step_time_ms), the ratios, and whether the losses are
bit-identical (the checks must not change the arithmetic).

    .venv/bin/python bench/detect_anomaly_cost.py [--trc-run build/tools/trc-run/trc-run]
        [--size bench] [--steps 20] [--batch 8] [--seq 128]
"""
import argparse
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def run(trc_run, model, data, work, name, a, extra):
    r = common.train(trc_run, model, data, work, name, a.batch, a.seq, a.steps, extra)
    lines = r["lines"]
    steps = [l["step_time_ms"] for l in lines[len(lines) // 2:]]
    return {"losses": [l["loss"] for l in lines], "step_ms": statistics.median(steps),
            "compile_s": r["wall_s"] - sum(l["step_time_ms"] for l in lines) / 1000.0}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trc-run", default=common.TRC_RUN)
    p.add_argument("--size", default="bench")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="detect-anomaly-")
    model = common.export_gpt2(work, a.size)
    data = common.text_data(work)
    plain = run(a.trc_run, model, data, work, "plain", a, [])
    checked = run(a.trc_run, model, data, work, "checked", a, ["--detect-anomaly"])
    print(f"model: GPT-2 '{a.size}', batch {a.batch} x {a.seq}, {a.steps} steps (CPU)")
    for name, r in (("plain", plain), ("--detect-anomaly", checked)):
        print(f"  {name:18s} compile {r['compile_s']:6.1f} s   step {r['step_ms']:8.1f} ms")
    print(f"ratios (checked / plain): compile {checked['compile_s'] / plain['compile_s']:.2f}x, "
          f"step {checked['step_ms'] / plain['step_ms']:.2f}x")
    same = plain["losses"] == checked["losses"]
    print("losses bit-identical" if same else "LOSSES DIFFER")


if __name__ == "__main__":
    main()
