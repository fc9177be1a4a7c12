#!/usr/bin/env python3
"""--eval-data on token text: trc-run's eval_loss over every window of a held-out
text equals PyTorch's mean cross-entropy on the same windows, and its
eval_perplexity is exp(eval_loss).

    check_token_eval.py TRC_RUN WORKDIR

The GPT-2 test model is exported (scripts/export_models.py) with its loss and
as logits alone (trained with --loss cross_entropy); trc-run takes one AdamW
step at lr 1e-30 (the weights do not move in f32) and evaluates; PyTorch
evaluates the model it exported on the windows T tokens apart (inputs
[wT, wT+T), targets one token on). Prints one line per export; FAIL lines on
a mismatch (1e-5 relative).
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import export_models as em  # noqa: E402

SEQ = 32


def torch_eval(model, text):
    tokens = torch.tensor(list(text), dtype=torch.long)
    windows = (len(tokens) - 1) // SEQ
    inputs = torch.stack([tokens[w * SEQ:w * SEQ + SEQ] for w in range(windows)])
    targets = torch.stack([tokens[w * SEQ + 1:w * SEQ + SEQ + 1] for w in range(windows)])
    with torch.no_grad():
        logits = model.logits(inputs)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        accuracy = (logits.argmax(-1) == targets).double().mean()
    return float(loss), float(accuracy), windows * SEQ


def main():
    trc_run, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(2)
    words = [b"the", b"king", b"shall", b"speak", b"of", b"love", b"and", b"war"]
    train = os.path.join(work, "train.txt")
    held_out = os.path.join(work, "val.txt")
    open(train, "wb").write(b" ".join(words[i] for i in rng.integers(0, 8, 2000)))
    text = b" ".join(words[i] for i in rng.integers(0, 8, 500)) + b".\n"
    open(held_out, "wb").write(text)
    model = em.build("gpt2").eval()
    ref_loss, ref_accuracy, ref_tokens = torch_eval(model, text)
    for name, logits in (("model loss", False), ("logits + --loss cross_entropy", True)):
        path = os.path.join(work, "logits.onnx" if logits else "loss.onnx")
        em.export(em.LogitsOnly(model) if logits else model, path, 17, dynamic=True,
                  logits=logits)
        metrics = os.path.join(work, "metrics.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        run = subprocess.run(
            [trc_run, path, "--data", train, "--batch-size", "4", "--seq-len", str(SEQ),
             "--steps", "1", "--lr", "1e-30", "--eval-data", held_out, "--metrics", metrics]
            + (["--loss", "cross_entropy"] if logits else []),
            capture_output=True, text=True)
        if run.returncode:
            print(f"FAIL: {name}: trc-run exit {run.returncode}: {run.stderr[-2000:]}")
            continue
        line = json.loads(open(metrics).read().splitlines()[-1])
        loss, perplexity = line["eval_loss"], line["eval_perplexity"]
        if abs(loss - ref_loss) > 1e-5 * abs(ref_loss):
            print(f"FAIL: {name}: eval_loss {loss} vs PyTorch {ref_loss}")
        if abs(perplexity - math.exp(loss)) > 1e-9 * perplexity:
            print(f"FAIL: {name}: eval_perplexity {perplexity} is not exp({loss})")
        if f"{ref_tokens} tokens" not in run.stderr:
            print(f"FAIL: {name}: the summary does not count {ref_tokens} tokens")
        accuracy = line.get("eval_accuracy")
        if logits and (accuracy is None or abs(accuracy - ref_accuracy) > 1e-9):
            print(f"FAIL: {name}: eval_accuracy {accuracy} vs PyTorch {ref_accuracy}")
        print(f"{name}: eval_loss matches PyTorch over {ref_tokens} tokens, "
              f"perplexity = exp(loss)" + (", accuracy matches" if logits else ""))


if __name__ == "__main__":
    main()
