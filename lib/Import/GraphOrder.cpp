//===- GraphOrder.cpp - checks and orders an ONNX graph's nodes ------------===//
#include "GraphOrder.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace trc::import {

std::string describeNode(const onnx::NodeProto &node) {
  return "node '" + node.name() + "' (" + node.op_type() + ")";
}

std::vector<const onnx::GraphProto *> subgraphsOf(const onnx::NodeProto &node) {
  std::vector<const onnx::GraphProto *> graphs;
  for (const auto &attr : node.attribute()) {
    if (attr.has_g())
      graphs.push_back(&attr.g());
    for (const auto &g : attr.graphs())
      graphs.push_back(&g);
  }
  return graphs;
}

namespace {
// Names `graph`'s nodes read that `graph` does not define (inputs,
// initializers, node outputs), appended to `names`.
void freeNamesOf(const onnx::GraphProto &graph, std::vector<std::string> &names) {
  std::unordered_set<std::string> defined;
  for (const auto &input : graph.input())
    defined.insert(input.name());
  for (const auto &init : graph.initializer())
    defined.insert(init.name());
  for (const auto &node : graph.node())
    defined.insert(node.output().begin(), node.output().end());
  auto note = [&](const std::string &name) {
    if (!name.empty() && !defined.count(name))
      names.push_back(name);
  };
  for (const auto &node : graph.node())
    for (const auto &name : namesReadBy(node))
      note(name);
  for (const auto &out : graph.output())
    note(out.name());
}
} // namespace

std::vector<std::string> namesReadBy(const onnx::NodeProto &node) {
  std::vector<std::string> names(node.input().begin(), node.input().end());
  for (const auto *graph : subgraphsOf(node))
    freeNamesOf(*graph, names);
  return names;
}

void forEachNode(const onnx::GraphProto &graph,
                 const std::function<void(const onnx::NodeProto &)> &visit) {
  for (const auto &node : graph.node()) {
    visit(node);
    for (const auto *sub : subgraphsOf(node))
      forEachNode(*sub, visit);
  }
}

std::optional<std::vector<int>> orderNodes(const onnx::GraphProto &graph,
                                           std::vector<std::string> &errors,
                                           bool nested) {
  // Graph inputs and initializers; an initializer may also be listed as a
  // graph input (its default value), but neither list may repeat a name.
  std::unordered_set<std::string> available, inputs, initializers;
  for (const auto &input : graph.input())
    if (!inputs.insert(input.name()).second)
      errors.push_back("graph input '" + input.name() + "' is declared more than once");
  for (const auto &init : graph.initializer())
    if (!initializers.insert(init.name()).second)
      errors.push_back("initializer '" + init.name() + "' is defined more than once");
  if (!errors.empty())
    return std::nullopt;
  available.insert(inputs.begin(), inputs.end());
  available.insert(initializers.begin(), initializers.end());

  const int n = graph.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto &out : graph.node(i).output()) {
      if (out.empty())
        continue;
      if (available.count(out) || !producer.emplace(out, i).second) {
        errors.push_back(describeNode(graph.node(i)) + ": value '" + out +
                         "' is produced more than once");
        return std::nullopt;
      }
    }

  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i) {
    std::unordered_set<int> producers; // each dependency counts once
    for (const auto &in : namesReadBy(graph.node(i))) {
      if (in.empty() || available.count(in))
        continue;
      auto it = producer.find(in);
      if (it == producer.end() && nested)
        continue; // a name of an enclosing scope
      if (it == producer.end()) {
        errors.push_back(describeNode(graph.node(i)) + ": input '" + in +
                         "' is not a graph input, an initializer or a node output "
                         "(missing initializer or graph input)");
        continue;
      }
      if (!producers.insert(it->second).second)
        continue;
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  if (!errors.empty())
    return std::nullopt;

  std::queue<int> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0)
      ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i])
      if (--pending[c] == 0)
        ready.push(c);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i)
      if (pending[i] > 0) {
        errors.push_back("the graph has a cycle through " + describeNode(graph.node(i)));
        break;
      }
    return std::nullopt;
  }

  for (const auto &out : graph.output())
    if (!nested && !available.count(out.name()) && !producer.count(out.name()))
      errors.push_back("graph output '" + out.name() + "' is never produced");
  if (!errors.empty())
    return std::nullopt;
  return order;
}

} // namespace trc::import
