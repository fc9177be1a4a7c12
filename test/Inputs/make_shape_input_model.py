#!/usr/bin/env python3
"""Writes OUT/shape_inputs.onnx, whose shapes depend on integer graph inputs
(z = Tile(Reshape(x, shape), repeats), opset 17, output shape unknown to the
file), and OUT/x.npy = arange(6) as [2, 3], OUT/shape.npy = [3, 2],
OUT/repeats.npy = [1, 2]. numpy gives z = [[0, 1, 0, 1], [2, 3, 2, 3],
[4, 5, 4, 5]]."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, save

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
graph = helper.make_graph(
    [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape"),
     helper.make_node("Tile", ["y", "repeats"], ["z"], name="tile")], "shape_inputs",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
     helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
     helper.make_tensor_value_info("repeats", TensorProto.INT64, [2])],
    [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
     os.path.join(out, "shape_inputs.onnx"))
np.save(os.path.join(out, "x.npy"), np.arange(6, dtype=np.float32).reshape(2, 3))
np.save(os.path.join(out, "shape.npy"), np.array([3, 2], np.int64))
np.save(os.path.join(out, "repeats.npy"), np.array([1, 2], np.int64))
