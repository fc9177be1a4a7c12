//===- Subgraph.cpp - imports the nodes of a graph into a scope ------------===//
#include "Subgraph.h"

#include "ExternalData.h"
#include "GraphOrder.h"
#include "HandlerRegistry.h"
#include "TensorData.h"

using namespace mlir;

namespace trc::import {

LogicalResult importNode(OpBuilder &builder, GraphState &state,
                         const onnx::NodeProto &node, const std::set<std::string> &read) {
  ImportContext ctx(builder, state, node, state.opsetOf(node));
  OpHandler handler = HandlerRegistry::get().lookup(
      HandlerRegistry::key(node.domain(), node.op_type()), ctx.opset());
  if (!handler)
    return ctx.unsupported("unsupported op '", node.op_type(), "' at opset ", ctx.opset());
  if (failed(handler(ctx))) {
    if (state.errors.empty())
      ctx.recordError("import failed");
    return failure();
  }
  for (int i = 0; i < node.output_size(); ++i)
    if (!node.output(i).empty() && read.count(node.output(i)) &&
        !state.values.count(node.output(i)) && !state.sequences.count(node.output(i)))
      return ctx.unsupported("output #", i, " ('", node.output(i),
                      "') is not supported by the importer");
  return success();
}

std::set<std::string> namesReadIn(const onnx::GraphProto &graph) {
  std::set<std::string> read;
  for (const auto &node : graph.node())
    for (const auto &name : namesReadBy(node))
      read.insert(name);
  for (const auto &out : graph.output())
    read.insert(out.name());
  return read;
}

namespace {
// Binds the initializers of a subgraph as constants (they are not trained:
// only the model's own initializers become parameters).
LogicalResult bindInitializers(ImportContext &ctx, const onnx::GraphProto &graph,
                               GraphState &scope) {
  ExternalDataReader noExternalData("");
  for (const auto &init : graph.initializer()) {
    std::string message;
    RankedTensorType type = tensorTypeOf(init, ctx.context(), message);
    ElementsAttr value =
        type ? readTensor(init, type, false, "", noExternalData, message) : nullptr;
    if (!value) {
      (void)ctx.fail("initializer '", init.name(), "' of subgraph '", graph.name(), "': ",
                     message);
      return isUnsupportedTensorType(init) ? ctx.markUnsupported() : failure();
    }
    scope.bind(init.name(), {ctx.builder().create<ConstantOp>(ctx.loc(), value),
                             std::nullopt});
  }
  return success();
}
} // namespace

std::optional<SmallVector<Binding>> importSubgraph(ImportContext &ctx,
                                                   const onnx::GraphProto &graph,
                                                   ArrayRef<Binding> inputs,
                                                   StringRef what) {
  if (graph.input_size() != static_cast<int>(inputs.size())) {
    (void)ctx.fail(what, ": the subgraph declares ", graph.input_size(),
                   " inputs, the node passes ", inputs.size());
    return std::nullopt;
  }
  std::vector<std::string> orderErrors;
  auto order = orderNodes(graph, orderErrors, /*nested=*/true);
  if (!order) {
    (void)ctx.fail(what, ": ", orderErrors.front());
    return std::nullopt;
  }
  GraphState scope = GraphState::nestedIn(ctx.state());
  for (auto [input, binding] : llvm::zip(graph.input(), inputs))
    scope.bind(input.name(), binding);
  auto nestedError = [&] {
    std::string joined;
    for (const auto &e : scope.errors)
      joined += (joined.empty() ? "" : "; ") + e;
    (void)ctx.fail(what, ": ", joined);
    return std::nullopt;
  };
  if (failed(bindInitializers(ctx, graph, scope)))
    return std::nullopt;
  std::set<std::string> read = namesReadIn(graph);
  for (int index : *order)
    if (failed(importNode(ctx.builder(), scope, graph.node(index), read)))
      return nestedError();
  SmallVector<Binding> outputs;
  for (const auto &out : graph.output()) {
    Binding binding = scope.lookup(out.name());
    if (!binding) {
      (void)ctx.fail(what, ": output '", out.name(), "' has no value");
      return std::nullopt;
    }
    outputs.push_back(binding);
  }
  return outputs;
}

} // namespace trc::import
