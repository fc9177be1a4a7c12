#!/usr/bin/env python3
"""Trains one model family of scripts/export_hf.py (transformers' own classes,
torchvision's ResNet-18) with trc-run and with PyTorch from the same weights
on the same labelled rows with AdamW, and evaluates its exported forward in
trc-run and in onnxruntime.

    hf_parity.py WORKDIR --family F [--static] [--steps 20] [--batch 4] [--lr 1e-3]
        [--loss-tolerance 1e-5] [--trc-run trc-run]

1. Forward: the exported model (inputs and labels in; loss, and a
   classifier's logits, out) on the first --batch rows, in trc-run and in
   onnxruntime (compare_with_onnxruntime.compare: every output within 1e-4
   of its largest magnitude).
2. Training: --steps AdamW steps with trc-run (--data F.npz) and in PyTorch
   (export_hf.reference_losses); every step's loss within --loss-tolerance
   relative (1e-5).
Prints one line per output and a summary line "F: N AdamW steps, losses
A -> B; max relative loss difference D"; a failure is an "error: ..." line
and exit status 1.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts")
sys.path.insert(0, SCRIPTS)
import export_hf  # noqa: E402
from compare_with_onnxruntime import compare  # noqa: E402

FORWARD_TOLERANCE = 1e-4


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--family", required=True)
    p.add_argument("--static", action="store_true", help="export without a dynamic batch axis")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--loss-tolerance", type=float, default=1e-5)
    p.add_argument("--trc-run", default="trc-run")
    a = p.parse_args()
    if not shutil.which(a.trc_run):
        sys.exit(f"error: --trc-run: no program '{a.trc_run}'")
    os.makedirs(a.workdir, exist_ok=True)

    model, data = export_hf.build(a.family)
    model_path = os.path.join(a.workdir, a.family + ".onnx")
    rows_path = os.path.join(a.workdir, a.family + ".npz")
    export_hf.export(model, data, model_path, a.batch, not a.static)
    np.savez(rows_path, **data)

    if not compare(model_path, {k: v[:a.batch] for k, v in data.items()}, a.trc_run,
                   rtol=FORWARD_TOLERANCE, by_max=True):
        sys.exit(f"error: {a.family}: the forward differs from onnxruntime's")

    metrics = os.path.join(a.workdir, a.family + ".jsonl")
    run = subprocess.run(
        [a.trc_run, model_path, "--device", "cpu", "--data", rows_path,
         "--batch-size", str(a.batch), "--steps", str(a.steps),
         "--optimizer", "adamw", "--lr", str(a.lr), "--metrics", metrics],
        capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("error: trc-run failed: " + run.stderr.strip())
    with open(metrics) as f:
        trc_losses = [json.loads(line)["loss"] for line in f if line.strip()]

    torch_losses = export_hf.reference_losses(model, data, a.steps, a.batch, a.lr)
    if len(trc_losses) != len(torch_losses):
        sys.exit(f"error: {a.family}: trc-run logged {len(trc_losses)} steps, not {a.steps}")
    diffs = [abs(t - r) / abs(r) for t, r in zip(trc_losses, torch_losses)]
    worst = max(range(len(diffs)), key=diffs.__getitem__)
    print(f"{a.family}: {a.steps} AdamW steps, losses {torch_losses[0]:.4f} -> "
          f"{torch_losses[-1]:.4f}; max relative loss difference {diffs[worst]:.2e}")
    if diffs[worst] > a.loss_tolerance:
        sys.exit(f"error: {a.family}: step {worst + 1}: trc loss {trc_losses[worst]!r}, "
                 f"PyTorch {torch_losses[worst]!r} (relative {diffs[worst]:.2e} > {a.loss_tolerance:g})")


if __name__ == "__main__":
    main()
