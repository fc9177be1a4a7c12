//===- DerivedInitializers.h - initializers folded from parameters -*- C++ -*-===//
//
// With constant folding on, exporters replace `Transpose(weight)` by a new
// initializer holding the transposed data (torch.onnx's TorchScript exporter
// names it "onnx::MatMul_N"; its dynamo exporter "val_N", untagged among
// tagged parameters: ExporterTags.h). Training that copy would untie it from
// the weight. This finds such initializers: an exporter-made one equal to
// exactly one other initializer, or to the transpose of exactly one 2-D
// initializer.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_DERIVEDINITIALIZERS_H
#define TRC_LIB_IMPORT_DERIVEDINITIALIZERS_H

#include "ExporterTags.h"
#include "OnnxProto.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace trc::import {

struct DerivedInitializer {
  std::string name;   // the exporter's copy
  std::string source; // the parameter it was computed from
  bool transposed;    // copy == transpose(source), else copy == source
};

/// A tensor's `byteSize` bytes (raw or external data), or false when it has
/// none to compare (typed fields, unreadable external data).
using TensorBytes = llvm::function_ref<bool(const onnx::TensorProto &tensor, int64_t byteSize,
                                            llvm::ArrayRef<char> &bytes)>;

/// Float initializers are compared by the bytes `bytesOf` gives; `tags`
/// (readExporterTags of `graph`, read once by the importer) say which
/// initializers the exporter made.
std::vector<DerivedInitializer> findDerivedInitializers(const onnx::GraphProto &graph,
                                                        const ExporterTags &tags,
                                                        TensorBytes bytesOf);

/// Whether every `width`-byte element of `bytes` is the same: a fill (zeros,
/// a scale), which equals by chance any parameter that starts as that fill.
bool isFill(llvm::StringRef bytes, int64_t width);
/// Only initializers with in-file raw_data are compared.
std::vector<DerivedInitializer> findDerivedInitializers(const onnx::GraphProto &graph);

} // namespace trc::import

#endif
