#!/usr/bin/env python3
"""A static-shape export trained at sizes it was not traced at, for
test/Training/static-shapes.test.

    check_static_shapes.py TRC_RUN WORKDIR [--parallel]

Exports scripts/export_models.py's GPT-2 (128 positions) without dynamic axes
at batch 8 x 128 tokens (torch.onnx.export's default: every size traced into
its Reshape targets and mask slices), then trains it with trc-run, which
re-specializes the export to each run's sizes, against PyTorch on the same
llm.c batches with AdamW (per-step losses within 1e-4 relative):
  * at batch 4 and 16 on one rank, and at batch 8 x 64 tokens;
  * with --parallel, on 4 CPU ranks at tensor degree 2 x data degree 2 with
    global batch 8 (each rank compiles batch 4), and with 2 and 4 pipeline
    stages and 4 or 8 microbatches (each microbatch 2 or 1 rows) under GPipe,
    1F1B, ZB-H1 and interleaved 1F1B.
Also: the run says which inputs it re-specialized; a size the export cannot
be re-derived for (more positions than its causal-mask buffer holds) is
refused with an error naming the node, the traced sizes and the export
option. Prints what it compared; exits 1 with the reason when a check fails.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
sys.path.insert(0, HERE)
import export_hf  # noqa: E402
import export_models as em  # noqa: E402
from mpi_training import ENV, mpirun  # noqa: E402

STEPS, TOLERANCE, LR = 6, 1e-4, 1e-3
TRACED_BATCH, TRACED_SEQ = 8, 128


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def build():
    """The test GPT-2 with room for 128 positions (seeded: the same weights
    for the export and each PyTorch reference)."""
    em.configure("small")
    em.CONTEXT = TRACED_SEQ
    torch.manual_seed(0)
    return em.build("gpt2")


def text_tokens(work):
    rng = np.random.default_rng(1)
    words = [b"the", b"king", b"shall", b"speak", b"of", b"love", b"and", b"war", b"to", b"thee"]
    text = b" ".join(words[i] for i in rng.integers(0, len(words), 20000)) + b".\n"
    path = os.path.join(work, "data.txt")
    with open(path, "wb") as f:
        f.write(text)
    return path, np.frombuffer(text, dtype=np.uint8).astype(np.int64)


def torch_losses(tokens, batch, seq):
    """PyTorch's per-step losses on trc-run's text batches (llm.c windows)."""
    pos, span = 0, batch * seq
    inputs, targets = [], []
    for _ in range(STEPS):
        if pos + span + 1 > len(tokens):
            pos = 0
        window = tokens[pos:pos + span + 1]
        inputs.append(window[:-1].reshape(batch, seq))
        targets.append(window[1:].reshape(batch, seq))
        pos += span
    rows = {"input_ids": np.concatenate(inputs), "targets": np.concatenate(targets)}
    return export_hf.reference_losses(build(), rows, STEPS, batch, LR)


def trc(trc_run, model, data, work, name, batch, seq, ranks=1, config=None):
    metrics = os.path.join(work, name + ".jsonl")
    command = mpirun(ranks) + [trc_run, model, "--device", "cpu", "--data", data,
                               "--batch-size", str(batch), "--seq-len", str(seq),
                               "--steps", str(STEPS), "--optimizer", "adamw", "--lr", str(LR),
                               "--metrics", metrics]
    if config:
        command += ["--config", json.dumps(config)]
    run = subprocess.run(command, env=ENV, capture_output=True, text=True)
    if run.returncode != 0:
        fail(f"{name}: trc-run failed (exit {run.returncode}):\n{run.stderr.strip()[-3000:]}")
    with open(metrics) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()], run.stderr


def compare(name, losses, reference):
    worst = max(abs(a - b) / abs(b) for a, b in zip(losses, reference))
    if len(losses) != len(reference) or worst > TOLERANCE:
        fail(f"{name}: {len(losses)} losses differ from PyTorch's by {worst:.2e}: "
             f"{losses} vs {reference}")
    print(f"{name}: {STEPS} AdamW steps match PyTorch")


def main():
    if len(sys.argv) not in (3, 4):
        fail(__doc__)
    trc_run, work = sys.argv[1], sys.argv[2]
    parallel = sys.argv[3:] == ["--parallel"]
    os.makedirs(work, exist_ok=True)
    data, tokens = text_tokens(work)
    model = os.path.join(work, "gpt2_static.onnx")
    em.EXAMPLE_SHAPE[:] = [TRACED_BATCH, TRACED_SEQ]
    em.export(build(), model, 17, dynamic=False)

    references = {}

    def reference(batch, seq):
        if (batch, seq) not in references:
            references[batch, seq] = torch_losses(tokens, batch, seq)
        return references[batch, seq]

    if not parallel:
        for batch, seq in ((TRACED_BATCH, TRACED_SEQ), (4, TRACED_SEQ), (16, TRACED_SEQ),
                           (TRACED_BATCH, 64)):
            losses, log = trc(trc_run, model, data, work, f"b{batch}-s{seq}", batch, seq)
            compare(f"static export at batch {batch} x {seq}", losses, reference(batch, seq))
            if (batch, seq) == (4, TRACED_SEQ):
                said = [line for line in log.splitlines()
                        if "re-specialized" in line or "checked" in line]
                print("\n".join(said) if said else "FAIL: the run does not say it re-specialized")
        # 256 positions: the causal-mask buffer holds 128.
        run = subprocess.run([trc_run, model, "--device", "cpu", "--data", data,
                              "--batch-size", "8", "--seq-len", "256", "--steps", "1"],
                             capture_output=True, text=True)
        print("beyond the mask buffer: exit", run.returncode)
        print("\n".join(line for line in run.stderr.splitlines()
                        if line.startswith(("error:", "note:"))))
        return

    if shutil.which("mpirun") is None:
        print("SKIPPED: mpirun is not installed")
        return
    want = reference(TRACED_BATCH, TRACED_SEQ)
    for name, ranks, config in (
            ("tp2 x dp2", 4, {"tensor_parallel_degree": 2}),
            ("2 stages gpipe x 4 microbatches", 2,
             {"pipeline_parallel_degree": 2, "microbatches": 4, "pipeline": "simple"}),
            ("2 stages 1f1b x 8 microbatches", 2,
             {"pipeline_parallel_degree": 2, "microbatches": 8, "pipeline_schedule": "1f1b"}),
            ("4 stages 1f1b x 4 microbatches", 4,
             {"pipeline_parallel_degree": 4, "microbatches": 4}),
            ("4 stages zb_h1 x 8 microbatches", 4,
             {"pipeline_parallel_degree": 4, "microbatches": 8, "pipeline_schedule": "zb_h1"}),
            ("2 stages x 2 chunks interleaved 1f1b x 4 microbatches", 2,
             {"pipeline_parallel_degree": 2, "microbatches": 4,
              "pipeline_schedule": "interleaved_1f1b", "virtual_stages": 2})):
        losses, _ = trc(trc_run, model, data, work, name.replace(" ", "-"), TRACED_BATCH,
                        TRACED_SEQ, ranks, config)
        compare(f"static export, {name}", losses, want)


if __name__ == "__main__":
    main()
