"""Shared helpers of the mpirun training checks (check_data_parallel.py,
check_tensor_parallel.py, check_pipeline_parallel.py): launching trc-run on N CPU ranks, reading its
per-step losses, comparing curves, expecting refusals."""
import json
import os
import subprocess
import sys

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


def train(trc_run, model, data, work, ranks, name, steps, config=None, extra=()):
    """Trains `steps` steps (global batch 4 x 16 tokens); returns the losses."""
    metrics = os.path.join(work, name + ".jsonl")
    command = mpirun(ranks) + [trc_run, model, "--data", data, "--batch-size", "4",
                               "--seq-len", "16", "--steps", str(steps), "--metrics", metrics,
                               *extra]
    if config is not None:
        command += ["--config", json.dumps(config)]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
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


def refused(trc_run, model, data, ranks, config, expected, name):
    command = mpirun(ranks) + [trc_run, model, "--data", data, "--batch-size", "4",
                               "--seq-len", "16", "--steps", "1", "--config", config]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
    output = done.stdout + done.stderr
    if done.returncode == 0 or expected not in output:
        fail(f"{name}: expected an error containing '{expected}', got exit "
             f"{done.returncode}:\n{output}")
    print(f"{name}: refused")
