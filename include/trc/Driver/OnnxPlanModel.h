//===- OnnxPlanModel.h - an .onnx model as the planner sees it --*- C++ -*-===//
//
// What trc-plan --model MODEL.onnx and trc-run --config auto plan for: the
// model's transformer shape when the IR shows one (OnnxModelSpec.h), its
// compiled steps (CompiledModelWork.h), and the search that fits them: the
// GPT formulas ranking the space and the compiled steps pricing the
// leaders, or, without a shape, the compiled steps alone (Search.h's
// searchCompiled). Plain C++ interface: no MLIR header.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DRIVER_ONNXPLANMODEL_H
#define TRC_DRIVER_ONNXPLANMODEL_H

#include "runtime/support/Status.h"
#include "trc/Driver/CompiledModelWork.h"
#include "trc/Driver/OnnxModelSpec.h"
#include "trc/Plan/Search.h"

#include <memory>
#include <string>

namespace trc::plan {

struct OnnxPlanModel {
  OnnxModelDescription description;
  std::unique_ptr<CompiledModelWork> compiled;

  SearchResult search(const Cluster &cluster, long long globalBatch, const Constraints &k);
  /// The model in an error or report line: its gpt:... spec, else `path`.
  std::string name(const std::string &path) const;
};

/// Imports `path` with --dim's `dims`; errors name the file (a model that
/// does not import; without a shape, a step that does not compile).
rt::StatusOr<OnnxPlanModel> openOnnxPlanModel(const std::string &path, const std::string &dims);

} // namespace trc::plan

#endif // TRC_DRIVER_ONNXPLANMODEL_H
