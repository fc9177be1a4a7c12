#!/usr/bin/env python3
"""Writes small ONNX models tagged the way torch.onnx's dynamo exporter
(torch >= 2.5) tags a default export, for the importer's rule of which
initializers train (include/trc/Import/InitializerRoles.h):

    make_tagged_models.py OUT

Every model computes loss = mean(((x @ w + b + buf) @ W2) * mask * half) from
x [4, 4] with initializers tagged in value_info metadata
(pkg.torch.export.graph_signature.InputSpec.kind) or, as the exporter's
optimizer leaves them, untagged with pkg.onnxscript.optimizer.folded_from:
  w [4, 3], b [3]    PARAMETER
  buf [3]            BUFFER
  mask [4, 4]        untagged, 0/1 values, folded from 'attn.mask'
  half []            untagged fill 0.5, folded from 'val_9'
and W2 [3, 4], by model:
  clean.onnx    W2 tagged PARAMETER
  folded.onnx   W2 untagged 'val_14', folded from 'head.weight' (the
                exporter transposed a parameter it then dropped)
  tied.onnx     'val_14' = transpose(w2) where w2 [4, 3] is a PARAMETER the
                graph also uses (w2 is added to w): the importer ties them;
                weights in external data (tied.onnx.data), as torch writes
  untagged.onnx clean.onnx without any tag: every float initializer trains
OUT/x.npz holds 8 rows of x (trc-run --data, batches of 4).
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save_model

KIND = "pkg.torch.export.graph_signature.InputSpec.kind"
FOLDED = "pkg.onnxscript.optimizer.folded_from"


def tag(name, shape, key, value):
    info = helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
    entry = info.metadata_props.add()
    entry.key, entry.value = key, value
    return info


def build(variant, out):
    g = np.random.default_rng(0)
    w = g.standard_normal((4, 3)).astype(np.float32)
    w2 = g.standard_normal((4, 3)).astype(np.float32)
    inits = {
        "w": w, "b": g.standard_normal(3).astype(np.float32),
        "buf": g.standard_normal(3).astype(np.float32),
        "mask": np.tril(np.ones((4, 4), np.float32)),
        "half": np.array(0.5, np.float32),
    }
    infos = [tag("w", [4, 3], KIND, "PARAMETER"), tag("b", [3], KIND, "PARAMETER"),
             tag("buf", [3], KIND, "BUFFER"), tag("mask", [4, 4], FOLDED, "['attn.mask']"),
             tag("half", [], FOLDED, "['val_9']")]
    nodes = []
    first = "w"
    head = "W2"
    if variant in ("clean", "untagged"):
        inits["W2"] = w2.T.copy()
        infos.append(tag("W2", [3, 4], KIND, "PARAMETER"))
    elif variant == "folded":
        head = "val_14"
        inits["val_14"] = w2.T.copy()
        infos.append(tag("val_14", [3, 4], FOLDED, "['head.weight']"))
    else:  # tied
        head = "val_14"
        inits["w2"] = w2
        inits["val_14"] = w2.T.copy()
        infos += [tag("w2", [4, 3], KIND, "PARAMETER"),
                  tag("val_14", [3, 4], FOLDED, "['w2']")]
        nodes.append(helper.make_node("Add", ["w", "w2"], ["w_sum"], name="add_w"))
        first = "w_sum"
    nodes += [
        helper.make_node("MatMul", ["x", first], ["h0"], name="mm1"),
        helper.make_node("Add", ["h0", "b"], ["h1"], name="add_b"),
        helper.make_node("Add", ["h1", "buf"], ["h2"], name="add_buf"),
        helper.make_node("MatMul", ["h2", head], ["z"], name="mm2"),
        helper.make_node("Mul", ["z", "mask"], ["zm"], name="apply_mask"),
        helper.make_node("Mul", ["zm", "half"], ["zh"], name="scale"),
        helper.make_node("ReduceMean", ["zh"], ["loss"], name="mean", keepdims=0),
    ]
    graph = helper.make_graph(
        nodes, variant, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
        value_info=[] if variant == "untagged" else infos)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)],
                              producer_name="pytorch")
    model.ir_version = 10
    path = os.path.join(out, variant + ".onnx")
    if variant == "tied":
        save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                   location="tied.onnx.data", size_threshold=0)
    else:
        save_model(model, path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for variant in ("clean", "folded", "tied", "untagged"):
        build(variant, out)
    x = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)
    np.savez(os.path.join(out, "x.npz"), x=x)


if __name__ == "__main__":
    main()
