#!/usr/bin/env python3
"""Runs opset-23 ops through trc-run and compares with onnx's reference
evaluator:

    check_opset23.py WORKDIR [--trc-run trc-run]

RMSNormalization: over the last axis (scale [D]), over the last two axes
(scale [S, D]), with another epsilon. RotaryEmbedding: 4-D input with
position ids into [positions, rotary/2] caches; 3-D input (num_heads),
interleaved, rotating part of each head, caches per [batch, seq].
Attention: 4-D plain, causal with grouped-query heads (both trc.attention),
3-D with head counts and a boolean mask with a fully masked row, an
additive float mask with softcap and scale, a key/value cache with causal
(the decomposition). Prints "opset 23: N cases match onnx's
reference" or the first mismatch (exit 1).
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_forward import forward  # noqa: E402

g = np.random.default_rng(0)
X = g.standard_normal((2, 3, 8)).astype(np.float32)

def f32(*shape):
    return g.standard_normal(shape).astype(np.float32)


MASK = g.random((5, 6)) < 0.6
MASK[2] = False  # a query with no key to attend: ONNX gives 0


def feeds(**arrays):
    return arrays


# name, op, attributes, x (the graph input, or a dict of graph inputs),
# initializers (name -> array; "" for an omitted input)
CASES = [
    ("rms_last", "RMSNormalization", {}, X, {"scale": f32(8)}),
    ("rms_two_axes", "RMSNormalization", {"axis": -2, "epsilon": 1e-3}, X, {"scale": f32(3, 8)}),
    ("rms_axis1", "RMSNormalization", {"axis": 1}, X, {"scale": f32(3, 8)}),
    ("rotary_4d_positions", "RotaryEmbedding", {}, f32(2, 4, 5, 8),
     {"cos": f32(16, 4), "sin": f32(16, 4),
      "positions": g.integers(0, 16, (2, 5)).astype(np.int64)}),
    ("rotary_3d_interleaved_partial", "RotaryEmbedding",
     {"num_heads": 4, "interleaved": 1, "rotary_embedding_dim": 4}, f32(2, 5, 32),
     {"cos": f32(2, 5, 2), "sin": f32(2, 5, 2)}),
    ("rotary_4d_halves_partial", "RotaryEmbedding", {"rotary_embedding_dim": 6}, f32(1, 2, 3, 8),
     {"cos": f32(4, 3), "sin": f32(4, 3), "positions": np.array([[3, 0, 2]], np.int64)}),
    ("attention_plain", "Attention", {}, feeds(q=f32(2, 4, 5, 8), k=f32(2, 4, 5, 8),
                                              v=f32(2, 4, 5, 8)), {}),
    ("attention_causal_gqa", "Attention", {"is_causal": 1},
     feeds(q=f32(2, 4, 5, 8), k=f32(2, 2, 5, 8), v=f32(2, 2, 5, 8)), {}),
    ("attention_3d_bool_mask", "Attention", {"q_num_heads": 4, "kv_num_heads": 2},
     feeds(q=f32(2, 5, 32), k=f32(2, 6, 16), v=f32(2, 6, 16)), {"mask": MASK}),
    ("attention_float_mask_softcap", "Attention", {"softcap": 2.0, "scale": 0.3},
     feeds(q=f32(2, 2, 5, 8), k=f32(2, 2, 5, 8), v=f32(2, 2, 5, 6)), {"mask": f32(2, 1, 5, 5)}),
    ("attention_cache_causal", "Attention", {"is_causal": 1},
     feeds(q=f32(1, 2, 3, 4), k=f32(1, 2, 3, 4), v=f32(1, 2, 3, 4)),
     {"": None, "past_key": f32(1, 2, 4, 4), "past_value": f32(1, 2, 4, 4)}),
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--trc-run", default="trc-run")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    for name, op, attrs, x, inits in CASES:
        inputs = x if isinstance(x, dict) else {"x": x}
        node = helper.make_node(op, [*inputs, *inits], ["y"], name=name, **attrs)
        graph = helper.make_graph(
            [node], name,
            [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(v, k) for k, v in inits.items() if k])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
        model.ir_version = 11
        got = forward(a.trc_run, model, inputs, a.workdir, name)
        want = ReferenceEvaluator(model).run(None, inputs)[0]
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
            sys.exit(f"error: {name}: max difference {np.abs(got - want).max()}")
    print(f"opset 23: {len(CASES)} cases match onnx's reference")
    check_training(a)


def check_training(a):
    """Trains x -> Attention(x Wq, x Wk, x Wv, causal) -> mean(y^2) through the
    fused path (no mask: trc.attention and its gradient) and through the
    decomposition (an all-true boolean mask), 4 SGD steps each: the losses
    must agree (the same function, two gradient programs)."""
    rows = g.standard_normal((8, 5, 8)).astype(np.float32)
    data = os.path.join(a.workdir, "rows.npz")
    np.savez(data, x=rows)
    weights = {n: (g.standard_normal((8, 8)) * 0.3).astype(np.float32) for n in ("wq", "wk", "wv")}
    curves = {}
    for variant in ("fused", "decomposed"):
        nodes = [helper.make_node("MatMul", ["x", "w" + c], [c], name="proj_" + c) for c in "qkv"]
        inputs = ["q", "k", "v"]
        inits = [numpy_helper.from_array(v, k) for k, v in weights.items()]
        if variant == "decomposed":
            inputs.append("mask")
            inits.append(numpy_helper.from_array(np.ones((5, 5), bool), "mask"))
        nodes += [
            helper.make_node("Attention", inputs, ["y"], name="attention", is_causal=1,
                             q_num_heads=2, kv_num_heads=2),
            helper.make_node("Mul", ["y", "y"], ["y2"], name="square"),
            helper.make_node("ReduceMean", ["y2"], ["loss"], name="mean", keepdims=0),
        ]
        graph = helper.make_graph(nodes, variant,
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 8])],
                                  [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
                                  inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
        model.ir_version = 11
        path = os.path.join(a.workdir, f"train_{variant}.onnx")
        onnx.save(model, path)
        metrics = os.path.join(a.workdir, f"train_{variant}.jsonl")
        run = subprocess.run([a.trc_run, path, "--device", "cpu", "--data", data, "--batch-size",
                              "2", "--steps", "4", "--optimizer", "sgd", "--lr", "0.5",
                              "--metrics", metrics], capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"error: training {variant}: trc-run failed: {run.stderr.strip()}")
        import json
        with open(metrics) as f:
            curves[variant] = [json.loads(line)["loss"] for line in f if line.strip()]
    fused, decomposed = curves["fused"], curves["decomposed"]
    if len(fused) != 4 or fused[0] == fused[-1] or not np.allclose(fused, decomposed, rtol=1e-5):
        sys.exit(f"error: training through Attention: fused {fused}, decomposed {decomposed}")
    print(f"attention training: fused and decomposed agree over 4 steps ({fused[0]:.5f} -> "
          f"{fused[-1]:.5f})")


if __name__ == "__main__":
    main()
