#!/usr/bin/env python3
"""A kill -9 while a checkpoint is being written in the background (trc-run
writes checkpoints on a thread while training goes on): the run resumes from
the last complete checkpoint and its losses equal an uninterrupted run's,
bit for bit.

    python3 test/Inputs/check_background_checkpoint.py TRC_RUN MODEL DATA WORK

The training process is watched (every 0.5 ms) for a checkpoint folder in
progress (`.tmp-step-N-PID`, N > 5) and killed with SIGKILL as soon as one shows;
a run that ends first is retried (at most 5 times). Prints what it did and
"ok", or exits 1 naming the difference.
"""
import json
import os
import signal
import subprocess
import sys
import time

STEPS = 40


def main():
    trc_run, model, data, work = sys.argv[1:5]
    common = [trc_run, model, "--data", data, "--batch-size", "2", "--seq-len", "16",
              "--steps", str(STEPS), "--lr-schedule", "cosine:warmup=2,total=%d" % STEPS]
    reference = os.path.join(work, "reference.jsonl")
    subprocess.run(common + ["--metrics", reference], check=True, capture_output=True)
    ckpt = os.path.join(work, "ck")
    metrics = os.path.join(work, "killed.jsonl")
    for attempt in range(5):
        run = subprocess.Popen(common + ["--checkpoint-dir", ckpt, "--checkpoint-every", "1",
                                         "--overwrite-checkpoints", "--metrics", metrics],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        in_flight = None
        while run.poll() is None and in_flight is None:
            if os.path.isdir(ckpt):  # a write after a few complete ones
                in_flight = next((n for n in os.listdir(ckpt) if n.startswith(".tmp-step-")
                                  and int(n.split("-")[2]) > 5), None)
            if in_flight is None:
                time.sleep(0.0005)
        if in_flight is not None and run.poll() is None:
            run.send_signal(signal.SIGKILL)
            run.wait()
            break
        run.wait()
    else:
        sys.exit("error: no checkpoint write was caught in flight in 5 runs")
    latest = open(os.path.join(ckpt, "latest")).read().strip()  # complete ones exist
    print("killed while %s was being written; latest: %s" % (in_flight.rsplit("-", 1)[0],
                                                             latest))
    done = subprocess.run(common + ["--checkpoint-dir", ckpt, "--checkpoint-every", "1",
                                    "--metrics", metrics, "--resume"],
                          capture_output=True, text=True)
    if done.returncode:
        sys.exit("error: the resumed run failed:\n" + done.stderr)
    want = [json.loads(l)["loss"] for l in open(reference)]
    got = [json.loads(l)["loss"] for l in open(metrics)]
    if got != want:
        sys.exit("error: losses differ from the uninterrupted run:\n%s\n%s" % (got, want))
    print("resumed to step %d; %d losses bit-identical to the uninterrupted run" %
          (STEPS, len(got)))
    print("ok")


if __name__ == "__main__":
    main()
