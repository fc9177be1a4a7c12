#!/usr/bin/env python3
"""Writes small ONNX models with Loop, Scan, If and sequence ops for the importer's
tests of compile-time unrolling (test/Import/control-flow.test and
control-flow-invalid.test).

    python3 test/Inputs/make_control_flow_models.py OUT_DIR

One model per case, OUT_DIR/<case>.onnx. Built with onnx.helper only (no
torch), opset 17 (one case 18). Deterministic.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64
BOOL = TensorProto.BOOL


def tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(value), name))


def model(name, nodes, inputs, outputs, opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="make_control_flow_models")
    m.ir_version = 8
    return m


def body(name, nodes, inputs, outputs):
    return helper.make_graph(nodes, name, inputs, outputs)


def loop_scan():
    """y = x; 3 times: y = y + x (x read from the outer scope); scan: y * i."""
    b = body("loop_scan_body", [
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
        helper.make_node("Add", ["y_in", "x"], ["y_out"], name="accumulate"),
        helper.make_node("Cast", ["i"], ["i_float"], name="cast", to=FLOAT),
        helper.make_node("Mul", ["y_out", "i_float"], ["scan"], name="scale"),
    ], [tensor("i", INT64, []), tensor("cond_in", BOOL, []), tensor("y_in", FLOAT, [2])],
        [tensor("cond_out", BOOL, []), tensor("y_out", FLOAT, [2]),
         tensor("scan", FLOAT, [2])])
    return model("loop_scan", [
        const("m", np.int64(3)), const("true", np.bool_(True)),
        helper.make_node("Loop", ["m", "true", "x"], ["y", "scans"], name="loop", body=b),
    ], [tensor("x", FLOAT, [2])], [tensor("y", FLOAT, [2]), tensor("scans", FLOAT, [3, 2])])


def loop_early_exit():
    """M = 10 but the body's condition (i < 1) ends the loop after 2 iterations."""
    b = body("loop_early_exit_body", [
        const("one", np.int64(1)),
        helper.make_node("Less", ["i", "one"], ["cond_out"], name="less"),
        helper.make_node("Neg", ["x"], ["scan"], name="negate"),
    ], [tensor("i", INT64, []), tensor("cond_in", BOOL, [])],
        [tensor("cond_out", BOOL, []), tensor("scan", FLOAT, [3])])
    return model("loop_early_exit", [
        const("m", np.int64(10)), const("true", np.bool_(True)),
        helper.make_node("Loop", ["m", "true"], ["scans"], name="loop", body=b),
    ], [tensor("x", FLOAT, [3])], [tensor("scans", FLOAT, [2, 3])])


def loop_zero_iterations():
    """M = 0: the scan output is empty, shaped as the body declares it."""
    b = body("loop_zero_body", [
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
        helper.make_node("Neg", ["x"], ["scan"], name="negate"),
    ], [tensor("i", INT64, []), tensor("cond_in", BOOL, [])],
        [tensor("cond_out", BOOL, []), tensor("scan", FLOAT, [3])])
    return model("loop_zero_iterations", [
        const("m", np.int64(0)), const("true", np.bool_(True)),
        helper.make_node("Loop", ["m", "true"], ["scans"], name="loop", body=b),
    ], [tensor("x", FLOAT, [3])], [tensor("scans", FLOAT, [0, 3])])


def loop_sequence():
    """As torch.onnx writes repeat_interleave: a Loop whose trip count is x's
    first dimension (Shape/Gather, folded) reads the pieces of SplitToSequence
    at the iteration number and appends to a sequence that starts empty;
    ConcatFromSequence joins the result."""
    b = body("loop_sequence_body", [
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
        helper.make_node("SequenceAt", ["pieces", "i"], ["piece"], name="at"),
        helper.make_node("Concat", ["piece", "piece"], ["twice"], name="twice", axis=0),
        helper.make_node("SequenceInsert", ["seq_in", "twice"], ["seq_out"], name="insert"),
    ], [tensor("i", INT64, []), tensor("cond_in", BOOL, []),
        helper.make_tensor_sequence_value_info("seq_in", FLOAT, None)],
        [tensor("cond_out", BOOL, []),
         helper.make_tensor_sequence_value_info("seq_out", FLOAT, None)])
    return model("loop_sequence", [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        const("zero", np.int64(0)),
        helper.make_node("Gather", ["shape", "zero"], ["rows"], name="rows"),
        const("true", np.bool_(True)),
        helper.make_node("SplitToSequence", ["x"], ["pieces"], name="split", axis=0),
        helper.make_node("SequenceEmpty", [], ["empty"], name="empty", dtype=FLOAT),
        helper.make_node("Loop", ["rows", "true", "empty"], ["seq"], name="loop", body=b),
        helper.make_node("ConcatFromSequence", ["seq"], ["y"], name="concat", axis=0),
    ], [tensor("x", FLOAT, ["n", 4])], [tensor("y", FLOAT, None)])


def split_to_sequence():
    """SplitToSequence with a scalar split (the last piece smaller), a 1-D
    split, none (keepdims=0); SequenceAt, SequenceErase, SequenceInsert,
    SequenceLength, SequenceConstruct, ConcatFromSequence with new_axis."""
    return model("split_to_sequence", [
        const("two", np.int64(2)),
        helper.make_node("SplitToSequence", ["x", "two"], ["chunks"], name="chunks"),
        helper.make_node("SequenceLength", ["chunks"], ["count"], name="count"),
        const("last", np.int64(-1)),
        helper.make_node("SequenceAt", ["chunks", "last"], ["tail"], name="tail"),
        const("sizes", np.array([1, 3], dtype=np.int64)),
        helper.make_node("SplitToSequence", ["x", "sizes"], ["columns"], name="columns",
                         axis=1),
        const("first", np.int64(0)),
        helper.make_node("SequenceErase", ["columns", "first"], ["rest"], name="erase"),
        helper.make_node("SequenceAt", ["rest", "first"], ["wide"], name="wide"),
        helper.make_node("SplitToSequence", ["x"], ["cols"], name="cols", axis=1, keepdims=0),
        helper.make_node("ConcatFromSequence", ["cols"], ["stacked"], name="stack", axis=1,
                         new_axis=1),
        helper.make_node("SequenceConstruct", ["tail", "tail"], ["pair"], name="pair"),
        helper.make_node("SequenceInsert", ["pair", "x", "first"], ["three"], name="front"),
        helper.make_node("ConcatFromSequence", ["three"], ["joined"], name="join", axis=0),
    ], [tensor("x", FLOAT, [5, 4])],
        [tensor("count", INT64, []), tensor("tail", FLOAT, [1, 4]),
         tensor("wide", FLOAT, [5, 3]), tensor("stacked", FLOAT, [5, 4]),
         tensor("joined", FLOAT, [7, 4])])


def if_constant():
    """If on x's first dimension > 2 (folded): only the taken branch imports."""
    then_branch = body("then", [helper.make_node("Add", ["x", "x"], ["doubled"], name="add")],
                       [], [tensor("doubled", FLOAT, None)])
    else_branch = body("else", [helper.make_node("Sub", ["x", "x"], ["zeros"], name="sub")],
                       [], [tensor("zeros", FLOAT, None)])
    return model("if_constant", [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        const("zero", np.int64(0)),
        helper.make_node("Gather", ["shape", "zero"], ["rows"], name="rows"),
        const("two", np.int64(2)),
        helper.make_node("Greater", ["rows", "two"], ["cond"], name="greater"),
        helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_branch,
                         else_branch=else_branch),
    ], [tensor("x", FLOAT, ["n", 2])], [tensor("y", FLOAT, None)])


def scan():
    """Scan (opset 9 on): a running sum over x's rows, and each row times the
    rows of w read backwards (scan_input_directions), the products stacked
    along axis 1 (scan_output_axes)."""
    b = body("scan_body", [
        helper.make_node("Add", ["sum_in", "row"], ["sum_out"], name="accumulate"),
        helper.make_node("Mul", ["row", "w_row"], ["product"], name="product"),
    ], [tensor("sum_in", FLOAT, [2]), tensor("row", FLOAT, [2]), tensor("w_row", FLOAT, [2])],
        [tensor("sum_out", FLOAT, [2]), tensor("product", FLOAT, [2])])
    return model("scan", [
        helper.make_node("Scan", ["initial", "x", "w"], ["total", "products"], name="scan",
                         body=b, num_scan_inputs=2, scan_input_directions=[0, 1],
                         scan_output_axes=[1]),
    ], [tensor("initial", FLOAT, [2]), tensor("x", FLOAT, [3, 2]), tensor("w", FLOAT, [3, 2])],
        [tensor("total", FLOAT, [2]), tensor("products", FLOAT, [2, 3])])


# Negative cases (control-flow-invalid.test).

def loop_dynamic_trip_count():
    """The trip count is a graph input: not a compile-time constant."""
    b = body("body", [
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
        helper.make_node("Add", ["y_in", "y_in"], ["y_out"], name="double"),
    ], [tensor("i", INT64, []), tensor("cond_in", BOOL, []), tensor("y_in", FLOAT, [2])],
        [tensor("cond_out", BOOL, []), tensor("y_out", FLOAT, [2])])
    return model("loop_dynamic_trip_count", [
        const("true", np.bool_(True)),
        helper.make_node("Loop", ["m", "true", "x"], ["y"], name="loop", body=b),
    ], [tensor("m", INT64, []), tensor("x", FLOAT, [2])], [tensor("y", FLOAT, [2])])


def loop_dynamic_condition():
    """The body's condition depends on the data: not a compile-time constant."""
    b = body("body", [
        helper.make_node("ReduceSum", ["y_in"], ["total"], name="total", keepdims=0),
        const("limit", np.float32(100)),
        helper.make_node("Less", ["total", "limit"], ["cond_out"], name="less"),
        helper.make_node("Add", ["y_in", "y_in"], ["y_out"], name="double"),
    ], [tensor("i", INT64, []), tensor("cond_in", BOOL, []), tensor("y_in", FLOAT, [2])],
        [tensor("cond_out", BOOL, []), tensor("y_out", FLOAT, [2])])
    return model("loop_dynamic_condition", [
        const("m", np.int64(8)), const("true", np.bool_(True)),
        helper.make_node("Loop", ["m", "true", "x"], ["y"], name="loop", body=b),
    ], [tensor("x", FLOAT, [2])], [tensor("y", FLOAT, [2])])


def loop_too_long():
    """More iterations than trc unrolls."""
    b = body("body", [
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
        helper.make_node("Add", ["y_in", "y_in"], ["y_out"], name="double"),
    ], [tensor("i", INT64, []), tensor("cond_in", BOOL, []), tensor("y_in", FLOAT, [2])],
        [tensor("cond_out", BOOL, []), tensor("y_out", FLOAT, [2])])
    return model("loop_too_long", [
        const("m", np.int64(100000)), const("true", np.bool_(True)),
        helper.make_node("Loop", ["m", "true", "x"], ["y"], name="loop", body=b),
    ], [tensor("x", FLOAT, [2])], [tensor("y", FLOAT, [2])])


def loop_endless():
    """No trip count and a condition that stays true."""
    b = body("body", [
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
        helper.make_node("Identity", ["y_in"], ["y_out"], name="same"),
    ], [tensor("i", INT64, []), tensor("cond_in", BOOL, []), tensor("y_in", FLOAT, [2])],
        [tensor("cond_out", BOOL, []), tensor("y_out", FLOAT, [2])])
    return model("loop_endless", [
        const("true", np.bool_(True)),
        helper.make_node("Loop", ["", "true", "x"], ["y"], name="loop", body=b),
    ], [tensor("x", FLOAT, [2])], [tensor("y", FLOAT, [2])])


def sequence_at_dynamic():
    """SequenceAt at a position read from a graph input."""
    return model("sequence_at_dynamic", [
        helper.make_node("SplitToSequence", ["x"], ["pieces"], name="split", axis=0),
        helper.make_node("SequenceAt", ["pieces", "p"], ["y"], name="at"),
    ], [tensor("x", FLOAT, [3, 2]), tensor("p", INT64, [])], [tensor("y", FLOAT, [1, 2])])


def loop_body_sequence_at_dynamic():
    """Inside a Loop body, SequenceAt at a position computed from data."""
    b = body("body", [
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="cond"),
        helper.make_node("ArgMax", ["x"], ["where"], name="argmax", keepdims=0),
        helper.make_node("SequenceAt", ["pieces", "where"], ["scan"], name="at"),
    ], [tensor("i", INT64, []), tensor("cond_in", BOOL, [])],
        [tensor("cond_out", BOOL, []), tensor("scan", FLOAT, [1])])
    return model("loop_body_sequence_at_dynamic", [
        helper.make_node("SplitToSequence", ["x"], ["pieces"], name="split", axis=0),
        const("m", np.int64(2)), const("true", np.bool_(True)),
        helper.make_node("Loop", ["m", "true"], ["scans"], name="loop", body=b),
    ], [tensor("x", FLOAT, [3])], [tensor("scans", FLOAT, [2, 1])])


def if_dynamic():
    """If on a condition computed from data."""
    then_branch = body("then", [helper.make_node("Neg", ["x"], ["a"], name="neg")], [],
                       [tensor("a", FLOAT, None)])
    else_branch = body("else", [helper.make_node("Abs", ["x"], ["b"], name="abs")], [],
                       [tensor("b", FLOAT, None)])
    return model("if_dynamic", [
        helper.make_node("ReduceSum", ["x"], ["total"], name="total", keepdims=0),
        const("zero", np.float32(0)),
        helper.make_node("Greater", ["total", "zero"], ["cond"], name="greater"),
        helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_branch,
                         else_branch=else_branch),
    ], [tensor("x", FLOAT, [2])], [tensor("y", FLOAT, None)])


def tensor_op_on_sequence():
    """Relu given a sequence (opset 18: past ONNX's shape inference, which
    would reject the model before the importer sees the node)."""
    return model("tensor_op_on_sequence", [
        helper.make_node("SplitToSequence", ["x"], ["pieces"], name="split", axis=0),
        helper.make_node("Relu", ["pieces"], ["y"], name="relu"),
    ], [tensor("x", FLOAT, [3, 2])], [tensor("y", FLOAT, None)], opset=18)


def sequence_op_on_tensor():
    """SequenceAt given a tensor."""
    return model("sequence_op_on_tensor", [
        const("zero", np.int64(0)),
        helper.make_node("SequenceAt", ["x", "zero"], ["y"], name="at"),
    ], [tensor("x", FLOAT, [3, 2])], [tensor("y", FLOAT, None)])


CASES = [loop_scan, loop_early_exit, loop_zero_iterations, loop_sequence, split_to_sequence,
         if_constant, scan, loop_dynamic_trip_count, loop_dynamic_condition, loop_too_long,
         loop_endless,
         sequence_at_dynamic, loop_body_sequence_at_dynamic, if_dynamic,
         tensor_op_on_sequence, sequence_op_on_tensor]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for case in CASES:
        with open(os.path.join(out, case.__name__ + ".onnx"), "wb") as f:
            f.write(case().SerializeToString())


if __name__ == "__main__":
    main()
