#!/usr/bin/env python3
"""Trains one of scripts/export_models.py's models with trc-run and with
PyTorch from the same weights on the same llm.c-style batches with AdamW,
then compares the per-step losses (metrics.jsonl) and the final weights
(trc's last checkpoint, safetensors).

    train_parity.py WORKDIR --model gpt2|bert|gptj [--steps 20] [--batch 4]
        [--seq 32] [--lr 1e-3] [--trc-run trc-run]

Prints the largest relative differences; exits 1 if losses differ by more
than 1e-4 relative or weights by more than 1e-3 (relative to each tensor's
largest magnitude).

The attention keys' bias has a gradient that is zero in exact arithmetic
(softmax ignores a constant added to a row of scores); in floats it is
rounding noise, which Adam normalizes into steps of about lr in random
directions, different in any two implementations. Those elements are left
out of the weight comparison (and named in the output).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
from safetensors.numpy import load_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import export_hf  # noqa: E402
import export_models as em  # noqa: E402

# Parameter elements whose exact gradient is zero (see above).
ZERO_GRADIENT = {
    "gpt2": lambda name: slice(em.WIDTH, 2 * em.WIDTH) if name.endswith("c_attn.bias") else None,
    "bert": lambda name: slice(None) if name.endswith("key.bias") else None,
    "gptj": lambda name: None,
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--model", default="gpt2")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--trc-run", default="trc-run")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    torch.manual_seed(0)

    # Deterministic text data (bytes are tokens).
    rng = np.random.default_rng(1)
    words = [b"the", b"king", b"shall", b"speak", b"of", b"love", b"and", b"war", b"to", b"thee"]
    text = b" ".join(words[i] for i in rng.integers(0, len(words), 4000)) + b".\n"
    data_path = os.path.join(a.workdir, "data.txt")
    open(data_path, "wb").write(text)

    model = em.build(a.model)
    model_path = os.path.join(a.workdir, "model.onnx")
    em.export(model, model_path, 17, dynamic=True)

    ckpt = os.path.join(a.workdir, "ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)  # a fresh run into another run's folder is refused
    metrics = os.path.join(a.workdir, "metrics.jsonl")
    run = subprocess.run(
        [a.trc_run, model_path, "--device", "cpu", "--data", data_path,
         "--batch-size", str(a.batch), "--seq-len", str(a.seq), "--steps", str(a.steps),
         "--optimizer", "adamw", "--lr", str(a.lr), "--metrics", metrics,
         "--checkpoint-dir", ckpt, "--checkpoint-every", str(a.steps)],
        capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("error: trc-run failed: " + run.stderr.strip())
    trc_losses = [json.loads(line)["loss"] for line in open(metrics)]

    # PyTorch on the same batches (llm.c semantics), as rows: step s trains
    # on rows [sB, sB+B) (export_hf.reference_losses, AdamW as trc-run).
    tokens = np.frombuffer(text, dtype=np.uint8).astype(np.int64)
    pos, bt = 0, a.batch * a.seq
    inputs, targets = [], []
    for _ in range(a.steps):
        if pos + bt + 1 > len(tokens):
            pos = 0
        window = tokens[pos:pos + bt + 1]
        inputs.append(window[:-1].reshape(a.batch, a.seq))
        targets.append(window[1:].reshape(a.batch, a.seq))
        pos += bt
    rows = {"input_ids": np.concatenate(inputs), "targets": np.concatenate(targets)}
    torch_losses = export_hf.reference_losses(model, rows, a.steps, a.batch, a.lr)

    loss_err = max(abs(t - r) / abs(r) for t, r in zip(trc_losses, torch_losses))
    latest = open(os.path.join(ckpt, "latest")).read().strip()
    trained = load_file(os.path.join(ckpt, os.path.basename(latest), "tensors.safetensors"))
    weight_err, skipped = 0.0, []
    for name, param in model.named_parameters():
        want = param.detach().numpy().copy()
        got = trained[name].copy()
        noise = ZERO_GRADIENT[a.model](name)
        if noise is not None:
            want[noise] = got[noise] = 0
            skipped.append(name)
        if not np.any(want):
            continue
        weight_err = max(weight_err, float(np.max(np.abs(got - want)) / np.max(np.abs(want))))
    print(f"{a.model}: {a.steps} AdamW steps, losses {torch_losses[0]:.4f} -> {torch_losses[-1]:.4f}; "
          f"max relative loss difference {loss_err:.2e}, max relative weight difference {weight_err:.2e}"
          + (f" (zero-gradient elements of {len(skipped)} tensors left out)" if skipped else ""))
    sys.exit(0 if loss_err <= 1e-4 and weight_err <= 1e-3 else 1)


if __name__ == "__main__":
    main()
