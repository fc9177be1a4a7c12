#!/usr/bin/env python3
"""Writes small ONNX models whose op attributes or operands are wrong, one
per case, for the importer's negative tests of the op families
(test/Import/op-families-invalid.test).

    python3 test/Inputs/make_bad_op_models.py OUT_DIR

Each model has one node named after its case; OUT_DIR/<case>.onnx.
Built with onnx.helper only (no torch), opset 17. Deterministic.
"""
import os
import sys

from onnx import TensorProto, helper

FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64


def tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def one_node(case, op, inputs, outputs, **attrs):
    """A graph of one `op` node named `case`; inputs/outputs: (name, elem, shape)."""
    node = helper.make_node(op, [i[0] for i in inputs], [o[0] for o in outputs], name=case,
                            **attrs)
    graph = helper.make_graph([node], case, [tensor(*i) for i in inputs],
                              [tensor(*o) for o in outputs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="make_bad_op_models")
    m.ir_version = 8
    return m


CASES = {
    # Conv: 4 input channels do not split into 3 groups.
    "conv_groups": ("Conv", [("x", FLOAT, [1, 4, 5, 5]), ("w", FLOAT, [2, 2, 3, 3])],
                    [("y", FLOAT, None)], {"group": 3}),
    # Conv: a negative explicit pad.
    "conv_negative_pad": ("Conv", [("x", FLOAT, [1, 1, 5, 5]), ("w", FLOAT, [1, 1, 3, 3])],
                          [("y", FLOAT, None)], {"pads": [0, -1, 0, 0]}),
    # ConvTranspose: an unknown auto_pad.
    "convtranspose_auto_pad": ("ConvTranspose",
                               [("x", FLOAT, [1, 1, 3, 3]), ("w", FLOAT, [1, 2, 3, 3])],
                               [("y", FLOAT, None)], {"auto_pad": "FULL"}),
    # MaxPool: strides of the wrong length.
    "maxpool_strides": ("MaxPool", [("x", FLOAT, [1, 1, 5, 5])], [("y", FLOAT, None)],
                        {"kernel_shape": [2, 2], "strides": [1, 1, 1]}),
    # AveragePool: no kernel_shape.
    "averagepool_no_kernel": ("AveragePool", [("x", FLOAT, [1, 1, 5, 5])],
                              [("y", FLOAT, None)], {}),
    # BatchNormalization: scale of 2 values for 3 channels.
    "batchnorm_scale": ("BatchNormalization",
                        [("x", FLOAT, [2, 3, 4]), ("s", FLOAT, [2]), ("b", FLOAT, [3]),
                         ("m", FLOAT, [3]), ("v", FLOAT, [3])], [("y", FLOAT, None)], {}),
    # LRN: size 0.
    "lrn_size": ("LRN", [("x", FLOAT, [1, 3, 4, 4])], [("y", FLOAT, None)], {"size": 0}),
    # ArgMax: axis out of range.
    "argmax_axis": ("ArgMax", [("x", FLOAT, [3, 4])], [("y", INT64, None)], {"axis": 2}),
    # GatherElements: indices of another rank.
    "gatherelements_rank": ("GatherElements", [("x", FLOAT, [3, 4]), ("i", INT64, [3])],
                            [("y", FLOAT, None)], {"axis": 0}),
    # CumSum: the axis must be a constant (here a graph input).
    "cumsum_axis_input": ("CumSum", [("x", FLOAT, [3, 4]), ("axis", INT64, [])],
                          [("y", FLOAT, None)], {}),
    # NegativeLogLikelihoodLoss: class weights of the wrong length.
    "nll_weights": ("NegativeLogLikelihoodLoss",
                    [("x", FLOAT, [2, 3]), ("t", INT64, [2]), ("w", FLOAT, [4])],
                    [("loss", FLOAT, None)], {}),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for case, (op, inputs, outputs, attrs) in CASES.items():
        m = one_node(case, op, inputs, outputs, **attrs)
        with open(os.path.join(out, case + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())


if __name__ == "__main__":
    main()
