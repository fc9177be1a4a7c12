//===- OnnxShapeInference.h - ONNX's own shape inference as a check -*- C++ -*-===//
//
// Runs libonnx's shape inference on a copy of the model whose graph inputs
// carry the static shapes asked for (float initializer data is left out of
// the copy: inference needs only their shapes). The shapes it finds are a
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
