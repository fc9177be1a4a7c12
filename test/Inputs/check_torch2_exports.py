#!/usr/bin/env python3
"""Trains the committed torch 2.x exports (test/Inputs/torch2/, made by
scripts/make_torch2_fixtures.py with torch 2.15 and transformers 5.24) with
trc-run and compares the per-step losses with PyTorch's (F.torch.json):

    check_torch2_exports.py WORKDIR --family F [--trc-run trc-run]

For family F:
  keep      F.keep.onnx (dynamo=True, optimize=False, dynamic batch and
            sequence) trains at batch 4 within 1e-4 relative of PyTorch at
            every one of 12 AdamW steps, and at batch 2 (a dynamic axis);
  default   F.default.onnx (torch.onnx.export(model, args, path): the
            exporter folded parameters) is refused: exit 1 and an error that
            names the folded values and the --trainable value for them;
  advised   the default export trained with the error's advice (--trainable
            as printed, --freeze for the values folded from a buffer: the
            rotary tables' inv_freq) matches PyTorch within 1e-4; at batch 2
            (the export is static, traced at 4) trc-run re-specializes it and
            it matches the keep export at batch 2 within 1e-4;
  tokens    (causal LMs) F.keep.onnx on token data (an llm.c token file whose
            windows are the rows' input_ids): trc-run sees that the model
            shifts its labels itself, feeds them the window (labels =
            input_ids, as PyTorch trained) and matches within 1e-4; fed the
            next tokens instead (--feed labels=targets) it does not.
Prints one line per case; exits 1 on the first failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch2")
STEPS, BATCH, TOLERANCE = 12, 4, 1e-4


def train(a, model, tag, batch=BATCH, extra=(), data=None):
    metrics = os.path.join(a.workdir, f"{a.family}.{tag}.jsonl")
    data = data or ["--data", os.path.join(HERE, a.family + ".npz")]
    run = subprocess.run(
        [a.trc_run, model, "--device", "cpu", *data, "--batch-size", str(batch), "--steps", str(STEPS), "--optimizer", "adamw", "--lr", "1e-3",
         "--metrics", metrics, *extra], capture_output=True, text=True)
    losses = []
    if run.returncode == 0:
        with open(metrics) as f:
            losses = [json.loads(line)["loss"] for line in f if line.strip()]
    return run, losses


def token_file(a):
    """The rows' input_ids as an llm.c token file (header: magic, version,
    count), plus one token: step s's windows are rows [sB, sB+B)."""
    import numpy as np
    ids = np.load(os.path.join(HERE, a.family + ".npz"))["input_ids"].reshape(-1)
    tokens = np.concatenate([ids, ids[:1]]).astype(np.uint16)
    header = np.zeros(256, np.int32)
    header[:3] = [20240520, 1, tokens.size]
    path = os.path.join(a.workdir, a.family + ".tokens.bin")
    with open(path, "wb") as f:
        f.write(header.tobytes() + tokens.tobytes())
    return path


def worst_difference(a, losses):
    with open(os.path.join(HERE, a.family + ".torch.json")) as f:
        reference = json.load(f)["losses"]
    return max(abs(t - r) / abs(r) for t, r in zip(losses, reference))


def compare(a, tag, losses):
    with open(os.path.join(HERE, a.family + ".torch.json")) as f:
        reference = json.load(f)["losses"]
    if len(losses) != len(reference):
        sys.exit(f"error: {a.family} {tag}: {len(losses)} losses, PyTorch has {len(reference)}")
    worst = max(abs(t - r) / abs(r) for t, r in zip(losses, reference))
    if not worst <= TOLERANCE:
        sys.exit(f"error: {a.family} {tag}: losses differ from PyTorch's by {worst:.2e} relative")
    print(f"{a.family} {tag}: {STEPS} AdamW steps match PyTorch (max relative {worst:.1e})")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--family", required=True)
    p.add_argument("--trc-run", default="trc-run")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)

    keep = os.path.join(HERE, a.family + ".keep.onnx")
    run, losses = train(a, keep, "keep")
    if run.returncode:
        sys.exit(f"error: {a.family} keep: trc-run failed: {run.stderr.strip()}")
    compare(a, "keep", losses)
    run, keep2 = train(a, keep, "keep-batch2", batch=2)
    if run.returncode:
        sys.exit(f"error: {a.family} keep at batch 2: trc-run failed: {run.stderr.strip()}")
    print(f"{a.family} keep: trains at batch 2")

    default = os.path.join(HERE, a.family + ".default.onnx")
    run, _ = train(a, default, "default")
    advice = re.search(r"--trainable '([^']+)' trains each as it is", run.stderr)
    if run.returncode != 1 or "the exporter folded parameters" not in run.stderr or not advice:
        sys.exit(f"error: {a.family} default: expected the folded-parameter refusal, got exit "
                 f"{run.returncode}: {run.stderr.strip()[:2000]}")
    print(f"{a.family} default: refused, {len(advice.group(1).split('|'))} folded values named")

    # The error lists "'NAME' (folded from 'SOURCE', ...)": those folded from
    # a rotary table's inv_freq are buffers; the rest are parameters.
    buffers = [re.escape(name) for name, sources in
               re.findall(r"'([^']+)' \(folded from ([^)]*)\)", run.stderr)
               if "inv_freq" in sources]
    trainable = [n for n in advice.group(1).split("|") if n not in buffers]
    extra = ["--trainable", "|".join(trainable)]
    if buffers:
        extra += ["--freeze", "|".join(buffers)]
    run, losses = train(a, default, "advised", extra=extra)
    if run.returncode:
        sys.exit(f"error: {a.family} advised: trc-run failed: {run.stderr.strip()}")
    compare(a, "default as advised", losses)
    # The default export is static (traced at batch 4): at batch 2 trc-run
    # re-derives its traced shape constants and folded masks, and trains as
    # the dynamic export does at batch 2.
    run, losses = train(a, default, "advised-batch2", batch=2, extra=extra)
    if run.returncode or "static shapes were re-specialized" not in run.stderr:
        sys.exit(f"error: {a.family} default at batch 2: expected a re-specialized run, got "
                 f"exit {run.returncode}: {run.stderr.strip()[:3000]}")
    worst = max(abs(t - r) / abs(r) for t, r in zip(losses, keep2))
    if len(losses) != len(keep2) or worst > TOLERANCE:
        sys.exit(f"error: {a.family} default at batch 2: {losses} differ from the dynamic "
                 f"export's {keep2} by {worst:.1e}")
    print(f"{a.family} default at batch 2: re-specialized, {STEPS} AdamW steps match the "
          f"dynamic export at batch 2")

    if a.family == "bert":
        return  # a masked LM: its labels are not a shifted window
    tokens = ["--data", token_file(a), "--seq-len", "16"]
    run, losses = train(a, keep, "tokens", data=tokens)
    if run.returncode:
        sys.exit(f"error: {a.family} tokens: trc-run failed: {run.stderr.strip()}")
    said = re.search(r"the model shifts 'labels' itself \(node '[^']+' slices it", run.stderr)
    if not said:
        sys.exit(f"error: {a.family} tokens: trc-run did not say it feeds labels the window")
    print(f"{a.family} tokens: {said.group(0)}")
    compare(a, "on token data", losses)
    run, losses = train(a, keep, "next-tokens", data=tokens + ["--feed", "labels=targets"])
    if run.returncode:
        sys.exit(f"error: {a.family} next tokens: trc-run failed: {run.stderr.strip()}")
    print(f"{a.family} tokens with --feed labels=targets: "
          f"{'differs' if worst_difference(a, losses) > 1e-3 else 'MATCHES'} from PyTorch")


if __name__ == "__main__":
    main()
