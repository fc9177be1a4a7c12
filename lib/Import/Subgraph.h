//===- Subgraph.h - imports the nodes of a graph into a scope ---*- C++ -*-===//
//
// The node loop every graph shares: the model's own graph, and the subgraphs
// of control flow, which the handlers of Loop and If import at compile time
// (a Loop body once per iteration, an If's taken branch), each into a scope
// nested in the node's: the subgraph's inputs are bound to the values the
// handler passes, its initializers become constants, and its nodes also read
// the names of the enclosing scopes.
//
// Preconditions: every op of the subgraph has a handler (the importer checks
// nested graphs with the model's own before importing anything).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_SUBGRAPH_H
#define TRC_LIB_IMPORT_SUBGRAPH_H

#include "ImportContext.h"

#include <set>

namespace trc::import {

/// Imports `node` through its handler into `state`, then checks that each
/// output something reads (a name in `read`) was bound. On failure the
/// errors are in `state.errors`.
mlir::LogicalResult importNode(mlir::OpBuilder &builder, GraphState &state,
                               const onnx::NodeProto &node,
                               const std::set<std::string> &read);

/// Names read in `graph` (node inputs, at any depth, and graph outputs).
std::set<std::string> namesReadIn(const onnx::GraphProto &graph);

/// Imports `graph`, a subgraph of ctx's node, in a scope nested in ctx's:
/// its inputs bound to `inputs` in order (the counts must match), its
/// initializers as constants. Returns the bindings of its outputs, or
/// nullopt after recording "<what>: <the nested error>" on ctx's node.
std::optional<llvm::SmallVector<Binding>>
importSubgraph(ImportContext &ctx, const onnx::GraphProto &graph,
               llvm::ArrayRef<Binding> inputs, llvm::StringRef what);

} // namespace trc::import

#endif
