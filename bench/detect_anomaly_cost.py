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
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import export_models as em  # noqa: E402


def run(trc_run, model, data, work, name, a, extra):
    metrics = os.path.join(work, name + ".jsonl")
    start = time.time()
    done = subprocess.run(
        [trc_run, model, "--data", data, "--batch-size", str(a.batch), "--seq-len", str(a.seq),
         "--steps", str(a.steps), "--metrics", metrics, *extra], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{name}: trc-run failed: {done.stderr[-2000:]}")
    wall = time.time() - start
    lines = [json.loads(l) for l in open(metrics)]
    steps = [l["step_time_ms"] for l in lines[len(lines) // 2:]]
    return {"losses": [l["loss"] for l in lines], "step_ms": statistics.median(steps),
            "compile_s": wall - sum(l["step_time_ms"] for l in lines) / 1000.0}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trc-run", default=os.path.join(HERE, "..", "build", "tools", "trc-run",
                                                     "trc-run"))
    p.add_argument("--size", default="bench")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    a = p.parse_args()
    import warnings
    warnings.filterwarnings("ignore")
    work = tempfile.mkdtemp(prefix="detect-anomaly-")
    em.configure(a.size)
    model = os.path.join(work, "gpt2.onnx")
    em.export(em.build("gpt2", init="gpt2"), model, 17, dynamic=True)
    data = os.path.join(work, "data.txt")
    text = open(os.path.join(HERE, "..", "..", "shared", "data", "tinyshakespeare.txt")).read()
    open(data, "w").write(text[:400000])
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
