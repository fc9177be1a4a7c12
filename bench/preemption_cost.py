#!/usr/bin/env python3
"""What a preemption costs a run (issue 34): trc-run on the bench GPT-2 is
sent SIGTERM mid-run (as Slurm does before it kills a job); measured in one
run of this script:
  * stop: SIGTERM to the process's exit (the step in flight finished, its
    checkpoint written and waited for);
  * lost work: steps the resumed run repeats (0 when the stop checkpointed
    the last step it logged);
  * restart: launching the resumed run to its first new step's metrics line
    (the in-process compile and the checkpoint's load), against a fresh
    run's launch to its first step.
The losses of the stopped-and-resumed run are compared with an
uninterrupted run's.

    .venv/bin/python bench/preemption_cost.py [--trc-run PATH] [--size bench]
        [--steps 30] [--batch 8] [--seq 128] [--ranks 1]
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(l) for l in f if l.endswith("\n")]


def wait_for_line(proc, path, count):
    """Seconds until `path` holds `count` lines (the process still running)."""
    start = time.time()
    while len(lines(path)) < count:
        if proc.poll() is not None:
            sys.exit("error: trc-run ended early:\n" + proc.stderr.read())
        time.sleep(0.005)
    return time.time() - start


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trc-run", default=common.TRC_RUN)
    p.add_argument("--size", default="bench")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="preemption-")
    model = common.export_gpt2(work, a.size)
    data = common.text_data(work)
    base = [a.trc_run, model, "--device", "cpu", "--data", data, "--batch-size", str(a.batch),
            "--seq-len", str(a.seq), "--steps", str(a.steps)]
    reference = common.train(a.trc_run, model, data, work, "reference", a.batch, a.seq, a.steps)
    ckpt = os.path.join(work, "ck")
    metrics = os.path.join(work, "stopped.jsonl")
    first = subprocess.Popen(base + ["--checkpoint-dir", ckpt, "--metrics", metrics], env=ENV,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    fresh_start = wait_for_line(first, metrics, 1)
    wait_for_line(first, metrics, a.steps // 2)
    signalled = time.time()
    first.send_signal(signal.SIGTERM)
    first.wait()
    stop_s = time.time() - signalled
    logged = len(lines(metrics))
    with open(os.path.join(ckpt, "latest")) as f:
        saved = int(f.read().strip().split("-")[1])
    resumed = subprocess.Popen(base + ["--checkpoint-dir", ckpt, "--metrics", metrics,
                                       "--resume"], env=ENV, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    restart_s = wait_for_line(resumed, metrics, saved + 1)
    resumed.wait()
    same = [l["loss"] for l in lines(metrics)] == [l["loss"] for l in reference["lines"]]
    step_s = (reference["lines"][-1]["time"] - reference["lines"][1]["time"]) / (a.steps - 2)
    print(f"model: GPT-2 '{a.size}', batch {a.batch} x {a.seq}, {a.steps} steps (CPU, 1 rank), "
          f"{step_s * 1000:.0f} ms per step")
    print(f"  SIGTERM after step {logged}: exit {first.returncode} in {stop_s:.2f} s "
          f"(the step in flight and its checkpoint)")
    print(f"  lost work: {logged - saved} steps (checkpoint step-{saved})")
    print(f"  restart to the first new step: {restart_s:.2f} s "
          f"(a fresh run to its first step: {fresh_start:.2f} s)")
    print("  losses bit-identical to the uninterrupted run" if same else "  LOSSES DIFFER")


if __name__ == "__main__":
    main()
