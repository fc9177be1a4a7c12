#!/usr/bin/env python3
"""Writes tiny ONNX models for trc-run's training negative tests
(test/Training/loss-precision-accumulation.test):

    python3 test/Inputs/make_train_models.py OUT_DIR

  nonscalar.onnx   inputs ids, targets [2, 8] (int64); output: embeddings
                   [2, 8, 4] (not a scalar loss)
  frozen.onnx      a scalar loss whose only parameter is frozen (metadata
                   trc.frozen): nothing to train
  vocab100.onnx    a loss model whose embedding has 100 rows: token ids from
                   text (bytes up to 255) can exceed it

Built with onnx.helper only; deterministic.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def write(path, nodes, inputs, outputs, initializers, frozen=None):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="make_train_models")
    m.ir_version = 8
    if frozen:
        entry = m.metadata_props.add()
        entry.key, entry.value = "trc.frozen", frozen
    onnx.checker.check_model(m)
    onnx.save(m, path)


def ids(name):
    return helper.make_tensor_value_info(name, TensorProto.INT64, [2, 8])


def loss_graph(rows):
    """Embedding lookup -> logits (tied) -> mean cross-entropy."""
    table = numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((rows, 4)).astype(np.float32), "table")
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0),
        helper.make_node("MatMul", ["emb", "tableT"], ["logits"]),
        helper.make_node("Transpose", ["logits"], ["scores"], perm=[0, 2, 1]),
        helper.make_node("SoftmaxCrossEntropyLoss", ["scores", "targets"], ["loss"],
                         reduction="mean"),
        helper.make_node("Transpose", ["table"], ["tableT"], perm=[1, 0]),
    ]
    # Topological order: the transpose of the table first.
    nodes = [nodes[4]] + nodes[:4]
    loss = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])
    return nodes, [ids("ids"), ids("targets")], [loss], [table]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    table = numpy_helper.from_array(np.ones((256, 4), np.float32), "table")
    emb = helper.make_tensor_value_info("emb", TensorProto.FLOAT, [2, 8, 4])
    write(os.path.join(out, "nonscalar.onnx"),
          [helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0)],
          [ids("ids"), ids("targets")], [emb], [table])
    write(os.path.join(out, "frozen.onnx"), *loss_graph(256), frozen="table")
    write(os.path.join(out, "vocab100.onnx"), *loss_graph(100))


if __name__ == "__main__":
    main()
