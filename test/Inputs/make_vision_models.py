#!/usr/bin/env python3
"""Writes small ONNX models of the convolutional ops in combinations that the
ONNX node tests leave out, for test/Import/vision-ops.test:

    make_vision_models.py OUT_DIR

* conv_groups.onnx: Conv with 2 groups, dilations 2, strides (1, 2),
  asymmetric pads and a bias, then MaxPool 3x3 stride 2 with ceil_mode,
  then BatchNormalization in training mode (running statistics as
  outputs) and GlobalAveragePool;
* conv_bad_group.onnx: Conv group 2 on 3 input channels (an error).
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

FLOAT = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", FLOAT, [2, 4, 9, 11])
    inits = [("w", rng.standard_normal((6, 2, 3, 3)).astype(np.float32)),
             ("b", rng.standard_normal(6).astype(np.float32)),
             ("scale", rng.standard_normal(6).astype(np.float32)),
             ("bias", rng.standard_normal(6).astype(np.float32)),
             ("mean", rng.standard_normal(6).astype(np.float32)),
             ("var", rng.random(6).astype(np.float32) + 0.5)]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], group=2, dilations=[2, 1],
                         strides=[1, 2], pads=[1, 2, 0, 1]),
        helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                         ceil_mode=1),
        helper.make_node("BatchNormalization", ["p", "scale", "bias", "mean", "var"],
                         ["n", "running_mean", "running_var"], training_mode=1, momentum=0.8),
        helper.make_node("GlobalAveragePool", ["n"], ["y"]),
    ]
    outputs = [helper.make_tensor_value_info(n, FLOAT, None)
               for n in ("y", "running_mean", "running_var")]
    save(model(nodes, [x], outputs, inits), os.path.join(out, "conv_groups.onnx"))

    x3 = helper.make_tensor_value_info("x", FLOAT, [1, 3, 5, 5])
    y = helper.make_tensor_value_info("y", FLOAT, None)
    save(model([helper.make_node("Conv", ["x", "w"], ["y"], group=2, name="conv")], [x3], [y],
               [("w", np.ones((2, 1, 3, 3), np.float32))]),
         os.path.join(out, "conv_bad_group.onnx"))


if __name__ == "__main__":
    main()
