#!/usr/bin/env python3
"""Runs ONNX Pad in every mode and opset form through trc-run and compares
with Pad's definition in numpy (checked against onnx's reference evaluator
where it can run the case):

    check_pad.py WORKDIR [--trc-run trc-run]

Cases: pads as an attribute (opsets 2, 10), as an input (11, 13), with axes
(18, negative axes too), wrap (19, 21, 23), negative pads (cropping), a pad
value input, and int64 labels padded with -100 (what Hugging Face's
causal-LM loss does before shifting). Prints "pad: N cases match" or the
first mismatch (exit 1).
"""
import argparse
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_forward import forward  # noqa: E402

X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4) / 7 - 1
LABELS = np.arange(2 * 5, dtype=np.int64).reshape(2, 5)

# name, opset, mode, pads, axes (None: all), value, input
CASES = [
    ("constant_attr_op2", 2, "constant", [0, 1, 2, 0, 1, 0], None, 1.5, X),
    ("reflect_attr_op10", 10, "reflect", [0, 2, 1, 0, 0, 3], None, None, X),
    ("constant_op11", 11, "constant", [1, 0, 0, 0, 2, 1], None, 0.0, X),
    ("edge_op13", 13, "edge", [0, 2, 3, 1, 1, 2], None, None, X),
    ("reflect_op13", 13, "reflect", [1, 1, 2, 0, 2, 3], None, None, X),
    ("axes_op18", 18, "constant", [2, 1], [2], -2.0, X),
    ("negative_axes_op18", 18, "edge", [1, 0, 0, 2], [-1, 1], None, X),
    ("wrap_op19", 19, "wrap", [0, 1, 3, 0, 2, 2], None, None, X),
    ("wrap_axes_op21", 21, "wrap", [2, 1], [1], None, X),
    ("crop_op13", 13, "constant", [0, -1, 1, 0, 1, -2], None, 0.0, X),
    ("crop_edge_op23", 23, "edge", [0, -1, 2, 0, 2, -1], None, None, X),
    ("labels_op20", 20, "constant", [0, 0, 0, 1], None, -100, LABELS),
]


def build(name, opset, mode, pads, axes, value, x):
    elem = TensorProto.INT64 if x.dtype == np.int64 else TensorProto.FLOAT
    inits, inputs, attrs = [], ["x"], {}
    if mode != "constant" or opset >= 2:
        attrs["mode"] = mode
    if opset < 11:
        attrs["pads"] = pads
        if value is not None:
            attrs["value"] = float(value)
    else:
        inits.append(numpy_helper.from_array(np.array(pads, np.int64), "pads"))
        inputs.append("pads")
        if value is not None:
            inits.append(numpy_helper.from_array(np.array(value, x.dtype), "value"))
            inputs.append("value")
        if axes is not None:
            if value is None:
                inputs.append("")
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
            inputs.append("axes")
    node = helper.make_node("Pad", inputs, ["y"], name="pad", **attrs)
    graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", elem, x.shape)],
                              [helper.make_tensor_value_info("y", elem, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10 if opset >= 21 else 8
    return model


def expected(x, mode, pads, axes, value):
    """Pad's definition in numpy: negative pads crop, then np.pad."""
    axes = list(range(x.ndim)) if axes is None else [a % x.ndim for a in axes]
    n = len(axes)
    widths = [[0, 0] for _ in range(x.ndim)]
    for i, a in enumerate(axes):
        widths[a] = [pads[i], pads[i + n]]
    crop = tuple(slice(max(0, -lo), x.shape[d] - max(0, -hi))
                 for d, (lo, hi) in enumerate(widths))
    widths = [[max(0, lo), max(0, hi)] for lo, hi in widths]
    if mode == "constant":
        return np.pad(x[crop], widths, mode="constant", constant_values=value or 0)
    return np.pad(x[crop], widths, mode=mode)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--trc-run", default="trc-run")
    a = p.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    for name, opset, mode, pads, axes, value, x in CASES:
        model = build(name, opset, mode, pads, axes, value, x)
        got = forward(a.trc_run, model, {"x": x}, a.workdir, name)
        want = expected(x, mode, pads, axes, value)
        if min(pads) >= 0:  # onnx's evaluator cannot crop; where it can, it agrees
            assert np.array_equal(want, ReferenceEvaluator(model).run(None, {"x": x})[0]), name
        if got.shape != want.shape or not np.array_equal(got, want):
            sys.exit(f"error: {name}: got {got.shape} {got.ravel()[:12]}, "
                     f"want {want.shape} {want.ravel()[:12]}")
    print(f"pad: {len(CASES)} cases match the reference")


if __name__ == "__main__":
    main()
