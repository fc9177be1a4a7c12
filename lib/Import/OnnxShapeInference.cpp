//===- OnnxShapeInference.cpp - ONNX's own shape inference as a check ------===//
#include "OnnxShapeInference.h"

#include "onnx/shape_inference/implementation.h"

namespace trc::import {

std::map<std::string, std::vector<int64_t>>
inferOnnxShapes(const onnx::ModelProto &model,
                const std::map<std::string, std::vector<int64_t>> &inputShapes,
                std::string &note) {
  onnx::ModelProto copy;
  copy.CopyFrom(model);
  copy.mutable_graph()->clear_value_info();
  for (auto &init : *copy.mutable_graph()->mutable_initializer())
    if (init.data_type() != onnx::TensorProto::INT64 &&
        init.data_type() != onnx::TensorProto::INT32)
      init.clear_raw_data(); // only shapes matter; saves a copy of the weights
  for (auto &input : *copy.mutable_graph()->mutable_input()) {
    auto it = inputShapes.find(input.name());
    if (it == inputShapes.end() || !input.type().has_tensor_type())
      continue;
    auto *shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : it->second)
      shape->add_dim()->set_dim_value(d);
  }

  std::map<std::string, std::vector<int64_t>> shapes;
  try {
    onnx::ShapeInferenceOptions options{/*check_type=*/false, /*error_mode=*/0,
                                        /*enable_data_propagation=*/true};
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(),
                                       options);
  } catch (const std::exception &e) {
    note = e.what();
    return shapes;
  }
  for (const auto &info : copy.graph().value_info()) {
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape())
      continue;
    std::vector<int64_t> dims;
    bool isStatic = true;
    for (const auto &d : info.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) {
        isStatic = false;
        break;
      }
      dims.push_back(d.dim_value());
    }
    if (isStatic)
      shapes[info.name()] = dims;
  }
  return shapes;
}

} // namespace trc::import
