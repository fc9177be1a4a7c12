//===- GraphOrder.h - checks and orders an ONNX graph's nodes ---*- C++ -*-===//
//
// Every node input must be a graph input, an initializer or another node's
// output; every value is produced once; the graph is acyclic. Returns the
// nodes in topological order (exporters usually, but not always, sort them).
// A node with subgraphs (Loop, If) also depends on the names its subgraphs
// read from outside themselves. In a nested graph (a Loop body, an If
// branch), names produced nowhere in it come from the scopes around it.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_GRAPHORDER_H
#define TRC_LIB_IMPORT_GRAPHORDER_H

#include "OnnxProto.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trc::import {

/// Topological order of `graph.node()` indices, or nullopt with `errors` set.
/// `nested`: `graph` is a subgraph, free to read names of enclosing scopes.
std::optional<std::vector<int>> orderNodes(const onnx::GraphProto &graph,
                                           std::vector<std::string> &errors,
                                           bool nested = false);

/// The subgraphs of a node (the graph attributes: Loop's body, If's branches).
std::vector<const onnx::GraphProto *> subgraphsOf(const onnx::NodeProto &node);

/// Names a node reads: its inputs and the names its subgraphs read from
/// outside themselves (at any depth).
std::vector<std::string> namesReadBy(const onnx::NodeProto &node);

/// Calls `visit` on every node of `graph` and of its subgraphs, at any depth.
void forEachNode(const onnx::GraphProto &graph,
                 const std::function<void(const onnx::NodeProto &)> &visit);

/// "node 'name' (OpType)" for messages.
std::string describeNode(const onnx::NodeProto &node);

} // namespace trc::import

#endif
