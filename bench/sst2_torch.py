#!/usr/bin/env python3
"""The SST-2 seed job in PyTorch, for comparison with trc-run's run of it.

    .venv/bin/python bench/sst2_torch.py [--dir build/sst2] [--threads 2]

Trains scripts/export_models.py's GPT2Classifier (the same sizes, seed and
GPT-2 initialization as scripts/sst2_example.sh's export, so the same
initial weights) with PyTorch 1.13 on DIR/train.npz for one epoch, on the
*same batches in the same order* trc-run reads with --shuffle --seed 1
(RowLoader's per-epoch Feistel permutation, re-implemented below), with
the same AdamW (lr 1e-3, weight decay 0.01) and the same linear schedule
(100 warm-up steps, then linear decay to 0), then evaluates DIR/dev.npz.
Prints PyTorch's train_loss, train_runtime, train_samples_per_second,
eval_loss and eval_accuracy, and, given trc-run's DIR/metrics.jsonl, trc's
numbers beside them, the samples/s ratio and how far the two loss curves
drift apart. Precondition: scripts/sst2_example.sh has written DIR.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def shuffled(k, n, seed, epoch):
    """runtime/train/DataLoader.cpp's shuffledWindow: a 6-round Feistel
    bijection of [0, n) keyed by (seed, epoch), with cycle-walking."""
    if n <= 1:
        return 0
    bits = max((n - 1).bit_length(), 2)
    bits += bits & 1
    half = bits // 2
    mask = (1 << half) - 1
    base = splitmix64(seed ^ splitmix64(epoch))
    keys = [splitmix64((base + r * 0x632BE59BD9B4E019) & M64) for r in range(6)]
    x = k
    while True:
        left, right = x >> half, x & mask
        for key in keys:
            left, right = right, left ^ (splitmix64(right ^ key) & mask)
        x = (left << half) | right
        if x < n:
            return x


def learning_rate(step, lr, warmup, total):
    """LrSchedule.h's linear schedule with warm-up, min 0."""
    if step < warmup:
        return lr * (step + 1) / warmup
    return lr * max(0.0, 1.0 - (step - warmup) / (total - warmup))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", default=os.path.join(ROOT, "build", "sst2"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--steps", type=int, help="default: one epoch (the schedule's length "
                   "stays one epoch's, so a shorter run follows the same curve)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import export_models as em
    em.configure("small")
    em.VOCAB = 4096
    model = em.build("gpt2cls", init="gpt2")
    train, dev = (np.load(os.path.join(a.dir, f"{s}.npz")) for s in ("train", "dev"))
    ids, labels = torch.from_numpy(train["input_ids"]), torch.from_numpy(train["labels"])
    n = len(labels)
    steps = (n + a.batch - 1) // a.batch
    perms = {}

    def row(r):
        epoch = r // n
        if epoch not in perms:
            perms[epoch] = [shuffled(k, n, a.seed, epoch) for k in range(n)]
        return perms[epoch][r % n]

    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    losses, seconds = [], 0.0
    for step in range(a.steps or steps):
        rows = torch.tensor([row(step * a.batch + i) for i in range(a.batch)])
        x, y = ids[rows], labels[rows]
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, a.lr, 100, steps)
        start = time.perf_counter()
        opt.zero_grad()
        loss, _ = model(x, y)
        loss.backward()
        opt.step()
        seconds += time.perf_counter() - start
        losses.append(float(loss))
    with torch.no_grad():
        loss, logits = model(torch.from_numpy(dev["input_ids"]), torch.from_numpy(dev["labels"]))
        accuracy = float((logits.argmax(1) == torch.from_numpy(dev["labels"])).float().mean())
    torch_result = {"train_loss": sum(losses) / len(losses), "train_runtime": seconds,
                    "train_samples_per_second": len(losses) * a.batch / seconds,
                    "eval_loss": float(loss), "eval_accuracy": accuracy}
    print("pytorch:", json.dumps({k: round(v, 4) for k, v in torch_result.items()}))
    metrics = os.path.join(a.dir, "metrics.jsonl")
    if not os.path.exists(metrics):
        return
    rows = [json.loads(line) for line in open(metrics)][:len(losses)]
    trc_seconds = sum(r["step_time_ms"] for r in rows) / 1000
    trc = {"train_loss": sum(r["loss"] for r in rows) / len(rows), "train_runtime": trc_seconds,
           "train_samples_per_second": len(rows) * a.batch / trc_seconds,
           "eval_loss": rows[-1].get("eval_loss", math.nan),
           "eval_accuracy": rows[-1].get("eval_accuracy", math.nan)}
    print("trc:    ", json.dumps({k: round(v, 4) for k, v in trc.items()}))
    drift = [abs(r["loss"] - t) / abs(t) for r, t in zip(rows, losses)]
    first = next((i + 1 for i, d in enumerate(drift) if d > 1e-3), None)
    print(f"trc samples/s over PyTorch's: {trc['train_samples_per_second'] / torch_result['train_samples_per_second']:.2f}x; "
          f"step losses within 1e-5 for the first {sum(1 for d in drift[:10] if d < 1e-5)} of 10 steps, "
          f"first above 1e-3 at step {first}; largest relative difference {max(drift):.2e}")


if __name__ == "__main__":
    main()
