#!/usr/bin/env python3
"""Runs trc's training-step optimizer (trc-build-train-step, compiled for the
CPU) and torch.optim side by side for a few steps on the same parameters and
gradients, and prints the largest relative difference of the parameters.

    check_optimizer.py WORKDIR --optimizer adamw|adam|sgd [--momentum M]
        [--nesterov] [--weight-decay W] [--clip C] [--steps N]

trc's step is compiled once per step with the current parameters as its
initial weights (a test harness: trc-run's own loop keeps them in memory).
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch

SHAPES = {"w": (2, 3), "b": (3,)}


def tensor_text(a):
    rows = np.array2string(a, separator=", ", floatmode="unique", threshold=1 << 20)
    return rows.replace("\n", "")


def module_text(params):
    lines = ["module {"]
    for name, value in params.items():
        t = "x".join(map(str, value.shape)) + "xf32"
        lines.append(f'  trc.parameter @{name} : tensor<{t}> = dense<{tensor_text(value)}> : tensor<{t}>')
    args = ", ".join(f'%{n}: tensor<{"x".join(map(str, v.shape))}xf32> {{trc.param = "{n}"}}'
                     for n, v in params.items())
    grads = ", ".join(f'%g{n}: tensor<{"x".join(map(str, v.shape))}xf32> {{trc.input = "g{n}"}}'
                      for n, v in params.items())
    results = ", ".join(f'tensor<{"x".join(map(str, v.shape))}xf32> {{trc.grad_of = "{n}"}}'
                        for n, v in params.items())
    lines.append(f"  func.func @main({args}) -> tensor<f32> {{")
    lines.append("    %l = trc.constant dense<0.0> : tensor<f32>")
    lines.append("    return %l : tensor<f32>\n  }")
    lines.append(f"  func.func @main_grad({args}, {grads}) -> (tensor<f32>, {results}) {{")
    lines.append("    %l = trc.constant dense<0.0> : tensor<f32>")
    types = ", ".join(f'tensor<{"x".join(map(str, v.shape))}xf32>' for v in params.values())
    gvals = ", ".join(f"%g{n}" for n in params)
    lines.append(f"    return %l, {gvals} : tensor<f32>, {types}\n  }}\n}}")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--optimizer", default="adamw")
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--weight-decay", type=float)
    p.add_argument("--clip", type=float, default=0.0)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--bin", default="", help="folder with trc-opt and trc-run (default: PATH)")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    rng = np.random.default_rng(0)
    params = {n: rng.standard_normal(s).astype(np.float32) for n, s in SHAPES.items()}
    torch_params = {n: torch.nn.Parameter(torch.tensor(v)) for n, v in params.items()}
    kw = {"lr": a.lr}
    if a.weight_decay is not None:
        kw["weight_decay"] = a.weight_decay
    if a.optimizer == "sgd":
        opt = torch.optim.SGD(torch_params.values(), momentum=a.momentum, nesterov=a.nesterov, **kw)
        slots = ["sgd.momentum"] if a.momentum else []
    else:
        opt = (torch.optim.AdamW if a.optimizer == "adamw" else torch.optim.Adam)(torch_params.values(), **kw)
        slots = ["adam.m", "adam.v"]
    state = {f"{s}:{n}": np.zeros(SHAPES[n], np.float32) for s in slots for n in SHAPES}
    options = [f"optimizer={a.optimizer}", f"momentum={a.momentum}", f"clip-norm={a.clip}"]
    if a.nesterov:
        options.append("nesterov=true")
    if a.weight_decay is not None:
        options.append(f"weight-decay={a.weight_decay}")
    worst = 0.0
    for step in range(1, a.steps + 1):
        grads = {n: rng.standard_normal(s).astype(np.float32) for n, s in SHAPES.items()}
        # torch
        opt.zero_grad()
        for n, t in torch_params.items():
            t.grad = torch.tensor(grads[n])
        if a.clip:
            torch.nn.utils.clip_grad_norm_(torch_params.values(), a.clip)
        opt.step()
        # trc
        d = os.path.join(a.workdir, f"step{step}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "step.mlir"), "w") as f:
            f.write(module_text(params))
        art = os.path.join(d, "artifact")
        subprocess.run([os.path.join(a.bin, "trc-opt") if a.bin else "trc-opt", os.path.join(d, "step.mlir"),
                        "--trc-build-train-step=" + " ".join(options),
                        "--trc-compile=target=cpu entry=train_step", "-o", art],
                       check=True, capture_output=True)
        feeds = {f"g{n}": g for n, g in grads.items()}
        feeds.update(state)
        feeds["trc.lr"] = np.array(a.lr, np.float32)
        feeds["trc.step"] = np.array(step, np.float32)
        cmd = [os.path.join(a.bin, "trc-run") if a.bin else "trc-run", art, "--output-dir", os.path.join(d, "out")]
        for name, value in feeds.items():
            path = os.path.join(d, name.replace(":", "_") + ".npy")
            np.save(path, value)
            cmd += ["--input", f"{name}={path}"]
        subprocess.run(cmd, check=True, capture_output=True)
        out = lambda name: np.load(os.path.join(d, "out", name + ".npy"))
        params = {n: out(f"update:{n}") for n in SHAPES}
        state = {k: out(f"update:{k}") for k in state}
        norm = float(out("grad_norm"))
        want_norm = float(np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads.values())))
        assert abs(norm - want_norm) <= 1e-5 * want_norm, (norm, want_norm)
        for n in SHAPES:
            want = torch_params[n].detach().numpy()
            err = float(np.max(np.abs(params[n] - want)) / max(1e-12, np.max(np.abs(want))))
            worst = max(worst, err)
    print(f"{a.optimizer}: {a.steps} steps, max relative parameter difference {worst:.2e}")
    sys.exit(0 if worst < 1e-5 else 1)


if __name__ == "__main__":
    main()
