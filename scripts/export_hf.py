#!/usr/bin/env python3
"""scripts/export_hf.py — tiny random models of every model family that
Hugging Face transformers (4.36.2, the last line that runs on Debian's torch
1.13) supports for trc's parity tests, built from transformers' own classes
(and torchvision's ResNet-18), exported to ONNX for training, with labelled
rows to train on and PyTorch's reference losses.

    python3 scripts/export_hf.py --out DIR [--families gpt2,llama,...] [--static]
        [--reference] [--steps 20] [--batch 4] [--lr 1e-3]

For each family F writes DIR/F.onnx and DIR/F.npz and prints DIR/F.onnx; with
--reference also DIR/F.torch.json ({"losses": [...]}: the losses of --steps
AdamW steps in PyTorch on the rows, as trc-run trains them).

* The models: 2 layers, width 32, 4 heads, vocabulary 128, seeded (seed 0),
  every dropout 0 (parity needs the same arithmetic), each wrapped (LossOf) so
  that the ONNX graph takes the inputs and the labels and returns the model's
  own loss (and, for classifiers, the logits). Exported as
  scripts/export_models.py exports (torch.onnx, opset 17, training mode,
  do_constant_folding=False, the rows' first dimension a dynamic axis
  'batch' unless --static); buffers (masks, rotary tables, BatchNorm statistics) are marked
  frozen (metadata 'trc.frozen').
* The rows (DIR/F.npz, trc-run --data): arrays named after the graph's
  inputs, ROWS examples; step s trains on rows [sB, sB+B) (mod ROWS), as
  trc-run reads them. Causal LMs get labels = input_ids (the model shifts);
  masked LMs a masked copy (mask token MASK_ID, labels -100 where nothing was
  masked); T5 a target sequence; ViT and ResNet-18 normal pixels and class
  labels; GPT2ForSequenceClassification right-padded rows (pad 0) and
  labels.
* The reference (reference_losses): torch.optim.AdamW with trc-run's
  defaults (lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01).
Precondition: scripts/setup.sh's packages (transformers 4.36.2,
python3-torchvision). Deterministic.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import mark_buffers_frozen  # noqa: E402

VOCAB = 128
WIDTH = 32
HEADS = 4
LAYERS = 2
FFN = 64
POSITIONS = 64
SEQ = 16          # tokens per row
ROWS = 80         # rows per data set: 20 steps of 4 without wrapping
IMAGE = 32        # pixels per side (3 channels)
# ResNet-18 halves the side five times: at 32 pixels its last batch
# normalizations see 1 x 1 pixel per row, and 4 rows' statistics turn
# rounding into divergence (PyTorch's own float32 and float64 runs part by
# 6e-5 in 20 steps at lr 1e-4); at 64 pixels, 8 rows, lr 1e-4 by 2e-6.
LARGE_IMAGE = 64
CLASSES = 10      # image classes
MASK_ID = 3       # the masked LMs' mask token
PAD_ID = 0        # the sequence classifier's pad token
OPSET = 17


class LossOf(nn.Module):
    """A transformers model called with keyword arguments `names` (the ONNX
    graph's inputs, in order), returning its loss (and logits when
    `logits`)."""

    def __init__(self, model, names, logits=False):
        super().__init__()
        self.model, self.names, self.logits = model, names, logits

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)), return_dict=True)
        return (out.loss, out.logits) if self.logits else out.loss


class ImageClassifierLoss(nn.Module):
    """A torchvision classifier (logits out) with torch's cross-entropy."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values, labels):
        logits = self.model(pixel_values)
        return F.cross_entropy(logits, labels), logits


def _decoder(cls, config_cls, **config):
    def build():
        from transformers import __version__
        assert __version__ == "4.36.2", f"transformers {__version__}, scripts/setup.sh pins 4.36.2"
        return LossOf(cls(config_cls(**config)), ["input_ids", "labels"])
    return build


def _family(name):
    """(builder of the wrapped model, kind of rows) of family `name`."""
    import transformers as t
    drop = dict(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    size = dict(vocab_size=VOCAB, hidden_size=WIDTH, num_hidden_layers=LAYERS,
                num_attention_heads=HEADS, intermediate_size=FFN, max_position_embeddings=POSITIONS)
    bert_drop = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    families = {
        "gpt2": (_decoder(t.GPT2LMHeadModel, t.GPT2Config, vocab_size=VOCAB, n_positions=POSITIONS,
                          n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS, **drop), "causal"),
        "gptj": (_decoder(t.GPTJForCausalLM, t.GPTJConfig, vocab_size=VOCAB, n_positions=POSITIONS,
                          n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS, rotary_dim=4, **drop), "causal"),
        "gpt_neo": (_decoder(t.GPTNeoForCausalLM, t.GPTNeoConfig, vocab_size=VOCAB,
                             max_position_embeddings=POSITIONS, hidden_size=WIDTH, num_layers=LAYERS,
                             num_heads=HEADS, attention_types=[[["global", "local"], 1]], window_size=8,
                             embed_dropout=0.0, attention_dropout=0.0, resid_dropout=0.0), "causal"),
        "gpt_neox": (_decoder(t.GPTNeoXForCausalLM, t.GPTNeoXConfig, rotary_pct=0.5,
                              hidden_dropout=0.0, attention_dropout=0.0, **size), "causal"),
        "opt": (_decoder(t.OPTForCausalLM, t.OPTConfig, vocab_size=VOCAB, hidden_size=WIDTH,
                         num_hidden_layers=LAYERS, ffn_dim=FFN, num_attention_heads=HEADS,
                         max_position_embeddings=POSITIONS, word_embed_proj_dim=WIDTH,
                         dropout=0.0, attention_dropout=0.0, layerdrop=0.0), "causal"),
        "llama": (_decoder(t.LlamaForCausalLM, t.LlamaConfig, num_key_value_heads=2, **size), "causal"),
        "mistral": (_decoder(t.MistralForCausalLM, t.MistralConfig, num_key_value_heads=2,
                             sliding_window=8, **size), "causal"),
        "bert": (_decoder(t.BertForMaskedLM, t.BertConfig, **bert_drop, **size), "masked"),
        "roberta": (_decoder(t.RobertaForMaskedLM, t.RobertaConfig, pad_token_id=1, **bert_drop,
                             **dict(size, max_position_embeddings=POSITIONS + 2)), "masked"),
        "t5": (_decoder(t.T5ForConditionalGeneration, t.T5Config, vocab_size=VOCAB, d_model=WIDTH,
                        d_kv=WIDTH // HEADS, d_ff=FFN, num_layers=LAYERS, num_heads=HEADS,
                        relative_attention_num_buckets=8, relative_attention_max_distance=16,
                        dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0), "seq2seq"),
        "vit": (lambda: LossOf(t.ViTForImageClassification(t.ViTConfig(
            image_size=IMAGE, patch_size=8, num_channels=3, num_labels=CLASSES, **bert_drop,
            **{k: v for k, v in size.items() if k not in ("vocab_size", "max_position_embeddings")})),
            ["pixel_values", "labels"], logits=True), "image"),
        "resnet18": (_resnet18, "large_image"),
        "gpt2cls": (lambda: LossOf(t.GPT2ForSequenceClassification(t.GPT2Config(
            vocab_size=VOCAB, n_positions=POSITIONS, n_embd=WIDTH, n_layer=LAYERS, n_head=HEADS,
            num_labels=2, pad_token_id=PAD_ID, **drop)), ["input_ids", "labels"], logits=True),
            "seqcls"),
    }
    return families[name] if name in families else None


FAMILIES = ["gpt2", "gpt_neo", "gpt_neox", "llama", "mistral", "bert", "gptj", "opt", "roberta",
            "t5", "vit", "resnet18", "gpt2cls"]


def _resnet18():
    import torchvision
    # zero_init_residual: each block starts as the identity (torchvision's
    # option; without it 20 AdamW steps on these rows are chaotic: PyTorch's
    # float32 and float64 losses part by 20%).
    return ImageClassifierLoss(torchvision.models.resnet18(num_classes=CLASSES,
                                                           zero_init_residual=True))


def rows(kind, n=ROWS, seed=1):
    """The labelled rows of a family's `kind`, as {input name: array}."""
    g = np.random.default_rng(seed)
    if kind in ("image", "large_image"):
        side = IMAGE if kind == "image" else LARGE_IMAGE
        return {"pixel_values": g.standard_normal((n, 3, side, side)).astype(np.float32),
                "labels": g.integers(0, CLASSES, n)}
    ids = g.integers(4, VOCAB, (n, SEQ))
    if kind == "causal":
        return {"input_ids": ids, "labels": ids.copy()}
    if kind == "masked":
        masked = g.random((n, SEQ)) < 0.25
        masked[:, 0] = True  # every row counts
        return {"input_ids": np.where(masked, MASK_ID, ids), "labels": np.where(masked, ids, -100)}
    if kind == "seq2seq":
        return {"input_ids": ids, "labels": g.integers(4, VOCAB, (n, SEQ // 2))}
    if kind == "seqcls":
        # Every row padded: HF 4.36 picks position -1 of an unpadded row, which
        # torch.onnx exports as the previous row's last token.
        lengths = g.integers(SEQ // 2, SEQ, n)
        ids = np.where(np.arange(SEQ)[None, :] < lengths[:, None], ids, PAD_ID)
        return {"input_ids": ids, "labels": g.integers(0, 2, n)}
    raise ValueError(kind)


def build(name, seed=0):
    """Family `name`'s wrapped model (seeded) and its rows."""
    family = _family(name)
    if family is None:
        sys.exit(f"error: unknown family '{name}' (known: {', '.join(FAMILIES)})")
    builder, kind = family
    torch.manual_seed(seed)
    return builder(), rows(kind)


def export(model, data, path, batch=4, dynamic=True):
    """torch.onnx export (training mode, no constant folding) of `model` on
    the first `batch` rows of `data`; the rows' first dimension is the
    dynamic axis 'batch' unless not `dynamic` (then every shape is the
    example's: torch.onnx exports GPT-J's repeat_interleave of its rotary
    table, whose shape it cannot infer with a dynamic batch, as a Loop)."""
    names = list(data)
    example = tuple(torch.from_numpy(data[k][:batch]) for k in names)
    outputs = ["loss", "logits"] if getattr(model, "logits", False) or \
        isinstance(model, ImageClassifierLoss) else ["loss"]
    axes = {k: {0: "batch"} for k in names}
    if len(outputs) == 2:
        axes["logits"] = {0: "batch"}
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, path, input_names=names, output_names=outputs,
                          opset_version=OPSET, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING,
                          dynamic_axes=axes if dynamic else None)
    mark_buffers_frozen(model, path)


def reference_losses(model, data, steps=20, batch=4, lr=1e-3):
    """The losses of `steps` AdamW steps of `model` in PyTorch (trc-run's
    hyperparameters) on rows [sB, sB+B) mod the row count of `data`."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    n = len(next(iter(data.values())))
    model.train()
    losses = []
    for s in range(steps):
        pick = [(s * batch + i) % n for i in range(batch)]
        opt.zero_grad()
        out = model(*(torch.from_numpy(v[pick]) for v in data.values()))
        loss = out[0] if isinstance(out, tuple) else out
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def track_onnx_running_stats(model):
    """Batch normalization running statistics as ONNX's training-mode
    BatchNormalization (and so trc) updates them, kept beside PyTorch's while
    `model` trains: the running mean is PyTorch's; the running variance
    averages each batch's population variance (PyTorch's own averages the
    unbiased one). Returns {initializer name: tensor}, updated in place."""
    tracked = {}
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            continue
        tracked[name + ".running_mean"] = module.running_mean
        var = module.running_var.detach().clone()
        tracked[name + ".running_var"] = var

        def hook(mod, inputs, var=var):
            if mod.training:
                x = inputs[0].detach()
                batch_var = x.var(dim=[d for d in range(x.dim()) if d != 1], unbiased=False)
                var.mul_(1 - mod.momentum).add_(batch_var * mod.momentum)
        module.register_forward_pre_hook(hook)
    return tracked


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--families", default=",".join(FAMILIES))
    p.add_argument("--reference", action="store_true", help="also DIR/F.torch.json")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--static", action="store_true", help="no dynamic batch axis")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.families.split(","):
        model, data = build(name)
        path = os.path.join(a.out, name + ".onnx")
        export(model, data, path, a.batch, not a.static)
        np.savez(os.path.join(a.out, name + ".npz"), **data)
        if a.reference:
            losses = reference_losses(model, data, a.steps, a.batch, a.lr)
            with open(os.path.join(a.out, name + ".torch.json"), "w") as f:
                json.dump({"losses": losses}, f)
        print(path)


if __name__ == "__main__":
    main()
