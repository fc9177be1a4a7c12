//===- OnnxShapeInference.h - ONNX's own shape inference as a check -*- C++ -*-===//
//
// Runs libonnx's shape inference on a copy of the model whose graph inputs
// carry the static shapes asked for. Only integer initializers (shape math)
// keep their data in the copy, and only when it matches their dims; the others
// become typed graph inputs (inference needs only their shapes). A model with
// a tensor attribute whose data does not match its dims is not inferred at
// all: libonnx 1.12 reads such data unchecked. Nodes are handed over in
// topological order, every node output pre-declared as a tensor of unknown
// type (libonnx 1.12 dereferences the missing type of a value whose
// producer failed inference when a Shape node reads it). The shapes it finds are a
// cross-check of the importer's: a disagreement is reported as an error.
// libonnx knows opsets <= 17; newer models rely on the importer's rules alone.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_ONNXSHAPEINFERENCE_H
#define TRC_LIB_IMPORT_ONNXSHAPEINFERENCE_H

#include "OnnxProto.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trc::import {

constexpr int64_t kMaxOnnxInferenceOpset = 17;

/// Static shapes ONNX infers for the graph's values, by name. Values whose
/// shape it cannot fully determine are absent. `inputShapes` are the static
/// shapes of the graph inputs. Errors inside ONNX are not fatal: they leave
/// the map incomplete and set `note`.
std::map<std::string, std::vector<int64_t>>
inferOnnxShapes(const onnx::ModelProto &model,
                const std::map<std::string, std::vector<int64_t>> &inputShapes,
                std::string &note);

} // namespace trc::import

#endif
