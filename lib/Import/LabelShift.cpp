//===- LabelShift.cpp - does a model shift an input along its sequence? ---===//
#include "LabelShift.h"

#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace trc::import {
namespace {

// Ops a label tensor passes through unchanged along the sequence before it
// is sliced (Pad appends the ignored position that Hugging Face's loss adds).
bool passesThrough(const std::string &op) {
  return op == "Cast" || op == "Identity" || op == "Pad" || op == "CastLike";
}

// The integers of a constant named `name`: an int64/int32 initializer, a
// Constant node's value, or one of those reshaped, cast or concatenated (an
// export without constant folding spells Slice's starts that way).
std::optional<std::vector<int64_t>> constantInts(const onnx::GraphProto &graph,
                                                 const std::string &name, int depth = 0) {
  auto fromTensor = [](const onnx::TensorProto &t) -> std::optional<std::vector<int64_t>> {
    std::vector<int64_t> out;
    if (t.data_type() == onnx::TensorProto::INT64) {
      if (t.has_raw_data()) {
        const std::string &raw = t.raw_data();
        for (size_t i = 0; i + 8 <= raw.size(); i += 8) {
          int64_t v;
          std::memcpy(&v, raw.data() + i, 8);
          out.push_back(v);
        }
      } else {
        out.assign(t.int64_data().begin(), t.int64_data().end());
      }
    } else if (t.data_type() == onnx::TensorProto::INT32 && !t.has_raw_data()) {
      out.assign(t.int32_data().begin(), t.int32_data().end());
    } else {
      return std::nullopt;
    }
    return out;
  };
  for (const auto &init : graph.initializer())
    if (init.name() == name)
      return fromTensor(init);
  constexpr int kMaxDepth = 8;
  for (const auto &node : graph.node()) {
    if (node.output_size() != 1 || node.output(0) != name)
      continue;
    const std::string &op = node.op_type();
    if (op == "Constant")
      for (const auto &attr : node.attribute()) {
        if (attr.name() == "value" && attr.has_t())
          return fromTensor(attr.t());
        if (attr.name() == "value_ints")
          return std::vector<int64_t>(attr.ints().begin(), attr.ints().end());
      }
    if (depth >= kMaxDepth || node.input_size() == 0)
      return std::nullopt;
    if (op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" || op == "Identity" ||
        op == "Cast" || op == "Flatten")
      return constantInts(graph, node.input(0), depth + 1);
    if (op == "Concat") {
      std::vector<int64_t> all;
      for (const std::string &in : node.input()) {
        auto part = constantInts(graph, in, depth + 1);
        if (!part)
          return std::nullopt;
        all.insert(all.end(), part->begin(), part->end());
      }
      return all;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// Whether Slice `node` (opset 10 on: inputs) starts at 1 on axis 1 with
// step 1, or (before: attributes) does so by its attributes.
bool slicesFromOne(const onnx::GraphProto &graph, const onnx::NodeProto &node, int64_t rank) {
  std::optional<std::vector<int64_t>> starts, axes, steps;
  if (node.input_size() >= 3) {
    starts = constantInts(graph, node.input(1));
    if (node.input_size() > 3 && !node.input(3).empty())
      axes = constantInts(graph, node.input(3));
    if (node.input_size() > 4 && !node.input(4).empty())
      steps = constantInts(graph, node.input(4));
  } else {
    for (const auto &attr : node.attribute()) {
      if (attr.name() == "starts")
        starts = std::vector<int64_t>(attr.ints().begin(), attr.ints().end());
      if (attr.name() == "axes")
        axes = std::vector<int64_t>(attr.ints().begin(), attr.ints().end());
    }
  }
  if (!starts)
    return false;
  std::vector<int64_t> axisList = axes ? *axes : std::vector<int64_t>();
  if (!axes)
    for (size_t i = 0; i < starts->size(); ++i)
      axisList.push_back(static_cast<int64_t>(i));
  if (axisList.size() != starts->size())
    return false;
  for (size_t i = 0; i < axisList.size(); ++i) {
    int64_t axis = axisList[i] < 0 ? axisList[i] + rank : axisList[i];
    int64_t step = steps && i < steps->size() ? (*steps)[i] : 1;
    if (axis == 1 && (*starts)[i] == 1 && step == 1)
      return true;
  }
  return false;
}
} // namespace

std::string findSequenceShift(const onnx::GraphProto &graph, const std::string &input) {
  int64_t rank = -1;
  for (const auto &in : graph.input())
    if (in.name() == input && in.type().has_tensor_type())
      rank = in.type().tensor_type().shape().dim_size();
  if (rank != 2)
    return "";
  std::set<std::string> reached{input};
  std::vector<std::string> frontier{input};
  while (!frontier.empty()) {
    std::string value = frontier.back();
    frontier.pop_back();
    for (const auto &node : graph.node()) {
      if (node.input_size() == 0 || node.input(0) != value)
        continue;
      if (node.op_type() == "Slice" && slicesFromOne(graph, node, rank))
        return node.name().empty() ? node.output(0) : node.name();
      if (passesThrough(node.op_type()) && node.output_size() == 1 &&
          reached.insert(node.output(0)).second)
        frontier.push_back(node.output(0));
    }
  }
  return "";
}

} // namespace trc::import
