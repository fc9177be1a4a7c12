#!/usr/bin/env python3
"""BatchNormalization's running statistics under accumulation and pipeline
stages, for test/Training/pipeline-batch-norm.test.

  check_pipeline_batch_norm.py TRC_RUN MODEL.onnx ROWS.npz WORKDIR

MODEL is scripts/export_hf.py's ResNet-18 (40 running statistics). Each
run trains from the same weights and saves a checkpoint; the statistics are
read from it:
  * every forward updates them, as in PyTorch: one step of --grad-accum 2
    over 8 rows, at a learning rate too small to move a weight (SGD, 1e-30),
    leaves the statistics two steps of 4 rows leave (sequential updates);
  * a 2-stage pipeline with 2 microbatches (mpirun -np 2) gives the losses
    and statistics of --grad-accum 2 on one rank (SGD, 2 steps);
  * so does a 4-stage pipeline whose cut leaves two stages without
    parameters (4 microbatches against --grad-accum 4);
  * with data parallelism too (2 stages x 2 data ranks), those of 2
    data-parallel ranks with --grad-accum 2 (the stage's statistics
    averaged over its data ranks).
Prints one line per comparison; exits 1 on the first that differs by more
than 1e-6 (relative, losses) or 1e-5 (statistics).
"""
import json
import os
import sys

import numpy as np
from safetensors.numpy import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import compare, fail, train  # noqa: E402


def statistics(work, name, steps):
    tensors = load_file(os.path.join(work, name + ".ckpt", f"step-{steps}", "tensors.safetensors"))
    return {k: v for k, v in tensors.items() if "running_" in k}


def run(trc_run, model, rows, work, ranks, name, steps, config=None, extra=()):
    extra = ["--checkpoint-dir", os.path.join(work, name + ".ckpt"), "--checkpoint-every",
             str(steps), *extra]
    losses = train(trc_run, model, rows, work, ranks, name, steps, config, extra=extra,
                   batch=8 if "--batch-size" not in extra else None, seq_len=None)
    return losses, statistics(work, name, steps)


def same_statistics(label, a, b, initial):
    if len(a) != 40 or sorted(a) != sorted(b):
        fail(f"{label}: {len(a)} and {len(b)} running statistics, expected the same 40")
    moved = sum(not np.array_equal(a[k], initial[k]) for k in a)
    worst = max(float(np.abs(a[k] - b[k]).max() / (np.abs(a[k]).max() + 1e-12)) for k in a)
    print(f"{label}: {moved} of 40 running statistics moved, largest relative difference "
          f"{worst:.1e}")
    if moved != 40 or worst > 1e-5:
        fail(f"{label}: the running statistics differ")


def main():
    if len(sys.argv) != 5:
        fail(__doc__)
    trc_run, model, rows, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    import onnx
    from onnx import numpy_helper
    initial = {i.name: numpy_helper.to_array(i) for i in onnx.load(model).graph.initializer
               if "running_" in i.name}

    frozen = ["--optimizer", "sgd", "--lr", "1e-30"]
    _, accumulated = run(trc_run, model, rows, work, 1, "accum-sgd", 1,
                         extra=frozen + ["--grad-accum", "2"])
    _, stepped = run(trc_run, model, rows, work, 1, "steps-sgd", 2,
                     extra=frozen + ["--batch-size", "4"])
    same_statistics("--grad-accum 2 against 2 steps of 4 rows", accumulated, stepped, initial)

    # SGD: AdamW's normalization magnifies the last bits of tiny gradients,
    # and the second step's statistics would measure that instead.
    sgd = ["--optimizer", "sgd", "--lr", "0.01"]

    def pipeline_against_accumulation(label, ranks, config, ref_ranks, ref_config, accum):
        name = label.replace(" ", "-")
        ref_losses, ref = run(trc_run, model, rows, work, ref_ranks, name + "-ref", 2, ref_config,
                              extra=sgd + ["--grad-accum", str(accum)])
        losses, staged = run(trc_run, model, rows, work, ranks, name, 2, config, extra=sgd)
        compare(f"{label}: losses", ref_losses, losses, tolerance=1e-6)
        same_statistics(label, staged, ref, initial)

    pipeline_against_accumulation("pipeline 2 stages x 2 microbatches", 2,
                                  {"pipeline_parallel_degree": 2, "microbatches": 2}, 1, None, 2)
    # 4 stages: the cut leaves two of them (pooling) without parameters.
    pipeline_against_accumulation("pipeline 4 stages x 4 microbatches", 4,
                                  {"pipeline_parallel_degree": 4, "microbatches": 4}, 1, None, 4)
    pipeline_against_accumulation("pipeline 2 stages x 2 data ranks", 4,
                                  {"pipeline_parallel_degree": 2, "microbatches": 2, "ddp": True},
                                  2, {"ddp": True}, 2)

if __name__ == "__main__":
    main()
