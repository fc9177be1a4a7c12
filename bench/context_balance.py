#!/usr/bin/env python3
"""Causal load balancing of context parallelism's ring, per rank, from the
timeline: the ring with each rank holding one contiguous chunk of the
sequence (cp_load_balance false: every rank computes every block of scores,
the hidden ones too) against the head-tail layout (rank r holds chunks r and
2C-1-r of 2C, skips its own block's head x tail quarter and after the
first step computes only the two of each block's four sub-blocks that
causal attention needs), same model, data and ranks, in one run.

    python3 bench/context_balance.py [--degrees 2,4] [--seq 4096] [--steps 4] [--work DIR]

The model is the small GPT-2 of the tests (2 layers, hidden 64, 4 heads)
exported with --seq positions (scripts/export_models.py), batch 1, attention
fused (the ring is of fused attention), fp32 AdamW. For each context degree C
and layout it trains --steps steps under `mpirun -np C` with
--profile-summary over the steps after the first, and prints per rank the
compute milliseconds per step (time inside the program, not communicating:
the timeline's compute share), the ratio balanced / contiguous, and the
share of each rank's computed score blocks that causality needs: a
contiguous rank r needs r + 1/2 of the C blocks it computes (rank C-1 needs
all but half a block, rank 0 half of one: a layout that skipped hidden
blocks would finish when rank C-1 does); every balanced rank computes
(2C+1)/(4C) of the blocks and needs C/2 of them. Losses are checked equal.
Timings are of CPU ranks on this machine: ratios within one run, not
absolute figures (2 cores shared by up to 4 ranks).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import common

MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root"]
RANK_LINE = re.compile(r"rank (\d+) \([^)]*\): (\d+) steps, ([0-9.]+) ms: compute ([0-9.]+)%")


def export(work, seq):
    """The tests' GPT-2 exported to hold `seq` positions (dynamic axes)."""
    import warnings
    warnings.filterwarnings("ignore")
    em = common.em
    em.configure("small")
    em.CONTEXT = seq
    path = os.path.join(work, f"gpt2_{seq}.onnx")
    if not os.path.exists(path):
        em.export(em.build("gpt2", init="gpt2"), path, 17, True)
    return path


def run(model, data, work, degree, balance, seq, steps):
    """Per-rank compute ms per step and the losses of one ring run."""
    name = f"c{degree}-{'balanced' if balance else 'contiguous'}"
    metrics = os.path.join(work, name + ".jsonl")
    config = {"context_parallel_degree": degree, "cp_comm_type": "p2p",
              "cp_load_balance": balance}
    command = MPIRUN + ["-np", str(degree), common.TRC_RUN, model, "--device", "cpu",
                        "--data", data, "--batch-size", "1", "--seq-len", str(seq),
                        "--steps", str(steps), "--attention", "fused", "--metrics", metrics,
                        "--config", json.dumps(config), "--profile-summary",
                        "--profile-steps", str(steps - 1)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               TRC_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode:
        sys.exit(f"{name}: trc-run failed:\n{done.stderr[-3000:]}")
    ranks = {}
    for line in (done.stdout + done.stderr).splitlines():
        m = RANK_LINE.search(line)
        if m:
            rank, count, total, compute = int(m[1]), int(m[2]), float(m[3]), float(m[4])
            ranks[rank] = (total / count, total * compute / 100 / count)
    if len(ranks) != degree:
        sys.exit(f"{name}: expected {degree} rank summaries, got {sorted(ranks)}:\n"
                 f"{done.stdout[-3000:]}")
    with open(metrics) as f:
        losses = [json.loads(line)["loss"] for line in f if line.strip()]
    return ranks, losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--degrees", default="2,4")
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--work")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="context-balance-")
    os.makedirs(work, exist_ok=True)
    model = export(work, args.seq)
    data = common.text_data(work)
    print(f"GPT-2 (tests' size) at {args.seq} positions, batch 1, ring attention, "
          f"{args.steps - 1} profiled steps")
    for degree in (int(d) for d in args.degrees.split(",")):
        contiguous, loss_c = run(model, data, work, degree, False, args.seq, args.steps)
        balanced, loss_b = run(model, data, work, degree, True, args.seq, args.steps)
        worst = max(abs(a - b) / abs(a) for a, b in zip(loss_c, loss_b))
        print(f"\ncontext degree {degree}: losses agree within {worst:.1e}")
        print("  rank   contiguous: compute ms  needed   balanced: compute ms  needed"
              "   compute balanced/contiguous")
        for r in range(degree):
            needed_c = (r + 0.5) / degree
            needed_b = (degree / 2) / ((2 * degree + 1) / 4)
            print(f"  {r:4d}   {contiguous[r][1]:20.1f}  {needed_c:6.0%}   "
                  f"{balanced[r][1]:18.1f}  {needed_b:6.0%}   "
                  f"{balanced[r][1] / contiguous[r][1]:10.3f}")
        step_c = max(t for t, _ in contiguous.values())
        step_b = max(t for t, _ in balanced.values())
        print(f"  step time (slowest rank): contiguous {step_c:.1f} ms, balanced "
              f"{step_b:.1f} ms, ratio {step_b / step_c:.3f}; blocks computed "
              f"{(2 * degree + 1) / (4 * degree):.3f} of contiguous")


if __name__ == "__main__":
    main()
