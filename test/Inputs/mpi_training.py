"""Shared helpers of the mpirun training checks (check_data_parallel.py,
check_tensor_parallel.py, check_pipeline_parallel.py): launching trc-run on N CPU ranks, reading its
per-step losses, comparing curves, expecting refusals, killing a rank."""
import json
import os
import signal
import subprocess
import sys
import time

TOLERANCE = 1e-5

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def mpirun(ranks):
    if ranks == 1:
        return []
    return ["mpirun", "--oversubscribe", "-np", str(ranks)]


def srun(ranks):
    """srun's command for `ranks` tasks wired up by PMIx (the environment
    names the cluster: SLURM_CONF)."""
    return ["srun", "-n", str(ranks), "--mpi=pmix"]


def train(trc_run, model, data, work, ranks, name, steps, config=None, extra=(), launcher=None,
          threads=None, batch=4, seq_len=16):
    """Trains `steps` steps (global batch `batch` rows, None: given in
    `extra`, of `seq_len` tokens; seq_len None: rows as --data's arrays give
    them) on `ranks` ranks
    started by `launcher` (mpirun by default; 1 rank runs alone), each rank
    on `threads` threads when given (TRC_NUM_THREADS); returns the losses."""
    metrics = os.path.join(work, name + ".jsonl")
    rows = ([] if batch is None else ["--batch-size", str(batch)]) + \
        ([] if seq_len is None else ["--seq-len", str(seq_len)])
    command = (launcher or mpirun)(ranks) + [trc_run, model, "--data", data, *rows,
                               "--steps", str(steps), "--metrics", metrics, *extra]
    if config is not None:
        command += ["--config", json.dumps(config)]
    env = ENV if threads is None else dict(ENV, TRC_NUM_THREADS=str(threads),
                                           OMP_NUM_THREADS=str(threads))
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{name}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    with open(metrics) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def compare(name, reference, losses, tolerance=TOLERANCE):
    if len(losses) != len(reference):
        fail(f"{name}: {len(losses)} steps against {len(reference)}")
    worst = max(abs(a - b) / abs(b) for a, b in zip(losses, reference))
    print(f"{name}: {len(losses)} steps, largest relative difference {worst:.2e}")
    if worst > tolerance:
        fail(f"{name}: the losses differ from the 1-rank run by {worst:.2e} > {tolerance}")


def refused(trc_run, model, data, ranks, config, expected, name, extra=(), seq_len=16):
    command = mpirun(ranks) + [trc_run, model, "--data", data, "--batch-size", "4",
                               "--seq-len", str(seq_len), "--steps", "1", "--config", config,
                               *extra]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
    output = done.stdout + done.stderr
    if done.returncode == 0 or expected not in output:
        fail(f"{name}: expected an error containing '{expected}', got exit "
             f"{done.returncode}:\n{output}")
    print(f"{name}: refused")


def process_with(entries, marker):
    """The pid of a process whose environment holds one of `entries` (e.g.
    b"RANK=1", whole "NAME=value" entries) and whose command line holds
    `marker` (e.g. its job's metrics file, so that another job, a concurrent
    test run's, is never hit), or None."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if any(e in environ for e in entries) and marker.encode() in cmdline:
            return int(pid)
    return None


def rank_process(rank, marker):
    """The pid of MPI rank `rank` of the job whose command line holds
    `marker`, or None. mpirun names the rank in the environment it starts
    the rank with; srun too (and srun's own process, which holds the marker
    too, has no SLURM_PROCID)."""
    return process_with((f"OMPI_COMM_WORLD_RANK={rank}".encode(),
                         f"SLURM_PROCID={rank}".encode()), marker)


def kill_rank(job, rank, marker, name):
    """Kills rank `rank` of `job` (SIGKILL); the time of the kill. Fails the
    check, ending the job, when no such process is found."""
    victim = rank_process(rank, marker)
    if victim is None:
        job.kill()
        fail(f"{name}: no process of rank {rank} found")
    os.kill(victim, signal.SIGKILL)
    return time.time()


def killed_rank(trc_run, model, data, work, ranks=2, config=None, name="killed rank",
                launcher=None):
    """Kills rank 1 once training runs; the job must end within 60 s, naming it."""
    metrics = os.path.join(work, name.replace(" ", "-") + ".jsonl")
    command = (launcher or mpirun)(ranks) + [trc_run, model, "--data", data, "--batch-size", "4",
                               "--seq-len", "16", "--steps", "100000", "--metrics", metrics]
    if config is not None:
        command += ["--config", json.dumps(config)]
    job = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    # Waiting for training to start is not the timed part (a loaded machine
    # may compile slowly); the job's end after the kill is.
    deadline = time.time() + 900
    while time.time() < deadline:
        if os.path.exists(metrics) and sum(1 for _ in open(metrics)) >= 2:
            break
        time.sleep(0.5)
    else:
        job.kill()
        fail(f"{name}: training never started")
    killed = kill_rank(job, 1, metrics, name)
    try:
        output, _ = job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        job.kill()
        fail(f"{name}: the other rank still runs 60 s after rank 1 was killed")
    took = time.time() - killed
    print(f"{name}: rank 1 killed, job exited {job.returncode} after {took:.1f} s")
    if job.returncode == 0:
        fail(f"{name}: the job reported success")
    if "error: rank 1" not in output:
        fail(f"{name}: no error naming rank 1 in:\n" + output)
