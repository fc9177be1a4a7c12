#!/usr/bin/env python3
"""Writes OUT/pow_int_base.onnx (int64 base, float exponent 0.5, opset 15)
and OUT/x.npy = [4, 9, 16]; ONNX (and onnxruntime) give [2, 3, 4]."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
graph = helper.make_graph(
    [helper.make_node("Pow", ["x", "e"], ["y"], name="pow")], "pow",
    [helper.make_tensor_value_info("x", TensorProto.INT64, [3])],
    [helper.make_tensor_value_info("y", TensorProto.INT64, [3])],
    [numpy_helper.from_array(np.array([0.5], np.float32), "e")])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)]),
     os.path.join(out, "pow_int_base.onnx"))
np.save(os.path.join(out, "x.npy"), np.array([4, 9, 16], np.int64))
