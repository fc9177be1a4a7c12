//===- OnnxShapeInference.cpp - ONNX's own shape inference as a check ------===//
#include "OnnxShapeInference.h"

#include "GraphOrder.h"
#include "TensorData.h"

#include "onnx/shape_inference/implementation.h"

#include "llvm/ADT/StringRef.h"

#include <set>

namespace trc::import {
namespace {
// Whether a tensor stored in the file holds exactly the elements its dims
// promise. libonnx 1.12 reads initializers and Constant values during data
// propagation without checking that (Range's inference reads element 0 of
// whatever it finds, a null pointer for an empty tensor), so tensors that
// fail this never reach it.
bool dataMatchesDims(const onnx::TensorProto &t) {
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  if (!checkDims(dims).empty() || t.data_location() == onnx::TensorProto::EXTERNAL)
    return false;
  int64_t count = 1;
  for (int64_t d : dims)
    count *= d; // bounded by checkDims
  // Only the types trc imports: strings, complex and unknown types are not
  // worth the risk.
  const OnnxDType *row = findOnnxDType(t.data_type());
  if (!row || !row->buildElementType)
    return false;
  if (t.has_raw_data())
    return static_cast<int64_t>(t.raw_data().size()) == count * row->bytes();
  int64_t fieldSize = -1;
  switch (row->field) {
  case OnnxField::Int32Data: fieldSize = t.int32_data_size(); break;
  case OnnxField::FloatData: fieldSize = t.float_data_size(); break;
  case OnnxField::DoubleData: fieldSize = t.double_data_size(); break;
  case OnnxField::Int64Data: fieldSize = t.int64_data_size(); break;
  case OnnxField::Uint64Data: fieldSize = t.uint64_data_size(); break;
  case OnnxField::StringData: return false;
  }
  return fieldSize == count;
}

/// libonnx 1.12's convolution inference takes the kernel's size from the
/// weight's dims when `kernel_shape` is absent and indexes the strides and
/// dilations (sized by the input's rank) with it unchecked (SEGV when the
/// ranks differ). Spelling `kernel_shape` out from the weight's declared
/// dims makes ONNX check the sizes. False: a convolution whose weight has
/// no declared shape (ONNX is not asked at all).
bool spellKernelShapes(onnx::GraphProto &graph) {
  std::map<std::string, const onnx::TypeProto_Tensor *> declared;
  for (const auto &input : graph.input())
    if (input.type().has_tensor_type())
      declared[input.name()] = &input.type().tensor_type();
  for (auto &node : *graph.mutable_node()) {
    llvm::StringRef op = node.op_type();
    int weight = op == "Conv" || op == "ConvInteger" ? 1 : op == "QLinearConv" ? 3 : -1;
    if (weight < 0 || llvm::any_of(node.attribute(), [](const onnx::AttributeProto &a) {
          return a.name() == "kernel_shape";
        }))
      continue;
    if (node.input_size() <= weight)
      return false;
    auto found = declared.find(node.input(weight));
    if (found == declared.end() || !found->second->has_shape())
      return false;
    std::vector<int64_t> kernel;
    const auto &shape = found->second->shape();
    for (int i = 2; i < shape.dim_size(); ++i) {
      if (!shape.dim(i).has_dim_value())
        return false;
      kernel.push_back(shape.dim(i).dim_value());
    }
    auto *attr = node.add_attribute();
    attr->set_name("kernel_shape");
    attr->set_type(onnx::AttributeProto::INTS);
    for (int64_t k : kernel)
      attr->add_ints(k);
  }
  return true;
}
} // namespace

std::map<std::string, std::vector<int64_t>>
inferOnnxShapes(const onnx::ModelProto &model,
                const std::map<std::string, std::vector<int64_t>> &inputShapes,
                std::string &note) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto &node : model.graph().node()) {
    // A Constant (or any tensor attribute) with broken data: no cross-check;
    // the importer reports the tensor itself.
    for (const auto &attr : node.attribute())
      if (attr.has_sparse_tensor() || (attr.has_t() && !dataMatchesDims(attr.t())))
        return shapes;
    // libonnx 1.12 writes the Mean/InvStdDev shapes of LayerNormalization
    // from an unchecked axis (axis < -rank indexes before the shape: SEGV).
    // The importer rejects those outputs anyway, so it does not need ONNX.
    if (node.op_type() == "LayerNormalization")
      for (int i = 1; i < node.output_size(); ++i)
        if (!node.output(i).empty())
          return shapes;
    // libonnx 1.12's Split inference divides the split axis by the output
    // count unchecked (a Split without outputs: SIGFPE); a node without
    // outputs computes nothing the importer would use ONNX's shapes for.
    if (node.output_size() == 0)
      return shapes;
    // libonnx 1.12's convolution and pooling inference divides by each
    // stride unchecked (stride 0: SIGFPE); the importer names bad strides
    // and dilations itself.
    for (const auto &attr : node.attribute())
      if (attr.name() == "strides" || attr.name() == "dilations")
        for (int64_t v : attr.ints())
          if (v <= 0)
            return shapes;
  }

  onnx::ModelProto copy;
  copy.CopyFrom(model);
  onnx::GraphProto &graph = *copy.mutable_graph();
  graph.clear_value_info();
  // Only whole integer initializers (shape math) keep their data; the others
  // become graph inputs of their type and shape (saves a copy of the weights,
  // and inference never sees a tensor whose data does not match its dims).
  std::set<std::string> inputNames;
  for (const auto &input : graph.input())
    inputNames.insert(input.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (auto &init : *graph.mutable_initializer()) {
    if ((init.data_type() == kOnnxInt64 || init.data_type() == kOnnxInt32) &&
        dataMatchesDims(init)) {
      kept.Add()->Swap(&init);
      continue;
    }
    if (!inputNames.insert(init.name()).second)
      continue;
    auto *input = graph.add_input();
    input->set_name(init.name());
    auto *tensorType = input->mutable_type()->mutable_tensor_type();
    tensorType->set_elem_type(init.data_type());
    std::vector<int64_t> dims(init.dims().begin(), init.dims().end());
    if (checkDims(dims).empty()) {
      auto *shape = tensorType->mutable_shape();
      for (int64_t d : dims)
        shape->add_dim()->set_dim_value(d);
    }
  }
  graph.mutable_initializer()->Swap(&kept);
  // libonnx 1.12 infers nodes in file order and dereferences the type of an
  // input no earlier node produced (SEGV); the importer accepts unsorted
  // graphs, so ONNX gets the nodes in the importer's order.
  std::vector<std::string> orderErrors;
  auto order = orderNodes(model.graph(), orderErrors);
  if (!order)
    return shapes; // the importer reports the graph's errors itself
  google::protobuf::RepeatedPtrField<onnx::NodeProto> sorted;
  for (int i : *order)
    sorted.Add()->Swap(graph.mutable_node(i));
  graph.mutable_node()->Swap(&sorted);
  // Every node output starts out as a tensor of unknown type and shape: where
  // a node's inference fails, libonnx 1.12 leaves its outputs without any
  // type, and Shape's data propagation then dereferences that null type.
  // Outputs that may be sequences are left undeclared (a tensor type there
  // contradicts the sequence type ONNX infers).
  auto mayBeSequence = [](const onnx::NodeProto &node) {
    llvm::StringRef op = node.op_type();
    return op == "Loop" || op == "If" || op == "SplitToSequence" ||
           (op.starts_with("Sequence") && op != "SequenceAt" && op != "SequenceLength");
  };
  for (const auto &node : graph.node())
    for (const auto &out : node.output())
      if (!out.empty() && !mayBeSequence(node)) {
        auto *info = graph.add_value_info();
        info->set_name(out);
        info->mutable_type()->mutable_tensor_type();
      }
  for (auto &input : *graph.mutable_input()) {
    auto it = inputShapes.find(input.name());
    if (it == inputShapes.end() || !input.type().has_tensor_type())
      continue;
    auto *shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : it->second)
      shape->add_dim()->set_dim_value(d);
  }

  if (!spellKernelShapes(graph))
    return shapes;

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
