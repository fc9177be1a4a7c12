#!/usr/bin/env python3
"""Writes small malformed (and a few well-formed) ONNX models for the negative
tests of the importer (test/Import/bad-input.test, external-data.test).

    python3 test/Inputs/make_bad_models.py OUT_DIR

One file per case, named after it (OUT_DIR/<case>.onnx); external-data cases
live in their own folders (OUT_DIR/ext_<case>/model.onnx) next to the side
files they read, and OUT_DIR/outside.bin is a weights file outside those
folders. Models are built with onnx.helper only (no torch) and written as
raw bytes, without onnx.checker (most of them would not pass it).
Deterministic.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
FLOAT = TensorProto.FLOAT


def model(nodes, inputs, outputs, initializers=(), opsets=None, name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    if opsets is None:
        opsets = [helper.make_opsetid("", OPSET)]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="make_bad_models")
    m.ir_version = 8
    return m


def tensor(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def write_bytes(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def save(out, case, m):
    write_bytes(os.path.join(out, case + ".onnx"), m.SerializeToString())


def relu_model():
    """A valid model: y = Relu(x + b), x: [2, 3], b an initializer."""
    b = numpy_helper.from_array(np.arange(3, dtype=np.float32), "b")
    return model(
        [helper.make_node("Add", ["x", "b"], ["s"], name="add"),
         helper.make_node("Relu", ["s"], ["y"], name="relu")],
        [tensor("x", FLOAT, [2, 3])], [tensor("y", FLOAT, [2, 3])], [b])


def raw_tensor(name, elem, shape, data):
    """A tensor with `data` as raw_data, unchecked (helper.make_tensor checks)."""
    t = TensorProto()
    t.name = name
    t.data_type = elem
    t.dims.extend(shape)
    t.raw_data = data
    return t


def external_tensor(name, shape, location, offset=None, length=None):
    """A float initializer whose data lives in `location` (nothing inline)."""
    t = TensorProto()
    t.name = name
    t.data_type = FLOAT
    t.dims.extend(shape)
    t.data_location = TensorProto.EXTERNAL
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for key, value in entries:
        e = t.external_data.add()
        e.key, e.value = key, value
    return t


def external_model(weight):
    """y = x + W with W ([2, 3] float) an external initializer."""
    return model([helper.make_node("Add", ["x", "W"], ["y"], name="add_w")],
                 [tensor("x", FLOAT, [2, 3])], [tensor("y", FLOAT, [2, 3])], [weight])


# --- file-level cases ------------------------------------------------------

def file_cases(out):
    write_bytes(os.path.join(out, "empty.onnx"), b"")
    data = relu_model().SerializeToString()
    write_bytes(os.path.join(out, "truncated.onnx"), data[: len(data) // 2])
    write_bytes(os.path.join(out, "not_protobuf.onnx"),
                b"this is not an ONNX model, just some text\n" * 4)


# --- ops and opsets --------------------------------------------------------

def op_cases(out):
    x, y = tensor("x", FLOAT, [2, 3]), tensor("y", FLOAT, [2, 3])
    # Two unknown ops: both must be reported, not only the first.
    save(out, "unknown_op", model(
        [helper.make_node("FooBar", ["x"], ["t"], name="foo_node"),
         helper.make_node("BazQux", ["t"], ["y"], name="baz_node")], [x], [y]))
    # A node of a domain the model does not import.
    save(out, "unknown_domain", model(
        [helper.make_node("Relu", ["x"], ["y"], name="custom_relu", domain="com.example")],
        [x], [y]))
    # A node of an imported, non-default domain (opset 2 of com.example).
    save(out, "custom_domain", model(
        [helper.make_node("MyOp", ["x"], ["y"], name="my_op", domain="com.example")],
        [x], [y], opsets=[helper.make_opsetid("", OPSET),
                          helper.make_opsetid("com.example", 2)]))
    relu = [helper.make_node("Relu", ["x"], ["y"], name="relu")]
    save(out, "opset99", model(relu, [x], [y], opsets=[helper.make_opsetid("", 99)]))
    save(out, "opset3", model(relu, [x], [y], opsets=[helper.make_opsetid("", 3)]))
    save(out, "no_default_opset", model(
        relu, [x], [y], opsets=[helper.make_opsetid("com.example", 1)]))


# --- graph structure -------------------------------------------------------

def graph_cases(out):
    x, y = tensor("x", FLOAT, [2, 3]), tensor("y", FLOAT, [2, 3])
    # 'W' is neither a graph input, an initializer nor a node output.
    save(out, "missing_input", model(
        [helper.make_node("Add", ["x", "W"], ["y"], name="add_missing")], [x], [y]))
    # A -> B -> A.
    save(out, "cycle", model(
        [helper.make_node("Add", ["x", "b_out"], ["a_out"], name="node_a"),
         helper.make_node("Relu", ["a_out"], ["b_out"], name="node_b"),
         helper.make_node("Identity", ["a_out"], ["y"], name="node_out")], [x], [y]))
    # Two nodes produce 't'.
    save(out, "duplicate_output", model(
        [helper.make_node("Relu", ["x"], ["t"], name="first"),
         helper.make_node("Neg", ["x"], ["t"], name="second"),
         helper.make_node("Identity", ["t"], ["y"], name="out")], [x], [y]))
    # A node output shadows a graph input.
    save(out, "output_shadows_input", model(
        [helper.make_node("Relu", ["x"], ["x"], name="shadow"),
         helper.make_node("Identity", ["x"], ["y"], name="out")], [x], [y]))
    # Two initializers named 'b'.
    b1 = numpy_helper.from_array(np.zeros(3, np.float32), "b")
    b2 = numpy_helper.from_array(np.ones(3, np.float32), "b")
    save(out, "duplicate_initializer", model(
        [helper.make_node("Add", ["x", "b"], ["y"], name="add")], [x], [y], [b1, b2]))
    # Two graph inputs named 'x'.
    save(out, "duplicate_input", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [x, tensor("x", FLOAT, [4])],
        [y]))
    # A graph output nobody produces.
    save(out, "missing_output", model(
        [helper.make_node("Relu", ["x"], ["t"], name="relu")], [x], [y]))


# --- shapes ----------------------------------------------------------------

def shape_cases(out):
    save(out, "matmul_mismatch", model(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
        [tensor("a", FLOAT, [2, 3]), tensor("b", FLOAT, [4, 5])],
        [tensor("y", FLOAT, None)]))
    save(out, "add_mismatch", model(
        [helper.make_node("Add", ["a", "b"], ["y"], name="add_ab")],
        [tensor("a", FLOAT, [2, 3]), tensor("b", FLOAT, [4])],
        [tensor("y", FLOAT, None)]))
    # The same, at an opset ONNX's shape inference does not check (> 17):
    # only the importer's own checks catch them.
    opset21 = [helper.make_opsetid("", 21)]
    save(out, "matmul_mismatch_op21", model(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")],
        [tensor("a", FLOAT, [2, 3]), tensor("b", FLOAT, [4, 5])],
        [tensor("y", FLOAT, None)], opsets=opset21))
    save(out, "add_mismatch_op21", model(
        [helper.make_node("Add", ["a", "b"], ["y"], name="add_ab")],
        [tensor("a", FLOAT, [2, 3]), tensor("b", FLOAT, [4])],
        [tensor("y", FLOAT, None)], opsets=opset21))

    x, y = tensor("x", FLOAT, [2, 3]), tensor("y", FLOAT, [2, 3])
    add = [helper.make_node("Add", ["x", "w"], ["y"], name="add")]
    neg = raw_tensor("w", FLOAT, [-2, 3], np.zeros(6, np.float32).tobytes())
    save(out, "negative_dim_initializer", model(add, [x], [y], [neg]))
    save(out, "negative_dim_input", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [tensor("x", FLOAT, [2, -3])], [y]))
    huge = 2 ** 50
    absurd = raw_tensor("w", FLOAT, [huge], b"")
    save(out, "absurd_dim_initializer", model(add, [x], [y], [absurd]))
    save(out, "absurd_dim_input", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [tensor("x", FLOAT, [huge, 2])], [tensor("y", FLOAT, None)]))
    # Dimensions each in range whose product is not (2^30 * 2^30 * 2^30).
    product = raw_tensor("w", FLOAT, [2 ** 30] * 3, b"")
    save(out, "absurd_count_initializer", model(add, [x], [y], [product]))
    # An exporter-named ('onnx::') 2-D float initializer whose element count
    # overflows int64 to match its 4 bytes of raw data.
    wrap = raw_tensor("onnx::w", FLOAT, [2 ** 62 + 1, 1], b"\0\0\0\0")
    save(out, "overflow_dim_initializer", model(
        [helper.make_node("Add", ["x", "onnx::w"], ["y"], name="add")], [x], [y], [wrap]))
    # 6 floats need 24 bytes; raw_data has 10.
    short = raw_tensor("w", FLOAT, [2, 3], b"\0" * 10)
    save(out, "short_raw_data", model(add, [x], [y], [short]))
    # An int64 initializer (a Reshape shape) with too little data.
    shape = raw_tensor("shape", TensorProto.INT64, [2], b"\0" * 12)
    save(out, "short_raw_data_int", model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        [x], [tensor("y", FLOAT, None)], [shape]))
    # A dynamic batch dimension: needs --dim batch=N.
    save(out, "dynamic_dim", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [tensor("x", FLOAT, ["batch", 3])], [tensor("y", FLOAT, ["batch", 3])]))


# --- external data ---------------------------------------------------------

def external_cases(out):
    weights = np.arange(6, dtype=np.float32)
    # A weights file outside every model folder.
    outside = os.path.join(out, "outside.bin")
    write_bytes(outside, weights.tobytes())

    def folder(case):
        d = os.path.join(out, "ext_" + case)
        os.makedirs(d, exist_ok=True)
        return d

    def save_ext(case, weight):
        d = folder(case)
        write_bytes(os.path.join(d, "model.onnx"),
                    external_model(weight).SerializeToString())
        return d

    # Good: weights.bin beside the model, W at offset 8.
    d = folder("good")
    write_bytes(os.path.join(d, "weights.bin"), b"\0" * 8 + weights.tobytes())
    save_ext("good", external_tensor("W", [2, 3], "weights.bin", offset=8, length=24))

    save_ext("absolute", external_tensor("W", [2, 3], os.path.abspath(outside)))
    save_ext("dotdot", external_tensor("W", [2, 3], "../outside.bin"))
    d = folder("symlink")
    link = os.path.join(d, "weights.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.abspath(outside), link)
    save_ext("symlink", external_tensor("W", [2, 3], "weights.bin"))
    save_ext("missing", external_tensor("W", [2, 3], "nowhere.bin"))
    # The file holds 12 bytes; W needs 24.
    d = save_ext("short", external_tensor("W", [2, 3], "weights.bin"))
    write_bytes(os.path.join(d, "weights.bin"), weights.tobytes()[:12])
    # The file holds 24 bytes; offset 16 leaves 8.
    d = save_ext("offset_past_end", external_tensor("W", [2, 3], "weights.bin",
                                                    offset=16, length=24))
    write_bytes(os.path.join(d, "weights.bin"), weights.tobytes())
    # offset beyond the end of the file.
    d = save_ext("offset_beyond", external_tensor("W", [2, 3], "weights.bin",
                                                  offset=4096))
    write_bytes(os.path.join(d, "weights.bin"), weights.tobytes())
    # A declared length that is not what the tensor needs.
    d = save_ext("bad_length", external_tensor("W", [2, 3], "weights.bin", length=2 ** 40))
    write_bytes(os.path.join(d, "weights.bin"), weights.tobytes())
    # A non-numeric offset.
    d = save_ext("bad_offset", external_tensor("W", [2, 3], "weights.bin", offset="12abc"))
    write_bytes(os.path.join(d, "weights.bin"), weights.tobytes())

    # More than 2 GiB of external weights: W is [576, 1048576] float
    # (2.25 GiB) in a sparse file (truncate: no disk space, no write time).
    d = folder("big")
    rows, cols = 576, 1 << 20
    big = os.path.join(d, "weights.bin")
    with open(big, "wb") as f:
        f.truncate(rows * cols * 4)
    w = external_tensor("W", [rows, cols], "weights.bin", offset=0, length=rows * cols * 4)
    m = model([helper.make_node("ReduceSum", ["W"], ["y"], name="sum", keepdims=0)],
              [], [tensor("y", FLOAT, [])], [w])
    write_bytes(os.path.join(d, "model.onnx"), m.SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_bad_models.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    file_cases(out)
    op_cases(out)
    graph_cases(out)
    shape_cases(out)
    external_cases(out)
    # A valid model for the flag tests (--dim, --input-shape).
    save(out, "valid", relu_model())


if __name__ == "__main__":
    main()
