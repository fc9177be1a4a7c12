#!/usr/bin/env python3
"""Trains one model family of scripts/export_hf.py (transformers' own classes,
torchvision's ResNet-18) with trc-run and with PyTorch from the same weights
on the same labelled rows with AdamW, and evaluates its exported forward in
trc-run and in onnxruntime.

    hf_parity.py WORKDIR --family F [--static] [--steps 20] [--batch 4] [--lr 1e-3]
        [--train-batch B] [--loss-tolerance 1e-5] [--trc-run trc-run]

--batch is the export's example batch (with --static, the batch it is traced
at); --train-batch (default: --batch) the batch both train at: a static
export at another batch is re-specialized by trc-run (README "Static shapes").

1. Forward: the exported model (inputs and labels in; loss, and a
   classifier's logits, out) on the first --batch rows, in trc-run and in
   onnxruntime (compare_with_onnxruntime.compare: every output within 1e-4
   of its largest magnitude).
2. Training: --steps AdamW steps with trc-run (--data F.npz) and in PyTorch
   (export_hf.reference_losses); every step's loss within --loss-tolerance
   relative (1e-5). Models with batch normalization: the running statistics
   trc-run --export-onnx writes against PyTorch's (check_running_stats).
Prints one line per output and a summary line "F: N AdamW steps, losses
A -> B; max relative loss difference D"; a failure is an "error: ..." line
and exit status 1.
"""
import argparse
import copy
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
    p.add_argument("--train-batch", type=int, help="the training batch (default: --batch)")
    p.add_argument("--loss-tolerance", type=float, default=1e-5)
    p.add_argument("--trc-run", default="trc-run")
    a = p.parse_args()
    train_batch = a.train_batch or a.batch
    if not shutil.which(a.trc_run):
        sys.exit(f"error: --trc-run: no program '{a.trc_run}'")
    os.makedirs(a.workdir, exist_ok=True)

    model, data = export_hf.build(a.family)
    model_path = os.path.join(a.workdir, a.family + ".onnx")
    rows_path = os.path.join(a.workdir, a.family + ".npz")
    export_hf.export(model, data, model_path, a.batch, not a.static)
    start = copy.deepcopy(model)  # as exported (the export's trace moved its buffers)
    np.savez(rows_path, **data)

    if not compare(model_path, {k: v[:a.batch] for k, v in data.items()}, a.trc_run,
                   rtol=FORWARD_TOLERANCE, by_max=True):
        sys.exit(f"error: {a.family}: the forward differs from onnxruntime's")

    metrics = os.path.join(a.workdir, a.family + ".jsonl")
    trained_path = os.path.join(a.workdir, a.family + ".trained.onnx")
    run = subprocess.run(
        [a.trc_run, model_path, "--device", "cpu", "--data", rows_path,
         "--batch-size", str(train_batch), "--steps", str(a.steps),
         "--optimizer", "adamw", "--lr", str(a.lr), "--metrics", metrics,
         "--export-onnx", trained_path],
        capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("error: trc-run failed: " + run.stderr.strip())
    with open(metrics) as f:
        trc_losses = [json.loads(line)["loss"] for line in f if line.strip()]

    running_stats = export_hf.track_onnx_running_stats(model)
    torch_losses = export_hf.reference_losses(model, data, a.steps, train_batch, a.lr)
    if len(trc_losses) != len(torch_losses):
        sys.exit(f"error: {a.family}: trc-run logged {len(trc_losses)} steps, not {a.steps}")
    diffs = [abs(t - r) / abs(r) for t, r in zip(trc_losses, torch_losses)]
    worst = max(range(len(diffs)), key=diffs.__getitem__)
    print(f"{a.family}: {a.steps} AdamW steps, losses {torch_losses[0]:.4f} -> "
          f"{torch_losses[-1]:.4f}; max relative loss difference {diffs[worst]:.2e}")
    if diffs[worst] > a.loss_tolerance:
        sys.exit(f"error: {a.family}: step {worst + 1}: trc loss {trc_losses[worst]!r}, "
                 f"PyTorch {torch_losses[worst]!r} (relative {diffs[worst]:.2e} > {a.loss_tolerance:g})")
    if running_stats:
        # After 20 steps, and (exactly, the update's arithmetic) after 2.
        check_running_stats(a.family, a.steps, trained_path, running_stats, model_path, 5e-3)
        short_path = os.path.join(a.workdir, a.family + ".2steps.onnx")
        run = subprocess.run(
            [a.trc_run, model_path, "--device", "cpu", "--data", rows_path,
             "--batch-size", str(a.batch), "--steps", "2", "--optimizer", "adamw",
             "--lr", str(a.lr), "--export-onnx", short_path], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit("error: trc-run failed: " + run.stderr.strip())
        short_stats = export_hf.track_onnx_running_stats(start)
        export_hf.reference_losses(start, data, 2, a.batch, a.lr)
        check_running_stats(a.family, 2, short_path, short_stats, model_path, 1e-4)


def check_running_stats(family, steps, trained_path, expected, exported_path, tolerance):
    """Batch normalization's running statistics after `steps` steps: trc's
    (the weights trc-run --export-onnx wrote) against PyTorch's, updated as
    ONNX defines it (export_hf.track_onnx_running_stats), each within
    `tolerance` of its largest magnitude, and changed from the exported
    ones. Over 20 steps the statistics are a more sensitive probe than the
    losses: AdamW's first steps move each weight by about lr whatever its
    gradient's size, so weights whose gradients are near zero follow
    rounding; PyTorch's own float32 and float64 runs part by 1.8e-3 (trc's
    float32 from PyTorch's by 8e-4 to 2.1e-3 with OpenBLAS's or trc's GEMM),
    hence 5e-3 there; after 2 steps, where nothing has diverged, 1e-4 (they
    differ by under 1e-5: a batch mean near 0 sums terms 100 times its
    size in another order). A wrong momentum would be off by its whole
    update, PyTorch's unbiased variance by 0.6% after 2 steps."""
    import onnx
    from onnx import numpy_helper
    trained = {t.name: numpy_helper.to_array(t) for t in onnx.load(trained_path).graph.initializer}
    initial = {t.name: numpy_helper.to_array(t) for t in onnx.load(exported_path).graph.initializer}
    worst, moved = 0.0, 0
    for name, want in expected.items():
        if name not in trained:
            sys.exit(f"error: {family}: the trained model has no initializer '{name}'")
        want = want.detach().numpy()
        got = trained[name]
        worst = max(worst, float(np.abs(got - want).max()) / max(float(np.abs(want).max()), 1e-30))
        moved += int(not np.array_equal(got, initial[name]))
    print(f"{family}: {len(expected)} running statistics after {steps} steps, {moved} changed by "
          f"training; max difference from PyTorch {worst:.2e} of the largest magnitude")
    if worst > tolerance or moved != len(expected):
        sys.exit(f"error: {family}: running statistics after {steps} steps differ from PyTorch's by "
                 f"{worst:.2e} ({tolerance:g}), or {len(expected) - moved} did not change")


if __name__ == "__main__":
    main()
