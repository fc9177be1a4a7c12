#!/usr/bin/env python3
"""Runs opset-23 ops through trc-run and compares with onnx's reference
evaluator:

    check_opset23.py WORKDIR [--trc-run trc-run]

RMSNormalization: over the last axis (scale [D]), over the last two axes
(scale [S, D]), with another epsilon. RotaryEmbedding: 4-D input with
position ids into [positions, rotary/2] caches; 3-D input (num_heads),
interleaved, rotating part of each head, caches per [batch, seq]. Prints "opset 23: N cases match onnx's
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

g = np.random.default_rng(0)
X = g.standard_normal((2, 3, 8)).astype(np.float32)

def f32(*shape):
    return g.standard_normal(shape).astype(np.float32)


# name, op, attributes, x, initializers (name -> array; "" for an omitted input)
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
]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--trc-run", default="trc-run")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    for name, op, attrs, x, inits in CASES:
        xpath = os.path.join(a.workdir, name + ".x.npy")
        np.save(xpath, x)
        node = helper.make_node(op, ["x", *inits], ["y"], name=name, **attrs)
        graph = helper.make_graph(
            [node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(v, k) for k, v in inits.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
        model.ir_version = 11
        path = os.path.join(a.workdir, name + ".onnx")
        onnx.save(model, path)
        out = os.path.join(a.workdir, name + ".out")
        run = subprocess.run([a.trc_run, path, "--device", "cpu", "--input", "x=" + xpath,
                              "--output-dir", out], capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"error: {name}: trc-run failed: {run.stderr.strip()}")
        want = ReferenceEvaluator(model).run(None, {"x": x})[0]
        got = np.load(os.path.join(out, "y.npy"))
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
            sys.exit(f"error: {name}: max difference {np.abs(got - want).max()}")
    print(f"opset 23: {len(CASES)} cases match onnx's reference")


if __name__ == "__main__":
    main()
