#!/usr/bin/env python3
"""Writes OUT/pairs.onnx, a static export (batch 2) whose Reshape regroups
its batch's values into pairs: loss = mean(max over pairs of
reshape(w * x, [4, 2])) for x [2, 4]. At batch 4 the re-derivation rule
cannot tell the pairs' axis from the batch and guesses [4, 4] (max over
rows, not pairs), a graph with valid shapes that computes something else;
trc-run's check on repeated rows must refuse it. Also OUT/rows.npz: 8 rows
of x."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
graph = helper.make_graph(
    [helper.make_node("Mul", ["x", "w"], ["scaled"], name="scale"),
     helper.make_node("Reshape", ["scaled", "pairs_shape"], ["pairs"], name="pairs"),
     helper.make_node("ReduceMax", ["pairs"], ["maxima"], name="max_of_pair", axes=[1],
                      keepdims=0),
     helper.make_node("ReduceMean", ["maxima"], ["loss"], name="mean", keepdims=0)],
    "pairs",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
    [numpy_helper.from_array(np.ones([1], np.float32), "w"),
     numpy_helper.from_array(np.array([4, 2], np.int64), "pairs_shape")])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
     os.path.join(out, "pairs.onnx"))
rng = np.random.default_rng(0)
np.savez(os.path.join(out, "rows.npz"), x=rng.standard_normal([8, 4]).astype(np.float32))
