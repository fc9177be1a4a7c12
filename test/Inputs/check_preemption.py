#!/usr/bin/env python3
"""Preemption: SIGTERM (what Slurm sends before it kills a job) at some
moment of a training run stops it after the step in flight with a
checkpoint of that step, exit status 1 and one error line; `--resume` then
continues bit-identically to an uninterrupted run.

    python3 test/Inputs/check_preemption.py TRC_RUN MODEL DATA WORK [RANKS]

RANKS > 1 runs under mpirun and signals one rank only (the last one): every
rank must stop after the same step. Prints what happened and "ok", or
FAIL: ... and exits 1.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import ENV, fail, mpirun, rank_process  # noqa: E402

STEPS = 600


def losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def main():
    trc_run, model, data, work = sys.argv[1:5]
    ranks = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    base = mpirun(ranks) + [trc_run, model, "--data", data, "--batch-size", "4",
                            "--seq-len", "16", "--steps", str(STEPS),
                            "--lr-schedule", "cosine:warmup=10,total=%d" % STEPS]
    reference = os.path.join(work, "reference.jsonl")
    subprocess.run(base + ["--metrics", reference], env=ENV, check=True, capture_output=True)
    ckpt = os.path.join(work, "ck")
    metrics = os.path.join(work, "stopped.jsonl")
    run = subprocess.Popen(base + ["--checkpoint-dir", ckpt, "--metrics", metrics], env=ENV,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # Some steps in, signal a rank: the process itself, or under mpirun the
    # last rank.
    while run.poll() is None and (not os.path.exists(metrics) or len(losses(metrics)) < 5):
        time.sleep(0.01)
    if run.poll() is not None:
        fail("the run ended before it was signalled:\n" + run.stderr.read())
    target = run.pid if ranks == 1 else rank_process(ranks - 1, metrics)
    if target is None:
        run.kill()
        fail("no process of rank %d found" % (ranks - 1))
    os.kill(target, signal.SIGTERM)
    signalled = time.time()
    try:
        _, stderr = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        run.kill()
        fail("the run did not stop within 60 s of SIGTERM")
    logged = losses(metrics)
    stopped = len(logged)
    errors = [l for l in stderr.splitlines() if l.startswith("error:")]
    want = ("error: stopped by SIGTERM after step %d of %d: checkpoint %s/step-%d written; "
            "continue with --resume" % (stopped, STEPS, ckpt, stopped))
    if run.returncode != 1 or errors != [want]:
        fail("exit %d, error lines %s; expected 1 and [%r]" % (run.returncode, errors, want))
    with open(os.path.join(ckpt, "latest")) as f:
        latest = f.read().strip()
    if latest != "step-%d" % stopped:
        fail("latest is %s, the run stopped after step %d" % (latest, stopped))
    print("%d rank(s): SIGTERM to %s; stopped after step %d of %d in %.1f s, latest %s" %
          (ranks, "the process" if ranks == 1 else "the last rank", stopped, STEPS,
           time.time() - signalled, latest))
    done = subprocess.run(base + ["--checkpoint-dir", ckpt, "--metrics", metrics, "--resume"],
                          env=ENV, capture_output=True, text=True)
    if done.returncode:
        fail("the resumed run failed:\n" + done.stderr)
    if losses(metrics) != losses(reference):
        fail("the resumed run's losses differ from the uninterrupted run's")
    print("resumed: %d losses bit-identical to the uninterrupted run" % len(losses(reference)))
    print("ok")


if __name__ == "__main__":
    main()
