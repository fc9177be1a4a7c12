#!/usr/bin/env python3
"""Writes small models at opsets 18-21 (newer than PyTorch 1.13 exports) whose
ops changed semantics there: ReduceMean/Max with axes as an input (18), Split
with num_outputs (18), Gelu (20), plus a GPT-style block at 21 using them.

    make_opset_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, out, name, opset):
    model.opset_import[0].version = opset
    model.ir_version = 8
    onnx.save(model, os.path.join(out, name))


def reduce_axes_input(out):
    nodes = [
        helper.make_node("ReduceMean", ["x", "axes"], ["m"], keepdims=1, name="mean"),
        helper.make_node("ReduceMax", ["x", "axes"], ["mx"], keepdims=0, name="max"),
    ]
    graph = helper.make_graph(
        nodes, "reduce18",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, 6])],
        [helper.make_tensor_value_info("m", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("mx", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([-1], dtype=np.int64), "axes")])
    save(helper.make_model(graph), out, "reduce_op18.onnx", 18)


def split_num_outputs(out):
    node = helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3, name="split")
    graph = helper.make_graph(
        [node], "split18",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "abc"])
    save(helper.make_model(graph), out, "split_op18.onnx", 18)


def gelu(out, opset):
    nodes = [helper.make_node("Gelu", ["x"], ["y"], approximate="tanh", name="gelu_tanh"),
             helper.make_node("Gelu", ["y"], ["z"], name="gelu_exact")]
    graph = helper.make_graph(
        nodes, "gelu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [3, 5])])
    save(helper.make_model(graph), out, f"gelu_op{opset}.onnx", opset)


def block21(out):
    """LayerNorm -> MatMul -> Gelu -> MatMul -> residual, with a
    ReduceMean(axes input) norm check, at opset 21."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 32)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 8)).astype(np.float32), "w2")
    g = numpy_helper.from_array(np.ones(8, np.float32), "ln.weight")
    b = numpy_helper.from_array(np.zeros(8, np.float32), "ln.bias")
    axes = numpy_helper.from_array(np.array([0, 1, 2], dtype=np.int64), "all_axes")
    nodes = [
        helper.make_node("LayerNormalization", ["x", "ln.weight", "ln.bias"], ["h"], axis=-1, name="ln"),
        helper.make_node("MatMul", ["h", "w1"], ["u"], name="fc1"),
        helper.make_node("Gelu", ["u"], ["a"], approximate="tanh", name="act"),
        helper.make_node("MatMul", ["a", "w2"], ["v"], name="fc2"),
        helper.make_node("Add", ["x", "v"], ["y"], name="residual"),
        helper.make_node("ReduceMean", ["y", "all_axes"], ["loss"], keepdims=0, name="loss"),
    ]
    graph = helper.make_graph(
        nodes, "block21",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "sequence", 8])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [w1, w2, g, b, axes])
    save(helper.make_model(graph), out, "block_op21.onnx", 21)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    reduce_axes_input(out)
    split_num_outputs(out)
    gelu(out, 20)
    gelu(out, 21)
    block21(out)


if __name__ == "__main__":
    main()
