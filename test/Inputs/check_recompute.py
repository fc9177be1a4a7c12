#!/usr/bin/env python3
"""Activation recomputation checks of trc-run, for
test/Training/recompute.test.

  check_recompute.py TRC_RUN MODELS_DIR DATA WORKDIR

Recomputation changes where values are computed, never what: with the same
data (4 rows of 16 tokens, AdamW, 20 steps), every policy gives each model's
losses within 1e-6 of no recomputation (in practice bit for bit):
  * GPT-2, BERT, GPT-J and Llama-style exports with --recompute selective,
    full, and auto under a --memory-budget that forces recomputation;
  * GPT-2 exported with active dropout (the recomputed masks are the
    forward's: a pure function of the step's key);
  * GPT-2 with fused attention and full recomputation, with --config's
    `recompute` key, and with gradient clipping;
  * under mpirun: full recomputation at 2 pipeline stages (1F1B) and at
    tensor degree 2 match the 1-rank run without it.
The arena each policy compiles to (trc-run's `memory:` line) shrinks:
full < none. Refused with an error naming the flag or key: an unknown
policy, --memory-budget with a policy other than auto, a budget below the
smallest reachable arena (the error gives that arena), a --config key that
contradicts the flag. Prints what it compared; exits 1 when a check fails.
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import ENV, compare, fail, mpirun  # noqa: E402

TOLERANCE = 1e-6


def run(trc_run, model, data, work, name, extra=(), ranks=1, steps=20, batch=4):
    """Trains; returns (losses, the largest arena trc-run printed)."""
    metrics = os.path.join(work, name + ".jsonl")
    command = mpirun(ranks) + [trc_run, model, "--data", data, "--batch-size", str(batch),
                               "--seq-len", "16", "--steps", str(steps), "--metrics", metrics,
                               *extra]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{name}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    arenas = [int(a) for a in re.findall(r"memory: arena (\d+) bytes", done.stderr)]
    with open(metrics) as f:
        losses = [json.loads(line)["loss"] for line in f if line.strip()]
    return losses, max(arenas) if arenas else None


def refused(trc_run, model, data, extra, expected, name):
    command = [trc_run, model, "--data", data, "--batch-size", "4", "--seq-len", "16",
               "--steps", "1", *extra]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
    output = done.stdout + done.stderr
    if done.returncode == 0 or not re.search(expected, output):
        fail(f"{name}: expected an error matching '{expected}', got exit {done.returncode}:\n"
             f"{output}")
    print(f"{name}: refused ({re.search(expected, output).group(0)})")


def main():
    if len(sys.argv) != 5:
        fail(__doc__)
    trc_run, models, data, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)

    def model(name):
        return os.path.join(models, f"{name}_op17_dyn.onnx")

    for name in ("gpt2", "bert", "gptj", "llama"):
        none, none_arena = run(trc_run, model(name), data, work, f"{name}-none")
        arenas = {}
        for policy in ("selective", "full"):
            losses, arenas[policy] = run(trc_run, model(name), data, work, f"{name}-{policy}",
                                         ["--recompute", policy])
            compare(f"{name} {policy}", none, losses, TOLERANCE)
        # Between full's arena and none's: auto must recompute something.
        budget = (none_arena + arenas["full"]) // 2
        losses, arena = run(trc_run, model(name), data, work, f"{name}-auto",
                            ["--recompute", "auto", "--memory-budget", str(budget)])
        compare(f"{name} auto within {budget} bytes", none, losses, TOLERANCE)
        print(f"{name} arenas: none {none_arena}, full {arenas['full']}, auto {arena}: "
              f"full < none {arenas['full'] < none_arena}, auto fits {arena <= budget}")
        if not arenas["full"] < none_arena or arena > budget:
            fail(f"{name}: recomputation did not shrink the arena as asked")

    dropout = os.path.join(models, "gpt2_op17_dropout.onnx")
    none, _ = run(trc_run, dropout, data, work, "dropout-none", batch=2)
    losses, _ = run(trc_run, dropout, data, work, "dropout-full", ["--recompute", "full"],
                    batch=2)
    compare("gpt2 dropout full", none, losses, TOLERANCE)

    gpt2 = model("gpt2")
    fused, _ = run(trc_run, gpt2, data, work, "fused-none", ["--attention", "fused"])
    losses, _ = run(trc_run, gpt2, data, work, "fused-full",
                    ["--attention", "fused", "--recompute", "full"])
    compare("gpt2 fused attention full", fused, losses, TOLERANCE)
    none, _ = run(trc_run, gpt2, data, work, "gpt2-none-again")
    losses, _ = run(trc_run, gpt2, data, work, "config-full",
                    ["--config", json.dumps({"recompute": "full"})])
    compare("gpt2 --config recompute full", none, losses, TOLERANCE)
    clipped, _ = run(trc_run, gpt2, data, work, "clip-none", ["--clip-grad-norm", "0.5"])
    losses, _ = run(trc_run, gpt2, data, work, "clip-selective",
                    ["--clip-grad-norm", "0.5", "--recompute", "selective"])
    compare("gpt2 clipped selective", clipped, losses, TOLERANCE)

    if shutil.which("mpirun") is not None:
        losses, _ = run(trc_run, gpt2, data, work, "pp2-full",
                        ["--recompute", "full", "--config",
                         json.dumps({"pipeline_parallel_degree": 2, "microbatches": 2})],
                        ranks=2)
        compare("gpt2 2 stages full", none, losses, 1e-5)
        losses, _ = run(trc_run, gpt2, data, work, "tp2-full",
                        ["--recompute", "full", "--config",
                         json.dumps({"tensor_parallel_degree": 2})], ranks=2)
        compare("gpt2 tensor 2 full", none, losses, 1e-5)
    else:
        print("SKIPPED: mpirun is not installed (pipeline and tensor parallel runs)")

    refused(trc_run, gpt2, data, ["--recompute", "most"],
            r"option '--recompute' expects none, selective, full or auto", "unknown policy")
    refused(trc_run, gpt2, data, ["--recompute", "full", "--memory-budget", "1000"],
            r"--memory-budget is the arena budget of --recompute auto", "budget without auto")
    refused(trc_run, gpt2, data, ["--recompute", "auto", "--memory-budget", "1000"],
            r"the smallest reachable arena is \d+ bytes", "budget too small")
    refused(trc_run, gpt2, data, ["--recompute", "full", "--config",
                                  json.dumps({"recompute": "selective"})],
            r"--recompute full contradicts --config key 'recompute': selective", "contradiction")


if __name__ == "__main__":
    main()
