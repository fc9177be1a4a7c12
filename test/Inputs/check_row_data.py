"""Checks trc-run's row data (--data rows.npz) and evaluation (--eval-data)
against onnxruntime on the same rows and weights.

    python check_row_data.py TRC_RUN MODELS_DIR WORK [--mpi]

* classifier (gpt2cls_op17_dyn.onnx: input_ids, labels -> loss, logits):
  step 1's loss is onnxruntime's on rows 0-3 of the data; after 6 steps
  (batch 4 over 18 rows: the last batch wraps) the final eval_loss and
  eval_accuracy are onnxruntime's over the 13 dev rows with the exported
  (--export-onnx) weights (eval batches of 4 and a remainder of 1); a folder
  of .npy files trains exactly as the .npz; the arrays saved compressed
  (np.savez_compressed) train exactly as stored ones;
* a logits model with --loss cross_entropy (gpt2_op17_logits_dyn.onnx, arrays
  input_ids and targets): step 1 is the softmax cross-entropy of
  onnxruntime's logits, the final eval_loss and eval_accuracy (next-token)
  those of the exported model's logits;
* a shuffled run resumed from its step-3 checkpoint gives the straight
  run's 6 losses and evaluations;
* --mpi: 2 ranks (ZeRO-3: sharded parameters gathered for the evaluation)
  give the 1-rank losses and evaluations within 1e-5.
Prints one line per check; "FAIL: ..." and exit 1 on the first mismatch.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import ENV, fail, mpirun  # noqa: E402

TOLERANCE = 1e-5


def close(name, got, want, tolerance=TOLERANCE):
    diff = abs(got - want) / max(abs(want), 1e-12)
    if diff > tolerance:
        fail(f"{name}: trc {got!r}, onnxruntime {want!r} (relative {diff:.2e})")
    return diff


def run(trc_run, model, work, name, data, extra=(), ranks=1, steps=6, fresh=True):
    """Trains `steps` steps of 4 rows; returns the metrics lines."""
    metrics = os.path.join(work, name + ".jsonl")
    if fresh and os.path.exists(metrics):
        os.remove(metrics)
    command = mpirun(ranks) + [trc_run, model, "--device", "cpu", "--data", data,
                               "--batch-size", "4", "--steps", str(steps), "--metrics", metrics,
                               *extra]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{name}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    with open(metrics) as f:
        return [json.loads(line) for line in f if line.strip()]


def session(path):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"])


def cross_entropy(logits, targets):
    """Mean softmax cross-entropy and argmax accuracy, in float64."""
    x = logits.reshape(-1, logits.shape[-1]).astype(np.float64)
    t = targets.reshape(-1)
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    return float((lse - x[np.arange(len(t)), t]).mean()), float((x.argmax(1) == t).mean())


def classifier_rows(rng, n, seq=16):
    ids = rng.integers(1, 256, (n, seq)).astype(np.int64)
    for row in ids:
        row[rng.integers(3, seq):] = 0  # pads on the right
    labels = (ids[:, 0] > 128).astype(np.int64)
    return {"input_ids": ids, "labels": labels}


def check_classifier(trc_run, models, work):
    rng = np.random.default_rng(0)
    train, dev = classifier_rows(rng, 18), classifier_rows(rng, 13)
    np.savez(os.path.join(work, "train.npz"), **train)
    np.savez_compressed(os.path.join(work, "train-z.npz"), **train)
    np.savez(os.path.join(work, "dev.npz"), **dev)
    folder = os.path.join(work, "train-npy")
    os.makedirs(folder, exist_ok=True)
    for name, array in train.items():
        np.save(os.path.join(folder, name + ".npy"), array)
    model = os.path.join(models, "gpt2cls_op17_dyn.onnx")
    exported = os.path.join(work, "cls-trained.onnx")
    eval_flags = ["--eval-data", os.path.join(work, "dev.npz"), "--eval-every", "3"]
    rows = run(trc_run, model, work, "cls", os.path.join(work, "train.npz"),
               eval_flags + ["--export-onnx", exported])
    first = {k: v[0:4] for k, v in train.items()}
    want = session(model).run(["loss"], first)[0]
    d1 = close("classifier step 1", rows[0]["loss"], float(want))
    if "eval_loss" not in rows[2] or "eval_loss" in rows[3]:
        fail("classifier: expected evaluations after steps 3 and 6 only")
    loss, logits = session(exported).run(["loss", "logits"], dev)
    _, accuracy = cross_entropy(logits, dev["labels"])
    d2 = close("classifier eval_loss", rows[-1]["eval_loss"], float(loss))
    if rows[-1]["eval_accuracy"] != accuracy:
        fail(f"classifier eval_accuracy: trc {rows[-1]['eval_accuracy']}, onnxruntime {accuracy}")
    print(f"classifier: step 1 loss within {d1:.1e}, eval_loss within {d2:.1e}, "
          f"eval_accuracy {accuracy:.4f} as onnxruntime's")
    losses = [r["loss"] for r in rows]
    for name, data in (("npy folder", folder), ("compressed npz", "train-z.npz")):
        again = run(trc_run, model, work, name.replace(" ", "-"), os.path.join(work, data))
        if [r["loss"] for r in again] != losses:
            fail(f"{name}: the losses differ from the .npz run's")
        print(f"{name}: the same 6 losses")
    return model, eval_flags, rows


def check_logits_loss(trc_run, models, work):
    # Counting sequences from random starts: learnable in a few steps, so
    # the accuracy compared is not 0.
    rng = np.random.default_rng(1)
    tokens = (rng.integers(0, 256, (20, 1)) + np.arange(17)) % 256
    train = {"input_ids": tokens[:14, :16], "targets": tokens[:14, 1:]}
    dev = {"input_ids": tokens[14:, :16], "targets": tokens[14:, 1:]}
    np.savez(os.path.join(work, "lm-train.npz"), **train)
    np.savez(os.path.join(work, "lm-dev.npz"), **dev)
    dynamic = os.path.join(models, "gpt2_op17_logits_dyn.onnx")
    exported = os.path.join(work, "lm-trained.onnx")
    rows = run(trc_run, dynamic, work, "lm", os.path.join(work, "lm-train.npz"),
               ["--loss", "cross_entropy", "--eval-data", os.path.join(work, "lm-dev.npz"),
                "--lr", "1e-2", "--export-onnx", exported])
    logits = session(dynamic).run(["logits"], {"input_ids": train["input_ids"][:4]})[0]
    d1 = close("--loss step 1", rows[0]["loss"], cross_entropy(logits, train["targets"][:4])[0])
    logits = session(exported).run(["logits"], {"input_ids": dev["input_ids"]})[0]
    loss, accuracy = cross_entropy(logits, dev["targets"])
    d2 = close("--loss eval_loss", rows[-1]["eval_loss"], loss)
    close("--loss eval_accuracy", rows[-1]["eval_accuracy"], accuracy, 1e-12)
    print(f"--loss cross_entropy: step 1 within {d1:.1e}, eval_loss within {d2:.1e}, "
          f"eval_accuracy {accuracy:.4f} as onnxruntime's")


def check_resume(trc_run, model, work, eval_flags):
    data = os.path.join(work, "train.npz")
    flags = eval_flags + ["--shuffle", "--seed", "5"]
    straight = run(trc_run, model, work, "straight", data, flags)
    ckpt = os.path.join(work, "ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    keep = ["--checkpoint-dir", ckpt, "--checkpoint-every", "3"]
    run(trc_run, model, work, "resumed", data, flags + keep, steps=3)
    resumed = run(trc_run, model, work, "resumed", data, flags + keep + ["--resume"], fresh=False)
    keys = ("loss", "eval_loss", "eval_accuracy")
    if [[r.get(k) for k in keys] for r in resumed] != [[r.get(k) for k in keys]
                                                        for r in straight]:
        fail("resume: the resumed shuffled run's losses differ from the straight run's")
    print("shuffled resume: the straight run's 6 losses and evaluations")


def check_ranks(trc_run, model, work, eval_flags, reference):
    rows = run(trc_run, model, work, "ranks2", os.path.join(work, "train.npz"),
               eval_flags + ["--config", json.dumps({"zero_stage": 3})], ranks=2)
    worst = 0.0
    for r, want in zip(rows, reference):
        for key in ("loss", "eval_loss"):
            if key in want:
                worst = max(worst, close(f"2 ranks {key} step {r['step']}", r[key], want[key]))
    if len(rows) != len(reference) or rows[-1]["eval_accuracy"] != reference[-1]["eval_accuracy"]:
        fail("2 ranks: the steps or the accuracy differ from 1 rank's")
    print(f"2 ranks (ZeRO-3): 6 steps and evaluations within {worst:.1e} of 1 rank")


def main():
    trc_run, models, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    model, eval_flags, reference = check_classifier(trc_run, models, work)
    if "--mpi" in sys.argv:
        check_ranks(trc_run, model, work, eval_flags, reference)
        return
    check_logits_loss(trc_run, models, work)
    check_resume(trc_run, model, work, eval_flags)


if __name__ == "__main__":
    main()
