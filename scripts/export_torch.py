#!/usr/bin/env python3
"""scripts/export_torch.py — exports a Hugging Face causal LM to ONNX the way
trc trains it (the package's trc.onnx_export, on torch 1.13 and 2.x alike).

    python3 scripts/export_torch.py --hf NAME_OR_DIR --out m.onnx [--seq 16 --batch 2]
    python3 scripts/export_torch.py --hf-config config.json --out m.onnx [--seed 0]

Loads a Hugging Face causal LM (AutoModelForCausalLM: --hf a hub name or a
local folder, from_pretrained; --hf-config a JSON config, from_config with
random weights seeded by --seed; float32, use_cache off), exports the graph
(input_ids, labels) -> loss, then prints the export call it used. The loss
is the next-token cross-entropy, mean over the tokens whose label is not
-100 (labels = input_ids: the graph shifts), computed from the model's
logits by slicing (CausalLMLoss): the model's own loss, as transformers 4.36
computes it (transformers 5 computes the same loss by padding the labels,
which exports an ONNX Pad; --model-loss exports the model's own loss,
model(input_ids, labels).loss, as it is). Train it with
    trc-run m.onnx --data ROWS.npz --batch-size B --steps N
(ROWS.npz: arrays input_ids and labels, one row per example).

Tests import export_for_training and CausalLMLoss from here too (they are
trc.onnx_export's; python/trc/onnx_export.py says why the export is made
the way it is). Precondition: torch, onnx, transformers.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from trc.onnx_export import CausalLMLoss, export_for_training  # noqa: E402,F401


def _load_causal_lm(args):
    import transformers
    if args.hf_config:
        with open(args.hf_config) as f:
            config = transformers.AutoConfig.for_model(**json.load(f))
        torch.manual_seed(args.seed)
        model = transformers.AutoModelForCausalLM.from_config(config)
    else:
        model = transformers.AutoModelForCausalLM.from_pretrained(args.hf)
    model = model.float()          # trc trains float32 weights
    config = model.config
    if hasattr(config, "use_cache"):
        config.use_cache = False   # training: no key/value cache among the outputs
    return model, config


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--hf", help="a Hugging Face causal LM: hub name or local folder")
    src.add_argument("--hf-config", help="a JSON config (with model_type): random weights")
    p.add_argument("--out", required=True)
    p.add_argument("--seq", type=int, default=16, help="example sequence length")
    p.add_argument("--batch", type=int, default=2, help="example batch")
    p.add_argument("--seed", type=int, default=0, help="--hf-config's weights")
    p.add_argument("--static", action="store_true", help="the example's shapes, no dynamic axes")
    p.add_argument("--opset", type=int, help="default: 17 (TorchScript), the exporter's (dynamo)")
    p.add_argument("--model-loss", action="store_true",
                   help="the model's own loss (model(input_ids, labels).loss) instead of CausalLMLoss")
    a = p.parse_args()
    hf_model, config = _load_causal_lm(a)
    model = hf_model if a.model_loss else CausalLMLoss(hf_model)
    vocab = config.vocab_size
    g = torch.Generator().manual_seed(a.seed)
    ids = torch.randint(0, vocab, (a.batch, a.seq), generator=g)
    call = export_for_training(model, {"input_ids": ids, "labels": ids.clone()}, a.out,
                               dynamic=not a.static, opset=a.opset, saved=hf_model)
    print(f"torch {torch.__version__}: {call}")
    print(a.out)


if __name__ == "__main__":
    main()
