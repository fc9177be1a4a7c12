//===- DerivedInitializers.h - initializers folded from parameters -*- C++ -*-===//
//
// With constant folding on, exporters replace `Transpose(weight)` by a new
// initializer holding the transposed data (PyTorch names it "onnx::MatMul_N").
// Training that copy would untie it from the weight. This finds such
// initializers: an exporter-named one equal to exactly one other initializer,
// or to the transpose of exactly one 2-D initializer.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_DERIVEDINITIALIZERS_H
#define TRC_LIB_IMPORT_DERIVEDINITIALIZERS_H

#include "OnnxProto.h"

#include <string>
#include <vector>

namespace trc::import {

struct DerivedInitializer {
  std::string name;   // the exporter's copy
  std::string source; // the parameter it was computed from
  bool transposed;    // copy == transpose(source), else copy == source
};

/// Only initializers with in-file raw_data are compared.
std::vector<DerivedInitializer> findDerivedInitializers(const onnx::GraphProto &graph);

} // namespace trc::import

#endif
