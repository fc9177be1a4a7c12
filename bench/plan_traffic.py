#!/usr/bin/env python3
"""The planner's counts of trc's CPU step, from the IR trc compiles.

    python3 bench/plan_traffic.py [--trc-opt PATH] [--quick]

lib/Plan/StepWork.h prices a GPT layer on the CPU by its unfused traffic:
every op of the training step reading its operands and writing its result
(trc-print-fusion-summary's "before" bytes). This script derives those
counts: it exports GPT-2-style models of several shapes (layers 2/4,
hidden 128/256, heads 4/8, vocabulary 256/512, MLP width 512/1024),
compiles their training steps with trc-opt --trc-training-pipeline at
batch x sequence 8x64, 16x64 and 8x128 and tensor degrees 1, 2, 4 (with
and without sequence parallelism), reads @main_grad's bytes (forward and
backward; the optimizer is @train_step), takes out the matrix products'
operands and results (priced by shape), and fits, per rank, in elements:

    L T (rep h + split h/t + ffn f/t + attn a s/t) + L weights (4h^2 + 2hf)/t
      + T (headH h + headV V/t)

(without SP; with SP `rep` folds into `split`) by non-negative least
squares on the relative error. It prints the coefficients, the worst and
mean relative error over the steps, and the ops (kernels) per layer and
outside the layers. Pipelines: the 4-layer shape split into 4 stages
(--trc-training-pipeline="pipeline-stages=4") at microbatches of 4, 8 and 16
rows; a middle stage (one layer) runs its forward, backward and weights
programs once per microbatch, and what it moves beyond the layer's T-terms
above is fitted as  pw w + pa T h  per layer and microbatch (StepWork.cpp
adds pw - weights and pa). StepWork.cpp's constants are this output,
rounded.
Counting, not timing: the numbers do not depend on the machine.
"""
import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

SHAPES = [  # layers, hidden, heads, vocabulary, MLP width
    (2, 256, 8, 256, 1024), (4, 256, 8, 256, 1024), (4, 128, 4, 256, 512),
    (4, 256, 8, 512, 1024), (4, 256, 8, 256, 512), (4, 256, 4, 256, 1024)]
DIMS = [(8, 64), (16, 64), (8, 128)]
TENSOR = [(1, False), (2, False), (4, False), (2, True), (4, True)]


def export(shape, out):
    import torch.nn as nn
    import export_models as em
    layers, hidden, heads, vocab, ffn = shape
    em.SIZES["plan"] = dict(VOCAB=vocab, CONTEXT=256, WIDTH=hidden, HEADS=heads, LAYERS=layers)
    em.configure("plan")
    init = em.GPT2Block.__init__

    def block(self, dropout):
        init(self, dropout)
        self.c_fc = nn.Linear(hidden, ffn)
        self.mlp_proj = nn.Linear(ffn, hidden)
    em.GPT2Block.__init__ = block
    try:
        path = os.path.join(out, "g_%d_%d_%d_%d_%d.onnx" % shape)
        em.export(em.build("gpt2"), path, 17, True)
    finally:
        em.GPT2Block.__init__ = init
    return path


def summary(trc_opt, model, b, s, t, sp):
    out = subprocess.run([trc_opt, model, "--dim", f"batch={b},sequence={s}",
                          f"--trc-training-pipeline=tensor-degree={t} sequence-parallel={str(sp).lower()}",
                          "--trc-print-fusion-summary", "-o", os.devnull],
                         check=True, capture_output=True, text=True).stdout
    grad = re.search(r"@main_grad: kernels (\d+) -> \d+, bytes (\d+)", out)
    return int(grad.group(1)), int(grad.group(2)) / 4  # ops, f32 elements


def stage_elements(trc_opt, model, b, s, stages, stage):
    """Unfused elements of one pipeline stage's per-microbatch programs."""
    out = subprocess.run([trc_opt, model, "--dim", f"batch={b},sequence={s}",
                          f"--trc-training-pipeline=pipeline-stages={stages}",
                          "--trc-print-fusion-summary", "-o", os.devnull],
                         check=True, capture_output=True, text=True).stdout
    total = 0
    for program in ("forward", "backward", "weights"):
        m = re.search(rf"@stage{stage}_{program}: kernels \d+ -> \d+, bytes (\d+)", out)
        total += int(m.group(1)) if m else 0
    return total / 4


def layer_matmul_elements(h, a, f, b, s, t):
    """Operands and results of one layer's products, per rank: each forward
    product (m x k by k x n) and its two backward ones move the same."""
    T = b * s
    fwd = ((T * h + 3 * h * h / t + 3 * T * h / t) + (2 * T * h / t + b * a / t * s * s) +
           (b * a / t * s * s + 2 * T * h / t) + (T * h / t + h * h / t + T * h) +
           (T * h + h * f / t + T * f / t) + (T * f / t + f * h / t + T * h))
    return 3 * fwd


def matmul_elements(L, h, a, V, f, b, s, t):
    """The step's products: the layers' and the logits'."""
    T = b * s
    return L * layer_matmul_elements(h, a, f, b, s, t) + 3 * (T * h + V * h / t + T * V / t)


def nnls(A, y):
    """Non-negative least squares by enumerating feature subsets (few)."""
    best = None
    n = A.shape[1]
    for k in range(1, n + 1):
        for sub in itertools.combinations(range(n), k):
            c, *_ = np.linalg.lstsq(A[:, sub], y, rcond=None)
            if (c < 0).any():
                continue
            e = np.sum((A[:, sub] @ c - y) ** 2)
            if best is None or e < best[0]:
                full = np.zeros(n)
                full[list(sub)] = c
                best = (e, full)
    return best[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trc-opt", default=os.path.join(ROOT, "build", "tools", "trc-opt",
                                                          "trc-opt"))
    parser.add_argument("--quick", action="store_true", help="two shapes only")
    args = parser.parse_args()
    import warnings
    warnings.filterwarnings("ignore")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for shape in SHAPES[:2] if args.quick else SHAPES:
            model = export(shape, work)
            L, h, a, V, f = shape
            for (b, s), (t, sp) in itertools.product(DIMS, TENSOR):
                ops, elements = summary(args.trc_opt, model, b, s, t, sp)
                rows.append(dict(L=L, h=h, a=a, V=V, f=f, b=b, s=s, t=t, sp=sp, ops=ops,
                                 other=elements - matmul_elements(L, h, a, V, f, b, s, t)))
    names = ["rep h", "split h/t", "ffn f/t", "attn a s/t", "weights", "headH h", "headV V/t"]
    for sp in (False, True):
        chosen = [r for r in rows if r["sp"] == sp]
        X = np.array([[r["L"] * r["b"] * r["s"] * r["h"] * (1 / r["t"] if sp else 1),
                       r["L"] * r["b"] * r["s"] * r["h"] / r["t"],
                       r["L"] * r["b"] * r["s"] * r["f"] / r["t"],
                       r["L"] * r["b"] * r["s"] * r["a"] * r["s"] / r["t"],
                       r["L"] * (4 * r["h"] ** 2 + 2 * r["h"] * r["f"]) / r["t"],
                       r["b"] * r["s"] * r["h"], r["b"] * r["s"] * r["V"] / r["t"]]
                      for r in chosen])
        if sp:  # rep and split are the same feature with SP
            X = np.delete(X, 0, axis=1)
        y = np.array([r["other"] for r in chosen])
        c = nnls(X / y[:, None], np.ones(len(y)))
        if not sp:
            coefficients = c
        rel = np.abs(X @ c - y) / y
        print(f"{'with' if sp else 'without'} sequence parallelism: {len(chosen)} steps, "
              f"worst {100 * rel.max():.1f}%, mean {100 * rel.mean():.1f}%")
        for name, value in zip(names[1:] if sp else names, c):
            print(f"  {name:<11}{value:9.2f}")
    pipeline = []
    with tempfile.TemporaryDirectory() as work:
        L, h, a, V, f = SHAPES[1]
        model = export(SHAPES[1], work)
        for b in (4, 8, 16):
            s = 64
            T = b * s
            layer_t = T * (coefficients[0] * h + coefficients[1] * h + coefficients[2] * f +
                           coefficients[3] * a * s)
            rest = (stage_elements(args.trc_opt, model, b, s, 4, 1) -
                    layer_matmul_elements(h, a, f, b, s, 1) - layer_t)
            pipeline.append(([4 * h * h + 2 * h * f, T * h], rest))
    X = np.array([x for x, _ in pipeline])
    y = np.array([r for _, r in pipeline])
    c = nnls(X / y[:, None], np.ones(len(y)))
    print(f"pipeline stage, per layer and microbatch: {c[0]:.2f} w + {c[1]:.2f} T h "
          f"(worst {100 * np.max(np.abs(X @ c - y) / y):.1f}%)")
    for (t, sp) in TENSOR:
        by_layers = {r["L"]: r["ops"] for r in rows if r["t"] == t and r["sp"] == sp
                     and r["h"] == 256 and r["a"] == 8 and r["V"] == 256 and r["f"] == 1024}
        if 2 in by_layers and 4 in by_layers:
            per_layer = (by_layers[4] - by_layers[2]) / 2
            print(f"ops t={t}{' sp' if sp else ''}: {per_layer:.0f} per layer, "
                  f"{by_layers[2] - 2 * per_layer:.0f} outside the layers")


if __name__ == "__main__":
    main()
