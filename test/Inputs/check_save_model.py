#!/usr/bin/env python3
"""trc-run --save-model: a Hugging Face GPT-2 (transformers' GPT2LMHeadModel,
random weights from a small config) exported with scripts/export_torch.py,
trained 20 AdamW steps by trc-run and saved with --save-model, loads with
GPT2LMHeadModel.from_pretrained(DIR) and gives on the held-out rows the loss
trc-run evaluated at step 20 (1e-5 relative); the saved names are the
model's own state-dict names (the export wrappers' prefix removed), the tied
head is written once and re-tied by from_pretrained.

    check_save_model.py TRC_RUN WORKDIR

Prints one line per check; FAIL lines on a mismatch.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import load_file

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from export_torch import CausalLMLoss, export_for_training  # noqa: E402


def main():
    trc_run, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    import transformers
    config = transformers.GPT2Config(vocab_size=128, n_positions=64, n_embd=32, n_layer=2,
                                     n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                     use_cache=False)
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(config)
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 128, (80, 16)).astype(np.int64)
    held = rng.integers(0, 128, (8, 16)).astype(np.int64)
    np.savez(os.path.join(work, "rows.npz"), input_ids=ids, labels=ids)
    np.savez(os.path.join(work, "held.npz"), input_ids=held, labels=held)
    model_path = os.path.join(work, "gpt2.onnx")
    example = torch.from_numpy(ids[:2])
    export_for_training(CausalLMLoss(hf), {"input_ids": example, "labels": example.clone()},
                        model_path, saved=hf)
    out = os.path.join(work, "saved")
    metrics = os.path.join(work, "metrics.jsonl")
    run = subprocess.run(
        [trc_run, model_path, "--data", os.path.join(work, "rows.npz"), "--batch-size", "4",
         "--steps", "20", "--eval-data", os.path.join(work, "held.npz"), "--metrics", metrics,
         "--save-model", out], capture_output=True, text=True)
    if run.returncode:
        print(f"FAIL: trc-run exit {run.returncode}: {run.stderr[-2000:]}")
        return
    print([l for l in run.stderr.splitlines() if "--save-model" in l][0])
    trc_loss = json.loads(open(metrics).read().splitlines()[-1])["eval_loss"]

    saved = load_file(os.path.join(out, "model.safetensors"))
    own = set(hf.state_dict())
    strays = sorted(set(saved) - own)
    print("saved names are the model's own" if not strays else f"FAIL: not the model's: {strays}")
    print("the tied head is written once" if "lm_head.weight" not in saved else
          "FAIL: lm_head.weight written beside transformer.wte.weight")
    loaded = transformers.GPT2LMHeadModel.from_pretrained(out).eval()
    if not torch.equal(loaded.lm_head.weight, loaded.transformer.wte.weight):
        print("FAIL: from_pretrained did not re-tie the head")
    trained = torch.from_numpy(saved["transformer.h.0.attn.c_attn.weight"])
    if torch.equal(trained, hf.transformer.h[0].attn.c_attn.weight.detach()):
        print("FAIL: the saved weights are the initial ones")
    with torch.no_grad():
        x = torch.from_numpy(held)
        logits = loaded(input_ids=x).logits
        loss = float(F.cross_entropy(logits[:, :-1].reshape(-1, 128), x[:, 1:].reshape(-1)))
    ok = abs(loss - trc_loss) <= 1e-5 * abs(trc_loss)
    print(f"from_pretrained loss matches trc's eval_loss at step 20" if ok else
          f"FAIL: from_pretrained loss {loss} vs trc eval_loss {trc_loss}")
    record = json.load(open(os.path.join(out, "trc-model.json")))
    print(f"trc-model.json: step {record['step']}, prefix removed {record['prefix_removed']!r}, "
          f"{len(record['tensors'])} tensors")


if __name__ == "__main__":
    main()
