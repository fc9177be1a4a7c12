#!/usr/bin/env python3
"""The cost of the data-parallel code path at world size 1: trc-run training
the same model on the same batches without --config (no collectives) and
with --config '{}' (the step compiled by trc-data-parallel: gradient buckets
flattened, concatenated, "all-reduced" by a size-1 group, split again; the
loss averaged), and with ZeRO-3 at world size 1, alternating the runs in one
call so machine noise hits all alike.

    python3 bench/dp_overhead.py [--model M.onnx] [--batch 8] [--seq 64]
        [--steps 12] [--rounds 3] [--build build]

Step time: the median over rounds of each run's mean step_time_ms (trc-run
--metrics) after the first two steps; compilation is not included. Prints
each configuration's time and its ratio to the plain run (the goal on a
GPU is under 1.03; this measures the CPU path).
Preconditions: trc-run built; the model's @main returns a scalar loss.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = [("plain (no --config)", None), ("DDP path, 1 rank", "{}"),
           ("ZeRO-3 path, 1 rank", '{"zero_stage": 3}')]


def step_time(args, config, data, work):
    metrics = os.path.join(work, "m.jsonl")
    command = [os.path.join(args.build, "tools/trc-run/trc-run"), args.model, "--data", data,
               "--batch-size", str(args.batch), "--seq-len", str(args.seq),
               "--steps", str(args.steps), "--metrics", metrics]
    if config is not None:
        command += ["--config", config]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"trc-run failed:\n{done.stderr}")
    with open(metrics) as f:
        times = [json.loads(line)["step_time_ms"] for line in f if line.strip()]
    return statistics.mean(times[2:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=os.path.join(ROOT, "build/test/models/gpt2_op17_dyn.onnx"))
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "data.txt")
        with open(data, "w") as f:
            f.write("to be or not to be, that is the question. " * 400)
        times = {name: [] for name, _ in CONFIGS}
        for _ in range(args.rounds):
            for name, config in CONFIGS:
                times[name].append(step_time(args, config, data, work))
    base = statistics.median(times[CONFIGS[0][0]])
    print(f"model {os.path.relpath(args.model, ROOT)}, batch {args.batch}, seq {args.seq}, "
          f"{args.steps} steps x {args.rounds} rounds")
    for name, _ in CONFIGS:
        t = statistics.median(times[name])
        print(f"  {name:22s} {t:8.2f} ms/step   ratio {t / base:.3f}")


if __name__ == "__main__":
    main()
