//===- OnnxBuilder.h - tiny ONNX models for importer unit tests -*- C++ -*-===//
//
// Builds a ModelProto node by node (opset chosen per model) and imports it,
// returning the module and the diagnostics text.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TEST_UNITTESTS_ONNXBUILDER_H
#define TRC_TEST_UNITTESTS_ONNXBUILDER_H

#include "OnnxProto.h"
#include "trc/Dialect/Trc.h"
#include "trc/Import/OnnxImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include <string>
#include <vector>

namespace trc::test {

class OnnxBuilder {
public:
  explicit OnnxBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    auto *op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
  }
  onnx::GraphProto &graph() { return *model_.mutable_graph(); }

  void input(const std::string &name, std::vector<int64_t> dims,
             int type = onnx::TensorProto::FLOAT) {
    valueInfo(graph().add_input(), name, dims, type);
  }
  void output(const std::string &name) { graph().add_output()->set_name(name); }
  void initializer(const std::string &name, std::vector<int64_t> dims,
                   std::vector<int64_t> values) {
    auto *t = graph().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims)
      t->add_dims(d);
    for (int64_t v : values)
      t->add_int64_data(v);
  }
  onnx::NodeProto &node(const std::string &op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string &name = "") {
    auto *n = graph().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op : name);
    for (auto &i : inputs)
      n->add_input(i);
    for (auto &o : outputs)
      n->add_output(o);
    return *n;
  }
  static void intAttr(onnx::NodeProto &n, const std::string &name, int64_t v) {
    auto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void intsAttr(onnx::NodeProto &n, const std::string &name,
                       std::vector<int64_t> v) {
    auto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v)
      a->add_ints(x);
  }
  static void stringAttr(onnx::NodeProto &n, const std::string &name,
                         const std::string &v) {
    auto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  /// Imports the model; `diagnostics` receives what the importer printed,
  /// `report` (when given) what it learned (ImportReport).
  mlir::OwningOpRef<mlir::ModuleOp> import(mlir::MLIRContext &context,
                                           std::string &diagnostics,
                                           const ImportOptions &options = {},
                                           ImportReport *report = nullptr) {
    std::string bytes;
    model_.SerializeToString(&bytes);
    llvm::raw_string_ostream os(diagnostics);
    return importOnnxBytes(bytes, "unit.onnx", &context, options, os, nullptr, report);
  }

  /// The shape of @main's result `i` after import, or {-1} on failure.
  std::vector<int64_t> resultShape(int i = 0) {
    mlir::MLIRContext context;
    std::string diagnostics;
    auto module = import(context, diagnostics);
    if (!module) {
      lastError_ = diagnostics;
      return {-1};
    }
    auto main = module->lookupSymbol<mlir::func::FuncOp>("main");
    auto type = mlir::cast<mlir::RankedTensorType>(main.getResultTypes()[i]);
    return {type.getShape().begin(), type.getShape().end()};
  }
  const std::string &lastError() const { return lastError_; }

private:
  static void valueInfo(onnx::ValueInfoProto *v, const std::string &name,
                        const std::vector<int64_t> &dims, int type) {
    v->set_name(name);
    auto *t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    auto *shape = t->mutable_shape();
    for (int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
  }
  onnx::ModelProto model_;
  std::string lastError_;
};

} // namespace trc::test

#endif
