#!/usr/bin/env python3
"""scripts/make_torch2_fixtures.py — the test models of issue 27: tiny
Hugging Face models exported by torch 2.x's ONNX exporter (the dynamo
exporter), with rows to train on and PyTorch's reference losses; written
to test/Inputs/torch2/ and committed there.

Needs torch 2.x, transformers 5.x and onnxscript, which Debian's torch 1.13
cannot run: a side virtual environment, never part of scripts/setup.sh or
CI (the tests read the committed files only):

    python3 -m venv V && V/bin/pip install torch==2.15.0 transformers onnxscript
    V/bin/python scripts/make_torch2_fixtures.py --out test/Inputs/torch2

(the second line is the command that wrote the committed files, with torch
2.15.0, transformers 5.24.0, onnxscript 0.7.2, onnx 1.23.2, numpy 2.4.6).

For each family F (gpt2: GPT2LMHeadModel; llama: LlamaForCausalLM with
grouped-query attention, 4 heads, 2 key/value heads; bert: BertForMaskedLM;
qwen3: Qwen3ForCausalLM; gpt2_fresh: gpt2 with its fresh initialization)
it writes, in DIR:

* F.default.onnx and F.default.onnx.data: torch.onnx.export(model,
  (input_ids, labels), path) with no other option, as a new user exports
  (dynamo exporter, its default opset, optimize=True, static shapes: the
  example's batch 4 and sequence 16; the output named by the exporter,
  cross_entropy_loss; the larger tensors in the external data file, the
  small ones (here up to 128 bytes) inline, as torch writes them). The optimizer folds parameters and constants into new
  initializers (a transposed weight, position embeddings gathered at fixed
  positions, causal masks, scalars) and tags values in graph.value_info's
  metadata_props: pkg.torch.export.graph_signature.InputSpec.kind =
  PARAMETER / BUFFER / CONSTANT_TENSOR for the initializers torch lifted,
  pkg.onnxscript.optimizer.folded_from for the folded ones.
* F.keep.onnx: scripts/export_torch.py's export_for_training: dynamo=True,
  optimize=False, dynamic axes 'batch' and 'sequence' on both inputs
  (torch.export.Dim), training mode, weights inside the file, the float
  initializers that are not PARAMETERs listed in metadata 'trc.frozen'.
  (gpt2_fresh has no keep variant: it would be gpt2's with other weights.)
* F.npz: 48 rows (ROWS) of arrays input_ids and labels (int64, 16 tokens;
  scripts/export_hf.py's rows(): causal LMs labels = input_ids, the model
  shifts; bert a masked copy, mask token 3, labels -100 where unmasked).
  Step s trains on rows [sB, sB+B) mod ROWS, as trc-run reads them.
* F.torch.json: {"losses": [...]}, 12 (STEPS) torch.optim.AdamW steps (lr
  1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01) at batch 4 on those
  rows (scripts/export_hf.py's reference_losses), from the very weights
  exported (both exports are made from copies; the generator checks that
  every initializer tagged PARAMETER equals PyTorch's tensor of that name).

The models follow scripts/export_hf.py: 2 layers, width 32, 4 heads,
vocabulary 128, sequence 16, seed 0, every dropout 0, use_cache off, a
wrapper (Loss) whose forward(input_ids, labels) returns the model's own
loss, so that the graph's inputs are input_ids and labels and its output
the loss. After seeding, every parameter but gpt2_fresh's gets seeded noise
N(0, 0.02^2) added, standing in for a trained checkpoint: with its fresh
initialization (zero biases, LayerNorm weights of ones) the default
export's optimizer removes the zero biases (rule RemoveOptionalBiasFromGemm)
and merges equal initializers into one, which gpt2_fresh keeps on record.
To keep the files small (and free of this machine's paths) each node's
metadata_props keeps only pkg.torch.onnx.fx_node (the torch.export node it
came from, naming the parameters it used: %p_... parameters, %b_... buffers,
%c_... constants) and pkg.onnxscript.rewriter.rule_name (the optimizer's
rewrite); the stack traces and module scopes are removed. The graph, its
initializers and value_info (with their metadata) are as torch wrote them.
Deterministic (seeded): a rerun writes the same files.
"""
import argparse
import copy
import json
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_hf import HEADS, LAYERS, FFN, POSITIONS, VOCAB, WIDTH, rows, reference_losses  # noqa: E402
from export_torch import export_for_training  # noqa: E402

ROWS = 48
BATCH = 4
STEPS = 12
LR = 1e-3
NOISE = 0.02
FAMILIES = ["gpt2", "llama", "bert", "qwen3", "gpt2_fresh"]
KIND_KEY = "pkg.torch.export.graph_signature.InputSpec.kind"


class Loss(nn.Module):
    """A transformers model with labels, returning its own loss."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels):
        return self.model(input_ids=input_ids, labels=labels).loss


def _model(name):
    """Family `name`'s transformers model (unseeded) and its kind of rows."""
    import transformers as t
    size = dict(vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=LAYERS,
                num_attention_heads=HEADS, intermediate_size=FFN,
                max_position_embeddings=POSITIONS, use_cache=False)
    if name in ("gpt2", "gpt2_fresh"):
        return t.GPT2LMHeadModel(t.GPT2Config(
            vocab_size=VOCAB, n_positions=POSITIONS, n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, summary_first_dropout=0.0,
            bos_token_id=1, eos_token_id=2, use_cache=False)), "causal"
    if name == "llama":
        return t.LlamaForCausalLM(t.LlamaConfig(num_key_value_heads=2, attention_dropout=0.0,
                                                bos_token_id=1, eos_token_id=2, **size)), "causal"
    if name == "qwen3":
        return t.Qwen3ForCausalLM(t.Qwen3Config(num_key_value_heads=2, head_dim=WIDTH // HEADS,
                                                attention_dropout=0.0, bos_token_id=1,
                                                eos_token_id=2, **size)), "causal"
    if name == "bert":
        return t.BertForMaskedLM(t.BertConfig(hidden_dropout_prob=0.0,
                                              attention_probs_dropout_prob=0.0, **size)), "masked"
    raise SystemExit(f"error: unknown family '{name}' (known: {', '.join(FAMILIES)})")


def build(name, seed=0):
    """Family `name`'s wrapped model, seeded (and, but for gpt2_fresh,
    perturbed), in training mode, and its rows."""
    torch.manual_seed(seed)
    model, kind = _model(name)
    if name != "gpt2_fresh":
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for p in model.parameters():   # tied parameters once: they stay tied
                p.add_(torch.randn(p.shape, generator=g) * NOISE)
    wrapped = Loss(model)
    wrapped.train()
    return wrapped, rows(kind, ROWS)


def example(data):
    return {k: torch.from_numpy(v[:BATCH]) for k, v in data.items()}


def export_default(model, data, path):
    """What a new user writes: torch.onnx.export(model, args, path)."""
    args = tuple(example(data).values())
    torch.onnx.export(model, args, path)


NODE_METADATA = {"pkg.torch.onnx.fx_node", "pkg.onnxscript.rewriter.rule_name"}


def strip_node_metadata(path):
    """Removes each node's metadata but NODE_METADATA's keys, leaving
    external data where it is."""
    import onnx
    proto = onnx.load(path, load_external_data=False)
    for node in proto.graph.node:
        kept = [(p.key, p.value) for p in node.metadata_props if p.key in NODE_METADATA]
        del node.metadata_props[:]
        for key, value in kept:
            entry = node.metadata_props.add()
            entry.key, entry.value = key, value
    onnx.save(proto, path)


def check_parameters(model, path):
    """Every initializer tagged PARAMETER equals the model's tensor of that
    name; returns how many were compared."""
    import onnx
    from onnx import numpy_helper
    proto = onnx.load(path)
    kinds = {vi.name: p.value for vi in proto.graph.value_info
             for p in vi.metadata_props if p.key == KIND_KEY}
    state = model.state_dict(keep_vars=False)
    n = 0
    for init in proto.graph.initializer:
        if kinds.get(init.name) != "PARAMETER":
            continue
        ours = state[init.name].detach().numpy()
        theirs = numpy_helper.to_array(init)
        if ours.shape != theirs.shape or not np.array_equal(ours, theirs):
            raise SystemExit(f"error: {path}: initializer {init.name} differs from PyTorch's")
        n += 1
    if n == 0:
        raise SystemExit(f"error: {path}: no initializer tagged PARAMETER")
    return n


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--families", default=",".join(FAMILIES))
    a = p.parse_args()
    major = int(torch.__version__.split(".")[0])
    if major < 2:
        raise SystemExit(f"error: torch {torch.__version__}: needs torch 2.x (see this script's header)")
    os.makedirs(a.out, exist_ok=True)
    warnings.simplefilter("ignore")
    for name in a.families.split(","):
        model, data = build(name)
        before = {k: v.clone() for k, v in model.state_dict().items()}
        base = os.path.join(a.out, name)
        export_default(copy.deepcopy(model), data, base + ".default.onnx")
        paths = [base + ".default.onnx"]
        if name != "gpt2_fresh":
            export_for_training(copy.deepcopy(model.model), example(data), base + ".keep.onnx",
                                log=lambda call: print("  " + call, file=sys.stderr))
            paths.append(base + ".keep.onnx")
        counts = []
        for path in paths:
            strip_node_metadata(path)
            counts.append(check_parameters(model, path))
        after = model.state_dict()
        assert all(torch.equal(before[k], after[k]) for k in before), "export changed the weights"
        np.savez(base + ".npz", **data)
        losses = reference_losses(model, data, STEPS, BATCH, LR)
        with open(base + ".torch.json", "w") as f:
            json.dump({"losses": losses}, f)
        print(f"{base}: {counts} parameters checked; losses {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
