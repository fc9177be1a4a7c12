#!/usr/bin/env python3
"""trc-launch: a trc-run job that survives a killed rank, for
test/Training/elastic-launch.test (issue 34's acceptance).

  check_elastic.py TRC_LAUNCH TRC_RUN MODEL DATA WORKDIR [--trials N]

With the same global batch (4 rows of 16 tokens, AdamW, 30 steps,
a checkpoint every 5 steps):
  * N trials (default 2) of 4 ranks under mpirun with rank 1 killed (SIGKILL)
    after a random step in 6..25: trc-launch relaunches 4 ranks from the last
    checkpoint, the run ends at step 30 and its losses equal an uninterrupted
    4-rank run's bit for bit;
  * the hostfile cut from 4 slots to 2 before the kill: the relaunch runs 2
    ranks with --grad-accum 2 and the run matches 1 rank within 1e-5;
  * a job that fails with an error of its own (a missing data file) is not
    relaunched.
Prints what it compared and each run's restart figures (kill to the first
step of the relaunch, steps lost); exits 1 with the reason when a check
fails.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import ENV, compare, fail, kill_rank, train  # noqa: E402

STEPS = 30


def steps_written(metrics):
    try:
        with open(metrics) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []


def elastic_run(args, name, launch_flags, kill_after, before_kill=None):
    """Runs the job under trc-launch, kills rank 1 once `kill_after` steps
    are written; returns (exit status, trc-launch's output, the metrics
    lines, the kill's time, the steps logged when it came)."""
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    metrics = os.path.join(work, "metrics.jsonl")
    command = [args.trc_launch, *launch_flags, "--max-restarts", "2", "--",
               args.trc_run, args.model, "--data", args.data, "--batch-size", "4",
               "--seq-len", "16", "--steps", str(STEPS), "--checkpoint-dir",
               os.path.join(work, "ckpt"), "--checkpoint-every", "5", "--metrics", metrics]
    job = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    deadline = time.time() + 900
    while len(steps_written(metrics)) < kill_after:
        if time.time() > deadline or job.poll() is not None:
            job.kill()
            fail(f"{name}: training never reached step {kill_after}:\n{job.communicate()[0]}")
        time.sleep(0.005)
    if before_kill:
        before_kill()
    killed = kill_rank(job, 1, metrics, name)
    at_kill = len(steps_written(metrics))
    try:
        output, _ = job.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        job.kill()
        fail(f"{name}: trc-launch still runs 900 s after the kill")
    return job.returncode, output, steps_written(metrics), killed, at_kill


def check_relaunch(args, reference, name, launch_flags, before_kill, want_ranks, want_accum,
                   kill_after=12, exact=False):
    """trc-launch with `launch_flags` (what precedes "--"), rank 1 killed
    after step `kill_after`: one relaunch on `want_ranks` ranks with
    --grad-accum `want_accum`, the run on the `reference` losses (bit for
    bit when `exact`)."""
    status, output, lines, killed, at_kill = elastic_run(args, name, launch_flags, kill_after,
                                                          before_kill)
    if status != 0:
        fail(f"{name}: trc-launch exited {status}:\n{output}")
    launches = [l for l in output.splitlines() if l.startswith("trc-launch: relaunch 1 of 2:")]
    want = f"trc-launch: relaunch 1 of 2: {want_ranks} ranks"
    if len(launches) != 1 or not launches[0].startswith(want) or \
            f"--grad-accum {want_accum}, resuming from the checkpoint of step " not in launches[0]:
        fail(f"{name}: expected one relaunch on {want_ranks} ranks with --grad-accum "
             f"{want_accum}:\n{output}")
    # mpirun reports the first rank it saw end: the killed one (signal 9) or a
    # peer that stopped on losing it (trc-run's rank-lost exit status); both
    # name a lost rank, which is what makes trc-launch relaunch.
    causes = ("a rank was killed by signal 9", "a rank ended because another was lost")
    if "trc-launch: launch ended after" not in output or not any(c in output for c in causes):
        fail(f"{name}: the first launch's end and its cause are not reported:\n{output}")
    resumed_from = int(launches[0].rsplit("step ", 1)[1].split(":")[0])
    losses = [m["loss"] for m in lines]
    if [m["step"] for m in lines] != list(range(1, STEPS + 1)):
        fail(f"{name}: the metrics do not hold steps 1..{STEPS} once each")
    if exact:
        differ = [i + 1 for i, (a, b) in enumerate(zip(losses, reference)) if a != b]
        if differ:
            fail(f"{name}: steps {differ} differ from the uninterrupted run's")
        print(f"{name}: {len(losses)} steps, bit-identical to the uninterrupted run")
    else:
        compare(name, reference, losses)
    # The relaunch's first step: the one after the step it resumed from (the
    # resumed run drops the lines after its checkpoint's step). A kill after
    # the last checkpoint was written leaves no step to redo.
    first = "no step left to train" if resumed_from == STEPS else \
        f"first new step {lines[resumed_from]['time'] - killed:.1f} s after the kill"
    print(f"{name}: killed after step {at_kill}, relaunched on {want_ranks} ranks from step "
          f"{resumed_from} ({at_kill - resumed_from} steps lost), {first}")


class Args:
    pass


def main():
    parser = argparse.ArgumentParser()
    for name in ("trc_launch", "trc_run", "model", "data", "work"):
        parser.add_argument(name)
    parser.add_argument("--trials", type=int, default=2)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    oversubscribe = ["--launcher-arg", "--oversubscribe"]
    reference = train(args.trc_run, args.model, args.data, args.work, 1, "one-rank", STEPS)
    four = train(args.trc_run, args.model, args.data, args.work, 4, "four-ranks", STEPS)

    chance = random.Random(34)
    for trial in range(args.trials):
        check_relaunch(args, four, f"trial {trial + 1}: 4 ranks, rank 1 killed",
                       ["-n", "4", *oversubscribe], None, 4, 1,
                       kill_after=chance.randint(6, 25), exact=True)

    hostfile = os.path.join(args.work, "hosts")
    with open(hostfile, "w") as f:
        f.write("localhost slots=4\n")

    def lose_two_slots():
        with open(hostfile, "w") as f:
            f.write("localhost slots=2  # two slots' node is gone\n")

    check_relaunch(args, reference, "4 ranks, hostfile cut to 2, rank 1 killed",
                   ["--hostfile", hostfile, "--min-ranks", "2", *oversubscribe], lose_two_slots,
                   2, 2)

    # An error the job names is not retried.
    done = subprocess.run([args.trc_launch, "-n", "2", *oversubscribe, "--",
                           args.trc_run, args.model, "--data", os.path.join(args.work, "nope.txt"),
                           "--batch-size", "4", "--seq-len", "16", "--steps", "5",
                           "--checkpoint-dir", os.path.join(args.work, "ckpt-error")],
                          env=ENV, capture_output=True, text=True)
    output = done.stdout + done.stderr
    if done.returncode != 1 or "relaunch 1" in output or \
            "not relaunched: a relaunch would meet it again" not in output:
        fail(f"a job's own error: expected exit 1 and no relaunch, got {done.returncode}:\n"
             + output)
    print("a job's own error: not relaunched")


if __name__ == "__main__":
    main()
