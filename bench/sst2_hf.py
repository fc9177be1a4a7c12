#!/usr/bin/env python3
"""SST-2 with Hugging Face's Trainer and with trc.hf.Trainer, side by side in
one run (bench/sst2_hf_trainer.py, the same script with the Trainer import
changed), on this machine's CPU.

    .venv/bin/python bench/sst2_hf.py [--max-steps N] [--out DIR]

Prints each run's JSON line (train loss, wall time of train(), samples/s,
dev loss and accuracy from evaluate() with compute_metrics and of the saved
model loaded back with from_pretrained)
and the ratios trc/transformers. trc's wall time includes compiling the
step (and the dev evaluation's forward program when the run evaluates).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run(trainer, out, max_steps):
    cmd = [sys.executable, os.path.join(HERE, "sst2_hf_trainer.py"), "--trainer", trainer,
           os.path.join(out, trainer), "--max-steps", str(max_steps)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"error: {trainer}: exit {done.returncode}\n{done.stderr[-3000:]}")
    line = [l for l in done.stdout.splitlines() if l.startswith("{")][-1]
    print(line, flush=True)
    return json.loads(line)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--max-steps", type=int, default=-1, help="default: one epoch")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="sst2-hf-")
    hf = run("hf", out, a.max_steps)
    ours = run("trc", out, a.max_steps)
    print(f"ratios trc/transformers: train wall {ours['train_wall_s'] / hf['train_wall_s']:.2f}, "
          f"samples/s {ours['samples_per_s'] / hf['samples_per_s']:.2f}; dev accuracy "
          f"{ours['dev_accuracy']:.4f} vs {hf['dev_accuracy']:.4f}; evaluate() with compute_metrics "
          f"{ours['eval_accuracy']:.4f} vs {hf['eval_accuracy']:.4f}")


if __name__ == "__main__":
    main()
