#!/usr/bin/env python3
"""Checks of trc-run's training options on metrics files (JSON lines), for
test/Training/loss-precision-accumulation.test and mixed-precision.test.

  same A.jsonl B.jsonl TOL
      per-step losses of two runs agree within TOL (relative)
  ignore-index MODEL.onnx DATA B T IDX METRICS.jsonl
      step 1's loss equals torch's cross_entropy(ignore_index=IDX) of the
      logits onnxruntime computes for the first llm.c batch of DATA
  loss-scale METRICS.jsonl
      fp16 dynamic loss scaling: the first steps overflow (skipped, scale
      halves each time), later steps are applied with a finite loss
  tracks FP32.jsonl LOW.jsonl TOL LAST
      the mean loss of the last LAST steps and the final step's loss agree
      within TOL (relative), and both runs learned (that mean is below the
      first step's loss)

Prints what it compared; exits 1 with the reason when a check fails.
"""
import json
import sys


def losses(path, key="loss"):
    with open(path) as f:
        return [json.loads(line)[key] for line in f if line.strip()]


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def same(a, b, tol):
    la, lb = losses(a), losses(b)
    if len(la) != len(lb):
        fail(f"{len(la)} steps against {len(lb)}")
    worst = max(abs(x - y) / max(abs(x), 1e-12) for x, y in zip(la, lb))
    print(f"same: {len(la)} steps, largest relative difference {worst:.2e}")
    if worst > tol:
        fail(f"relative difference {worst:.2e} > {tol}")


def ignore_index(model, data, batch, seq, index, metrics):
    import numpy as np
    import onnxruntime as ort
    import torch
    import torch.nn.functional as F
    tokens = np.frombuffer(open(data, "rb").read(batch * seq + 1), np.uint8).astype(np.int64)
    ids = tokens[:-1].reshape(batch, seq)
    targets = tokens[1:].reshape(batch, seq)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    logits = session.run(None, {session.get_inputs()[0].name: ids})[0]
    want = F.cross_entropy(torch.tensor(logits).reshape(-1, logits.shape[-1]),
                           torch.tensor(targets).reshape(-1), ignore_index=index).item()
    ignored = int((targets == index).sum())
    got = losses(metrics)[0]
    print(f"ignore-index: {ignored} targets ignored; trc {got:.6f}, torch {want:.6f}")
    if ignored == 0:
        fail("the batch has no target equal to the ignore index: the check would be vacuous")
    if abs(got - want) > 1e-4 * abs(want):
        fail(f"loss {got} != torch's {want}")


def loss_scale(metrics):
    rows = [json.loads(line) for line in open(metrics) if line.strip()]
    skipped = [r["skipped"] for r in rows]
    scales = [r["loss_scale"] for r in rows]
    if not skipped or skipped[0] != 1:
        fail("the first step did not overflow")
    first_applied = skipped.index(0) if 0 in skipped else None
    if first_applied is None:
        fail("no step was applied")
    for before, after, skip in zip(scales, scales[1:], skipped[1:]):
        if skip and after != before / 2:
            fail(f"a skipped step moved the scale {before} -> {after}, not halved")
    if any(skipped[first_applied:]):
        fail("a step overflowed again after the scale came down")
    final = rows[-1]["loss"]
    print(f"loss-scale: {first_applied} steps skipped, scale {scales[0]} -> {scales[-1]}, "
          f"final loss finite: {final == final and abs(final) != float('inf')}")


def tracks(fp32, low, tol, last):
    a, b = losses(fp32), losses(low)
    if len(a) != len(b) or len(a) < last:
        fail(f"{len(a)} and {len(b)} steps")
    ma, mb = sum(a[-last:]) / last, sum(b[-last:]) / last
    rel = abs(mb - ma) / ma
    print(f"tracks: last {last} steps mean loss fp32 {ma:.4f}, low precision {mb:.4f}, "
          f"relative difference {rel:.4f} (first step {a[0]:.4f})")
    if not (ma < a[0] and mb < b[0]):
        fail("a run did not learn")
    if rel > tol:
        fail(f"relative difference {rel:.4f} > {tol}")
    final = abs(b[-1] - a[-1]) / a[-1]
    print(f"tracks: final step fp32 {a[-1]:.4f}, low precision {b[-1]:.4f}, "
          f"relative difference {final:.4f}")
    if final > tol:
        fail(f"final-step relative difference {final:.4f} > {tol}")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "same":
        same(args[0], args[1], float(args[2]))
    elif cmd == "ignore-index":
        ignore_index(args[0], args[1], int(args[2]), int(args[3]), int(args[4]), args[5])
    elif cmd == "loss-scale":
        loss_scale(args[0])
    elif cmd == "tracks":
        tracks(args[0], args[1], float(args[2]), int(args[3]))
    else:
        fail(f"unknown check '{cmd}'")


if __name__ == "__main__":
    main()
