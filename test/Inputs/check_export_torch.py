#!/usr/bin/env python3
"""scripts/export_torch.py on this machine's torch (Debian's 1.13 in CI):
exports a tiny random Llama (grouped-query attention) from a config with
its command line, trains it with trc-run on token data (the model shifts its
labels itself) and on rows at another batch size than the example's, and
compares with PyTorch training the same weights:

    check_export_torch.py WORKDIR [--trc-run trc-run]

Prints the export call and "export_torch: N AdamW steps match PyTorch";
exits 1 when a loss differs by more than 1e-4 relative.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import export_hf  # noqa: E402
import export_torch  # noqa: E402

CONFIG = {"model_type": "llama", "vocab_size": 128, "hidden_size": 32,
          "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "max_position_embeddings": 64}
STEPS, BATCH, SEQ = 8, 4, 16


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--trc-run", default="trc-run")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    config = os.path.join(a.workdir, "llama.json")
    with open(config, "w") as f:
        json.dump(CONFIG, f)
    model_path = os.path.join(a.workdir, "llama.onnx")
    export = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "scripts",
                                                          "export_torch.py"),
                             "--hf-config", config, "--out", model_path, "--batch", "2"],
                            capture_output=True, text=True)
    if export.returncode:
        sys.exit("error: export_torch.py failed: " + export.stderr.strip())
    print(export.stdout.splitlines()[0])

    # The same weights in PyTorch (export_torch.py seeds from_config with 0).
    args = argparse.Namespace(hf=None, hf_config=config, seed=0)
    model, _ = export_torch._load_causal_lm(args)
    reference = export_hf.reference_losses(export_torch.CausalLMLoss(model),
                                           export_hf.rows("causal"), STEPS, BATCH)

    # Token data whose windows are the rows' input_ids, one extra token.
    ids = export_hf.rows("causal")["input_ids"][:STEPS * BATCH].reshape(-1)
    tokens = np.concatenate([ids, ids[:1]]).astype(np.uint16)
    header = np.zeros(256, np.int32)
    header[:3] = [20240520, 1, tokens.size]
    token_path = os.path.join(a.workdir, "tokens.bin")
    with open(token_path, "wb") as f:
        f.write(header.tobytes() + tokens.tobytes())
    metrics = os.path.join(a.workdir, "tokens.jsonl")
    run = subprocess.run([a.trc_run, model_path, "--device", "cpu", "--data", token_path,
                          "--batch-size", str(BATCH), "--seq-len", str(SEQ), "--steps", str(STEPS),
                          "--optimizer", "adamw", "--metrics", metrics],
                         capture_output=True, text=True)
    if run.returncode:
        sys.exit("error: trc-run failed: " + run.stderr.strip())
    with open(metrics) as f:
        losses = [json.loads(line)["loss"] for line in f if line.strip()]
    worst = max(abs(t - r) / abs(r) for t, r in zip(losses, reference))
    if len(losses) != STEPS or worst > 1e-4:
        sys.exit(f"error: losses {losses} differ from PyTorch's {reference} ({worst:.2e})")
    print(f"export_torch: {STEPS} AdamW steps match PyTorch (max relative {worst:.1e})")


if __name__ == "__main__":
    main()
