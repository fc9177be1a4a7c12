#!/usr/bin/env python3
"""A Hugging Face Llama of the bench GPT-2's size, exported by torch 2.x the
way trc trains it, for bench/plan_accuracy.py --model.

    V/bin/python bench/export_hf_llama.py OUT.onnx

V is the side virtual environment with torch 2.x and transformers 5.x
(scripts/make_torch2_fixtures.py's header says how to make it; never part
of setup or CI). LlamaForCausalLM: 4 layers, hidden 256, 8 heads with 4
key/value heads (grouped-query attention), SwiGLU MLP of width 688,
RMSNorm, rotary positions, untied output layer, vocabulary 256, 64
positions; seed 0, dropout 0, no cache. Exported with
trc.onnx_export.export_for_training (dynamo exporter, optimize off, axes
'batch' and 'sequence', inputs input_ids and labels, output the model's own
loss) at batch 4 x 64 tokens. About 11 MB: made when measured, not
committed.
"""
import os
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
import transformers  # noqa: E402

from trc.onnx_export import export_for_training  # noqa: E402


class Loss(torch.nn.Module):
    """The model called with labels, returning its own loss."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels):
        return self.model(input_ids=input_ids, labels=labels).loss


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    if int(torch.__version__.split(".")[0]) < 2:
        raise SystemExit(f"error: torch {torch.__version__}: needs torch 2.x")
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=256, hidden_size=256, num_hidden_layers=4, num_attention_heads=8,
        num_key_value_heads=4, intermediate_size=688, max_position_embeddings=64,
        attention_dropout=0.0, use_cache=False, bos_token_id=1, eos_token_id=2)
    model = transformers.LlamaForCausalLM(config)
    model.train()
    ids = torch.randint(0, 256, (4, 64))
    export_for_training(Loss(model), {"input_ids": ids, "labels": ids.clone()}, sys.argv[1],
                        saved=model, log=lambda call: print(call, file=sys.stderr))


if __name__ == "__main__":
    main()
