#!/usr/bin/env python3
"""Exports small GPT-2-, BERT- and GPT-J-style PyTorch models to ONNX, the way
users do: torch.onnx.export in training mode, do_constant_folding=False, loss
computed inside the model (inputs: token ids and targets; output: scalar loss),
at the opsets asked for, with and without dynamic axes.

    python3 scripts/export_models.py --out DIR [--models gpt2,bert,gptj]
                                     [--opsets 13,17] [--folded] [--variants]
                                     [--size small|bench|gpt2-124m] [--batch B --seq T]
                                     [--static-only] [--init torch|gpt2] [--vocab V]

Writes DIR/<model>_op<opset>.onnx and DIR/<model>_op<opset>_dyn.onnx (batch
and sequence as dynamic axes named 'batch' and 'sequence'); with --folded also
DIR/gpt2_op17_folded.onnx (constant folding on: derived initializers); with
--variants also DIR/gpt2_op17_logits[_dyn].onnx (output: logits, same weights
as gpt2_op17.onnx), DIR/gpt2_op17_dropout.onnx (active dropout 0.1),
DIR/gpt2_op17_prefix_dyn.onnx (a prefix-LM mask: the first 6 positions
visible to every query, causal after),
DIR/gpt2cls_op17_dyn.onnx (GPT2Classifier: input_ids and labels in, loss
and 2-class logits out; --models gpt2cls exports it alone) and
DIR/llama_op17[_dyn].onnx (a Llama-style model: RMSNorm, rotate-half rotary,
grouped-query attention, SwiGLU; --models llama exports it at every opset).
Precondition: Debian's python3-torch (1.13) importable. Deterministic (seeded).
"""
import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from trc.onnx_export import mark_buffers_frozen  # noqa: E402,F401  (export_hf imports it from here)

VOCAB = 256      # byte-level: any text is valid input
CONTEXT = 64     # positions
WIDTH = 64
HEADS = 4
LAYERS = 2

# --size: "small" for tests (above); "bench" for benchmarks (sequence 256);
# "gpt2-124m" GPT-2 small's shapes (50257 tokens, 1024 positions, 768 wide,
# 12 heads, 12 layers: 124M parameters; artifact sizes, bench/RESULTS.md).
SIZES = {
    "small": dict(VOCAB=256, CONTEXT=64, WIDTH=64, HEADS=4, LAYERS=2),
    "bench": dict(VOCAB=256, CONTEXT=256, WIDTH=256, HEADS=8, LAYERS=4),
    "gpt2-124m": dict(VOCAB=50257, CONTEXT=1024, WIDTH=768, HEADS=12, LAYERS=12),
}


def configure(size):
    """Sets the module-level sizes the model classes read when built."""
    globals().update(SIZES[size])


def gelu_new(x):
    """GPT-2's tanh approximation of GELU, written out as HF's gelu_new."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Block(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(WIDTH)
        self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
        self.c_proj = nn.Linear(WIDTH, WIDTH)
        self.ln_2 = nn.LayerNorm(WIDTH)
        self.c_fc = nn.Linear(WIDTH, 4 * WIDTH)
        self.mlp_proj = nn.Linear(4 * WIDTH, WIDTH)
        self.drop = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(CONTEXT, CONTEXT)).view(1, 1, CONTEXT, CONTEXT))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(self.ln_1(x)).split(WIDTH, dim=2)
        q = q.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        k = k.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        v = v.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.drop(self.c_proj(y))
        return x + self.drop(self.mlp_proj(gelu_new(self.c_fc(self.ln_2(x)))))


class GPT2(nn.Module):
    """Learned positions, pre-LN blocks, tied LM head."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.wpe = nn.Embedding(CONTEXT, WIDTH)
        self.blocks = nn.ModuleList([GPT2Block(dropout) for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(WIDTH)
        self.drop = nn.Dropout(dropout)

    def logits(self, input_ids):
        t = input_ids.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        x = self.drop(self.wte(input_ids) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)  # tied

    def forward(self, input_ids, targets):
        logits = self.logits(input_ids)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class GPT2Classifier(nn.Module):
    """GPT2 for sequence classification (Hugging Face's
    GPT2ForSequenceClassification): the hidden state of each row's last
    non-pad token (pads are id PAD_ID, on the right) through a linear head
    to CLASSES logits. Inputs input_ids [batch, sequence] and labels
    [batch]; outputs the mean cross-entropy loss and the logits."""
    PAD_ID = 0
    CLASSES = 2

    def __init__(self, dropout=0.0):
        super().__init__()
        self.gpt = GPT2(dropout)
        self.score = nn.Linear(WIDTH, self.CLASSES, bias=False)

    def forward(self, input_ids, labels):
        g = self.gpt
        b, t = input_ids.size()
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = g.drop(g.wte(input_ids) + g.wpe(pos))
        for block in g.blocks:
            x = block(x)
        hidden = g.ln_f(x)
        # One-hot of each row's last non-pad position, as a [b, 1, t]
        # matrix: a matmul picks the rows (no GatherND needed).
        last = (input_ids != self.PAD_ID).long().sum(1, keepdim=True) - 1
        pick = (torch.arange(t).unsqueeze(0) == last).float().unsqueeze(1)
        logits = self.score(torch.matmul(pick, hidden).squeeze(1))
        return F.cross_entropy(logits, labels), logits


def init_gpt2_(model):
    """GPT-2's initialization (as Hugging Face's GPT2PreTrainedModel): every
    Linear and Embedding weight from N(0, 0.02), biases zero, layer norms
    one and zero; the residual projections (c_proj, mlp_proj) from
    N(0, 0.02 / sqrt(2 * layers)). The default PyTorch initialization
    (N(0, 1) embeddings with a tied head) starts GPT-2's loss near 40
    instead of ln(vocabulary)."""
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                std = 0.02
                if name.endswith(("c_proj", "mlp_proj")):
                    std = 0.02 / math.sqrt(2 * LAYERS)
                module.weight.normal_(0.0, std)
                if getattr(module, "bias", None) is not None:
                    module.bias.zero_()
            elif isinstance(module, nn.LayerNorm):
                module.weight.fill_(1.0)
                module.bias.zero_()
    return model


class LogitsOnly(nn.Module):
    """The same model without its loss: input token ids, output logits."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model.logits(input_ids)


class BertLayer(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.query = nn.Linear(WIDTH, WIDTH)
        self.key = nn.Linear(WIDTH, WIDTH)
        self.value = nn.Linear(WIDTH, WIDTH)
        self.attn_out = nn.Linear(WIDTH, WIDTH)
        self.attn_ln = nn.LayerNorm(WIDTH, eps=1e-12)
        self.inter = nn.Linear(WIDTH, 4 * WIDTH)
        self.out = nn.Linear(4 * WIDTH, WIDTH)
        self.out_ln = nn.LayerNorm(WIDTH, eps=1e-12)
        self.drop = nn.Dropout(dropout)

    def heads(self, x):
        b, t, _ = x.size()
        return x.view(b, t, HEADS, WIDTH // HEADS).permute(0, 2, 1, 3)

    def forward(self, x):
        b, t, _ = x.size()
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(WIDTH // HEADS)
        ctx = torch.matmul(self.drop(F.softmax(scores, dim=-1)), v)
        ctx = ctx.permute(0, 2, 1, 3).contiguous().view(b, t, WIDTH)
        x = self.attn_ln(x + self.drop(self.attn_out(ctx)))
        return self.out_ln(x + self.drop(self.out(F.gelu(self.inter(x)))))


class Bert(nn.Module):
    """Post-LN encoder with token-type embeddings and a tied MLM head."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.word = nn.Embedding(VOCAB, WIDTH)
        self.position = nn.Embedding(CONTEXT, WIDTH)
        self.token_type = nn.Embedding(2, WIDTH)
        self.emb_ln = nn.LayerNorm(WIDTH, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(dropout) for _ in range(LAYERS)])
        self.head_dense = nn.Linear(WIDTH, WIDTH)
        self.head_ln = nn.LayerNorm(WIDTH, eps=1e-12)
        self.head_bias = nn.Parameter(torch.zeros(VOCAB))
        self.drop = nn.Dropout(dropout)

    def forward(self, input_ids, targets):
        b, t = input_ids.size()
        pos = torch.arange(t, dtype=torch.long).unsqueeze(0).expand(b, t)
        types = torch.zeros_like(input_ids)
        x = self.word(input_ids) + self.position(pos) + self.token_type(types)
        x = self.drop(self.emb_ln(x))
        for layer in self.layers:
            x = layer(x)
        h = self.head_ln(F.gelu(self.head_dense(x)))
        logits = torch.matmul(h, self.word.weight.t()) + self.head_bias
        return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1), ignore_index=-100)


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


class GPTJBlock(nn.Module):
    ROTARY = 8  # rotary dimensions per head

    def __init__(self, dropout):
        super().__init__()
        self.ln = nn.LayerNorm(WIDTH)
        self.q = nn.Linear(WIDTH, WIDTH, bias=False)
        self.k = nn.Linear(WIDTH, WIDTH, bias=False)
        self.v = nn.Linear(WIDTH, WIDTH, bias=False)
        self.out = nn.Linear(WIDTH, WIDTH, bias=False)
        self.fc_in = nn.Linear(WIDTH, 4 * WIDTH)
        self.fc_out = nn.Linear(4 * WIDTH, WIDTH)
        self.drop = nn.Dropout(dropout)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.ROTARY, 2).float() / self.ROTARY))
        sinusoid = torch.einsum("i,j->ij", torch.arange(CONTEXT).float(), inv_freq)
        self.register_buffer("sin", torch.sin(sinusoid).repeat_interleave(2, dim=1))
        self.register_buffer("cos", torch.cos(sinusoid).repeat_interleave(2, dim=1))
        self.register_buffer("causal", torch.tril(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool)))

    def rotary(self, x, t):
        # x: [b, t, heads, head_dim]; rotate the first ROTARY dims of each head.
        sin = self.sin[:t].unsqueeze(0).unsqueeze(2)
        cos = self.cos[:t].unsqueeze(0).unsqueeze(2)
        rot, rest = x[..., : self.ROTARY], x[..., self.ROTARY:]
        rot = rot * cos + rotate_every_two(rot) * sin
        return torch.cat([rot, rest], dim=-1)

    def forward(self, x):
        b, t, _ = x.size()
        h = self.ln(x)
        d = WIDTH // HEADS
        q = self.rotary(self.q(h).view(b, t, HEADS, d), t)
        k = self.rotary(self.k(h).view(b, t, HEADS, d), t)
        v = self.v(h).view(b, t, HEADS, d)
        att = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d)
        mask_value = torch.tensor(torch.finfo(att.dtype).min, dtype=att.dtype)
        att = torch.where(self.causal[:t, :t], att, mask_value)
        att = self.drop(F.softmax(att, dim=-1))
        y = torch.einsum("bhqk,bkhd->bqhd", att, v).reshape(b, t, WIDTH)
        attn = self.drop(self.out(y))
        mlp = self.drop(self.fc_out(gelu_new(self.fc_in(h))))
        return x + attn + mlp  # parallel attention and MLP


class GPTJ(nn.Module):
    """Rotary positions, parallel blocks, untied LM head with bias."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList([GPTJBlock(dropout) for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(WIDTH)
        self.lm_head = nn.Linear(WIDTH, VOCAB)
        self.drop = nn.Dropout(dropout)

    def forward(self, input_ids, targets):
        x = self.drop(self.wte(input_ids))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    """RMSNorm, rotary positions (rotate-half), grouped-query attention
    (KV_HEADS key/value heads repeated to HEADS), SwiGLU MLP, no biases."""
    KV_HEADS = 2

    def __init__(self):
        super().__init__()
        d = WIDTH // HEADS
        self.attn_norm = nn.Parameter(torch.ones(WIDTH))
        self.q = nn.Linear(WIDTH, WIDTH, bias=False)
        self.k = nn.Linear(WIDTH, self.KV_HEADS * d, bias=False)
        self.v = nn.Linear(WIDTH, self.KV_HEADS * d, bias=False)
        self.o = nn.Linear(WIDTH, WIDTH, bias=False)
        self.mlp_norm = nn.Parameter(torch.ones(WIDTH))
        self.gate = nn.Linear(WIDTH, 2 * WIDTH, bias=False)
        self.up = nn.Linear(WIDTH, 2 * WIDTH, bias=False)
        self.down = nn.Linear(2 * WIDTH, WIDTH, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        angles = torch.einsum("i,j->ij", torch.arange(CONTEXT).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("sin", torch.sin(angles))
        self.register_buffer("cos", torch.cos(angles))
        self.register_buffer("causal", torch.tril(torch.ones(CONTEXT, CONTEXT, dtype=torch.bool)))

    @staticmethod
    def rms(x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight

    def forward(self, x):
        b, t, _ = x.size()
        d = WIDTH // HEADS
        h = self.rms(x, self.attn_norm)
        sin, cos = self.sin[:t][None, None], self.cos[:t][None, None]
        q = self.q(h).view(b, t, HEADS, d).transpose(1, 2)
        k = self.k(h).view(b, t, self.KV_HEADS, d).transpose(1, 2)
        v = self.v(h).view(b, t, self.KV_HEADS, d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = HEADS // self.KV_HEADS  # HF's repeat_kv: expand, then merge
        k = k[:, :, None].expand(b, self.KV_HEADS, rep, t, d).reshape(b, HEADS, t, d)
        v = v[:, :, None].expand(b, self.KV_HEADS, rep, t, d).reshape(b, HEADS, t, d)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d)
        att = att.masked_fill(~self.causal[:t, :t], float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(b, t, WIDTH)
        x = x + self.o(y)
        h = self.rms(x, self.mlp_norm)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llama(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList([LlamaBlock() for _ in range(LAYERS)])
        self.norm = nn.Parameter(torch.ones(WIDTH))
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, input_ids, targets):
        x = self.wte(input_ids)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(LlamaBlock.rms(x, self.norm))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))


MODELS = {"gpt2": GPT2, "bert": Bert, "gptj": GPTJ, "llama": Llama}


def build(name, seed=0, init="torch"):
    """Model `name` (MODELS, or "gpt2cls": GPT2Classifier), seeded; with
    init "gpt2" re-initialized as GPT-2 is (init_gpt2_)."""
    torch.manual_seed(seed)
    model = GPT2Classifier() if name == "gpt2cls" else MODELS[name]()
    return init_gpt2_(model) if init == "gpt2" else model


def export_classifier(model, path, opset=17, dynamic=True):
    """GPT2Classifier: inputs input_ids [batch, sequence] (int64, pads 0 on
    the right) and labels [batch]; outputs loss and logits [batch, 2]."""
    ids, _ = example_inputs()
    ids[:, -3:] = GPT2Classifier.PAD_ID  # padded rows, as the data has them
    labels = torch.arange(ids.size(0)) % GPT2Classifier.CLASSES
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "labels": {0: "batch"},
            "logits": {0: "batch"}}
    torch.onnx.export(
        model, (ids, labels), path, input_names=["input_ids", "labels"],
        output_names=["loss", "logits"], opset_version=opset, do_constant_folding=False,
        training=torch.onnx.TrainingMode.TRAINING, dynamic_axes=axes if dynamic else None)
    mark_buffers_frozen(model, path)


EXAMPLE_SHAPE = [2, 16]  # batch, sequence of the export's example inputs


def example_inputs(batch=None, seq=None, seed=1):
    batch = batch or EXAMPLE_SHAPE[0]
    seq = seq or EXAMPLE_SHAPE[1]
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (batch, seq), generator=g)
    targets = torch.randint(0, VOCAB, (batch, seq), generator=g)
    return ids, targets


def export(model, path, opset, dynamic, folding=False, logits=False):
    ids, targets = example_inputs()
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "targets": {0: "batch", 1: "sequence"}}
    if logits:
        axes = {"input_ids": axes["input_ids"], "logits": {0: "batch", 1: "sequence"}}
    torch.onnx.export(
        model, (ids,) if logits else (ids, targets), path,
        input_names=["input_ids"] if logits else ["input_ids", "targets"],
        output_names=["logits"] if logits else ["loss"],
        opset_version=opset, do_constant_folding=folding,
        training=torch.onnx.TrainingMode.TRAINING,
        dynamic_axes=axes if dynamic else None)
    mark_buffers_frozen(model, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default="gpt2,bert,gptj")
    parser.add_argument("--opsets", default="13,17")
    parser.add_argument("--folded", action="store_true")
    parser.add_argument("--variants", action="store_true",
                        help="also gpt2_op17_logits.onnx and gpt2_op17_dropout.onnx")
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--init", choices=["torch", "gpt2"], default="torch",
                        help="weights: PyTorch's default initialization (the test models') "
                             "or GPT-2's N(0, 0.02) (a sensible starting loss)")
    parser.add_argument("--vocab", type=int, help="vocabulary size (overrides --size's)")
    parser.add_argument("--context", type=int,
                        help="positions the model holds (overrides --size's; long-sequence runs)")
    parser.add_argument("--batch", type=int, default=2, help="example batch (static exports)")
    parser.add_argument("--seq", type=int, default=16, help="example sequence (static exports)")
    parser.add_argument("--static-only", action="store_true",
                        help="skip the _dyn exports (large sizes: one copy of the weights)")
    args = parser.parse_args()
    configure(args.size)
    if args.vocab:
        globals()["VOCAB"] = args.vocab
    if args.context:
        globals()["CONTEXT"] = args.context
    EXAMPLE_SHAPE[:] = [args.batch, args.seq]
    os.makedirs(args.out, exist_ok=True)
    import warnings
    warnings.filterwarnings("ignore")
    for name in args.models.split(","):
        if name not in MODELS and name != "gpt2cls":
            sys.exit(f"error: --models: unknown model '{name}' "
                     f"(known: {', '.join(MODELS)}, gpt2cls)")
        for opset in (int(o) for o in args.opsets.split(",")):
            if name == "gpt2cls":  # batch and sequence come from the data: dynamic only
                path = os.path.join(args.out, f"gpt2cls_op{opset}_dyn.onnx")
                export_classifier(build(name, init=args.init), path, opset)
                print(path)
                continue
            for dynamic in (False,) if args.static_only else (False, True):
                path = os.path.join(args.out, f"{name}_op{opset}{'_dyn' if dynamic else ''}.onnx")
                export(build(name, init=args.init), path, opset, dynamic)
                print(path)
    if args.folded:
        path = os.path.join(args.out, "gpt2_op17_folded.onnx")
        export(build("gpt2"), path, 17, False, folding=True)
        print(path)
    if args.variants:
        # Same weights as gpt2_op17.onnx: output logits instead of the loss.
        for dynamic in (False, True):
            path = os.path.join(args.out, f"gpt2_op17_logits{'_dyn' if dynamic else ''}.onnx")
            export(LogitsOnly(build("gpt2")), path, 17, dynamic, logits=True)
            print(path)
        # Active dropout (ratio 0.1), exported in training mode.
        torch.manual_seed(0)
        path = os.path.join(args.out, "gpt2_op17_dropout.onnx")
        export(GPT2(dropout=0.1), path, 17, False)
        print(path)
        # A prefix-LM mask: not causal by chunks of positions, so context
        # parallelism's balanced ring keeps every block of it.
        prefix = build("gpt2")
        with torch.no_grad():
            for block in prefix.blocks:
                block.bias[..., :6] = 1
        path = os.path.join(args.out, "gpt2_op17_prefix_dyn.onnx")
        export(prefix, path, 17, True)
        print(path)
        # A sequence classifier (GPT-2's init): rows data, eval accuracy.
        path = os.path.join(args.out, "gpt2cls_op17_dyn.onnx")
        export_classifier(build("gpt2cls", init="gpt2"), path)
        print(path)
        if "llama" not in args.models.split(","):
            for dynamic in (False, True):
                path = os.path.join(args.out, f"llama_op17{'_dyn' if dynamic else ''}.onnx")
                export(build("llama"), path, 17, dynamic)
                print(path)


if __name__ == "__main__":
    main()
