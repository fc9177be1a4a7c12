#!/usr/bin/env python3
"""What a lost rank costs an elastic job (issue 34), trc against PyTorch in one
run: the bench GPT-2 on 2 CPU ranks, 60 steps, a checkpoint every 20, rank 1
killed with SIGKILL once step 30 is logged, and the job relaunched by its
supervisor from the last checkpoint:
  * trc: trc-launch -n 2 --max-restarts 1 -- trc-run MODEL.onnx ... (mpirun;
    each launch compiles the step in process);
  * PyTorch: torchrun --standalone --nproc_per_node 2 --max_restarts 1
    bench/torch_elastic_worker.py (DDP over gloo, torch.save checkpoints).
Measured for each: restart (the kill to the relaunch's first new step line;
a fresh launch's time to its first step is printed beside it: the rest is
noticing the loss and ending the job), steps lost (the last step logged before the kill minus the step resumed
from), and the interrupted run's wall time over an uninterrupted run's.

    .venv/bin/python bench/elastic_restart.py [--steps 60] [--every 20] [--kill-after 30]
        [--batch 8] [--seq 128]
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
sys.path.insert(0, os.path.join(common.ROOT, "test", "Inputs"))
from mpi_training import process_with  # noqa: E402  (the tests' process finder)

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMP_NUM_THREADS="1")
TRC_LAUNCH = os.path.join(common.ROOT, "build", "tools", "trc-launch", "trc-launch")
WORKER = os.path.join(common.HERE, "torch_elastic_worker.py")


def lines(path):
    try:
        with open(path) as f:
            return [json.loads(l) for l in f if l.endswith("\n")]
    except OSError:
        return []


def run(command, metrics, kill=None):
    """Runs `command`; with kill=(step, env entry) kills that rank once
    `step` is logged. Returns wall seconds, output and the kill's figures."""
    start = time.time()
    job = subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    figures = {}
    if kill:
        step, entry = kill
        while not lines(metrics) or lines(metrics)[-1]["step"] < step:
            if job.poll() is not None:
                sys.exit("error: the job ended early:\n" + job.stdout.read())
            time.sleep(0.01)
        pid = process_with((entry,), metrics)
        if pid is None:
            job.kill()
            sys.exit(f"error: no process with {entry.decode()}")
        os.kill(pid, signal.SIGKILL)
        killed = time.time()
        figures["last_step_before_kill"] = lines(metrics)[-1]["step"]
    output, _ = job.communicate()
    figures["wall_s"] = time.time() - start
    if job.returncode != 0:
        sys.exit(f"error: {command[0]} exited {job.returncode}:\n{output[-3000:]}")
    if kill:
        # The relaunch's first line: PyTorch's worker appends, so its steps
        # jump back where the relaunch starts; trc-run --resume keeps the
        # lines up to its checkpoint's step and writes the rest anew.
        final = lines(metrics)
        jumps = [i for i in range(1, len(final)) if final[i]["step"] <= final[i - 1]["step"]]
        resumed = re.search(r"resuming from the checkpoint of step (\d+)", output)
        if jumps:
            first = final[jumps[-1]]
        elif resumed:
            first = next(l for l in final if l["step"] == int(resumed.group(1)) + 1)
        else:
            first = next(l for l in final if l["time"] > killed)
        figures["restart_s"] = first["time"] - killed
        figures["resumed_from"] = first["step"] - 1
    figures["first_step_s"] = lines(metrics)[0]["time"] - start # launch to first step
    figures["steps_lost"] = figures.get("last_step_before_kill", 0) - figures.get(
        "resumed_from", 0) if kill else 0
    return figures


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--every", type=int, default=20)
    p.add_argument("--kill-after", type=int, default=30)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="elastic-")
    model = common.export_gpt2(work, "bench")
    data = common.text_data(work)

    def trc(name):
        folder = os.path.join(work, name)
        os.makedirs(folder)
        metrics = os.path.join(folder, "metrics.jsonl")
        return [TRC_LAUNCH, "-n", "2", "--max-restarts", "1", "--launcher-arg", "--oversubscribe",
                "--", common.TRC_RUN, model, "--device", "cpu", "--data", data,
                "--batch-size", str(a.batch), "--seq-len", str(a.seq), "--steps", str(a.steps),
                "--checkpoint-dir", os.path.join(folder, "ckpt"),
                "--checkpoint-every", str(a.every), "--metrics", metrics], metrics

    def torch(name):
        folder = os.path.join(work, name)
        os.makedirs(folder)
        metrics = os.path.join(folder, "metrics.jsonl")
        # --redirects/--tee 1: their default "0" maps to no value under
        # Python 3.11 in torch 1.13's torchrun (Std.from_str) and it fails.
        return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc_per_node", "2", "--max_restarts", "1", "--redirects", "1",
                "--tee", "1", "--log_dir", os.path.join(folder, "logs"), WORKER, data, folder, metrics,
                str(a.steps), str(a.every), str(a.batch), str(a.seq)], metrics

    results = {}
    for system, make, entry in (("trc", trc, b"OMPI_COMM_WORLD_RANK=1"),
                                ("pytorch", torch, b"RANK=1")):
        plain = run(*make(system + "-plain"))
        command, metrics = make(system + "-killed")
        killed = run(command, metrics, kill=(a.kill_after, entry))
        killed["extra_wall_s"] = killed["wall_s"] - plain["wall_s"]
        killed["plain_wall_s"] = plain["wall_s"]
        killed["fresh_first_step_s"] = plain["first_step_s"]
        results[system] = killed
        print(f"{system:8s} restart {killed['restart_s']:.2f} s (kill to first new step), "
              f"{killed['steps_lost']} steps lost (killed after step "
              f"{killed['last_step_before_kill']}, resumed from {killed['resumed_from']}), "
              f"wall {killed['wall_s']:.1f} s vs {plain['wall_s']:.1f} s uninterrupted "
              f"(+{killed['extra_wall_s']:.1f} s); a fresh launch's first step "
              f"{plain['first_step_s']:.2f} s")
    print(f"restart ratio trc/pytorch: "
          f"{results['trc']['restart_s'] / results['pytorch']['restart_s']:.2f}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
