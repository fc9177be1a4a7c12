#!/usr/bin/env python3
"""Compares the gradients trc-autodiff computes for an exported model with
PyTorch's: same weights (scripts/export_models.py's model class and seed,
checked against the ONNX initializers), same batch.

    gradients_vs_torch.py ARTIFACT WORKDIR --onnx MODEL.onnx [--model gpt2]
        [--trc-run trc-run]

ARTIFACT is @main_grad of MODEL.onnx compiled for the CPU (trc-opt
--trc-parameters-to-arguments --trc-autodiff --trc-compile="entry=main_grad").
It is run once on the export's example batch (input_ids, targets); its
outputs are the loss and grad:<parameter> for every trainable parameter.
PyTorch runs the same model in float32 and backpropagates.

Prints one line per parameter and a summary; exits 1 when the loss differs
by more than 1e-5 relative, a parameter's gradient norm by more than 1e-4
relative, or any gradient element by more than 1e-3 of that gradient's
largest magnitude, or when the parameters with gradients differ.

A gradient that is zero in exact arithmetic (BERT's attention key bias:
softmax ignores a constant added to a row of scores) is rounding noise in
both, different in any two implementations: when torch's norm is below 1e-6
of the largest gradient norm, trc's must be too.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import export_models as em  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("artifact")
    p.add_argument("workdir")
    p.add_argument("--onnx", required=True)
    p.add_argument("--model", default="gpt2")
    p.add_argument("--trc-run", default="trc-run")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)

    em.configure("small")
    model = em.build(a.model)  # the export's weights: same class, same seed
    model.train()
    params = dict(model.named_parameters())
    initializers = {i.name: onnx.numpy_helper.to_array(i)
                    for i in onnx.load(a.onnx).graph.initializer}
    for name, value in params.items():
        if name not in initializers:
            sys.exit(f"error: parameter {name} is not an initializer of {a.onnx}")
        if not np.array_equal(initializers[name], value.detach().numpy()):
            sys.exit(f"error: {name}: the model's weights differ from {a.onnx}'s")

    ids, targets = em.example_inputs()
    inputs = {"input_ids": ids, "targets": targets}
    args = [a.trc_run, a.artifact, "--output-dir", os.path.join(a.workdir, "out")]
    for name, value in inputs.items():
        path = os.path.join(a.workdir, name + ".npy")
        np.save(path, value.numpy())
        args += ["--input", f"{name}={path}"]
    subprocess.run(args, check=True)

    loss = model(ids, targets)
    loss.backward()

    out = os.path.join(a.workdir, "out")
    got_loss = float(np.load(os.path.join(out, "loss.npy")))
    loss_error = abs(got_loss - loss.item()) / abs(loss.item())
    failed = loss_error > 1e-5
    print(f"loss: trc {got_loss:.7f} torch {loss.item():.7f} relative difference {loss_error:.2e}")

    files = {f[len("grad:"):-len(".npy")] for f in os.listdir(out) if f.startswith("grad:")}
    expected = {n for n, t in params.items() if t.grad is not None}
    if files != expected:
        print(f"FAIL: gradients for {sorted(files ^ expected)} on one side only")
        failed = True
    worst_norm = worst_element = 0.0
    largest = max(float(params[n].grad.norm()) for n in expected)
    for name in sorted(files & expected):
        got = np.load(os.path.join(out, f"grad:{name}.npy")).astype(np.float64)
        want = params[name].grad.numpy().astype(np.float64)
        if got.shape != want.shape:
            print(f"FAIL: {name}: shape {got.shape}, torch {want.shape}")
            failed = True
            continue
        norm = np.linalg.norm(want)
        if norm < 1e-6 * largest:
            bad = np.linalg.norm(got) >= 1e-6 * largest
            failed |= bad
            print(f"{'FAIL' if bad else 'ok  '} {name:28s} zero up to rounding: norm torch "
                  f"{norm:.1e}, trc {np.linalg.norm(got):.1e}")
            continue
        norm_error = abs(np.linalg.norm(got) - norm) / norm if norm else np.linalg.norm(got)
        scale = np.abs(want).max()
        element_error = np.abs(got - want).max() / scale if scale else np.abs(got).max()
        bad = norm_error > 1e-4 or element_error > 1e-3
        failed |= bad
        worst_norm = max(worst_norm, norm_error)
        worst_element = max(worst_element, element_error)
        print(f"{'FAIL' if bad else 'ok  '} {name:28s} norm {norm:.4e} "
              f"norm difference {norm_error:.2e} max element difference {element_error:.2e}")
    print(f"{a.model}: {len(files & expected)} gradients match torch: largest norm difference "
          f"{worst_norm:.2e}, largest element difference {worst_element:.2e}"
          if not failed else f"{a.model}: gradients differ from torch")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
