#!/usr/bin/env python3
"""Writes OUT/rows.npz (x: 8 rows of 4 positive floats) and two models whose
training goes non-finite at a known node, for --detect-anomaly:
  anomaly_log.onnx:  loss = mean(log(x @ w)); SGD at a large rate drives w
                     negative, so node 'log_of_scores' makes NaN (forward).
  anomaly_sqrt.onnx: loss = mean(sqrt(x @ w * zero)): the forward is 0, but
                     sqrt's gradient at 0 is inf (node 'root'), times the
                     zero that node 'times_zero' multiplied by is NaN
                     (backward, step 1).
w is the only initializer (trainable); the zero is a Constant node."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
np.savez(os.path.join(out, "rows.npz"), x=rng.uniform(0.5, 1.5, (8, 4)).astype(np.float32))
w = numpy_helper.from_array(np.full((4, 3), 0.5, np.float32), "w")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
loss = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])


def model(name, nodes):
    graph = helper.make_graph(nodes, name, [x], [loss], [w])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
         os.path.join(out, name + ".onnx"))


model("anomaly_log", [
    helper.make_node("MatMul", ["x", "w"], ["scores"], name="scores"),
    helper.make_node("Log", ["scores"], ["logs"], name="log_of_scores"),
    helper.make_node("ReduceMean", ["logs"], ["loss"], name="mean", keepdims=0),
])
model("anomaly_sqrt", [
    helper.make_node("MatMul", ["x", "w"], ["scores"], name="scores"),
    helper.make_node("Constant", [], ["zero"], name="zero",
                     value=numpy_helper.from_array(np.zeros((1,), np.float32))),
    helper.make_node("Mul", ["scores", "zero"], ["zeros"], name="times_zero"),
    helper.make_node("Sqrt", ["zeros"], ["roots"], name="root"),
    helper.make_node("ReduceMean", ["roots"], ["loss"], name="mean", keepdims=0),
])
