//===- GraphOrder.h - checks and orders an ONNX graph's nodes ---*- C++ -*-===//
//
// Every node input must be a graph input, an initializer or another node's
// output; every value is produced once; the graph is acyclic. Returns the
// nodes in topological order (exporters usually, but not always, sort them).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_GRAPHORDER_H
#define TRC_LIB_IMPORT_GRAPHORDER_H

#include "OnnxProto.h"

#include <optional>
#include <string>
#include <vector>

namespace trc::import {

/// Topological order of `graph.node()` indices, or nullopt with `errors` set.
std::optional<std::vector<int>> orderNodes(const onnx::GraphProto &graph,
                                           std::vector<std::string> &errors);

/// "node 'name' (OpType)" for messages.
std::string describeNode(const onnx::NodeProto &node);

} // namespace trc::import

#endif
