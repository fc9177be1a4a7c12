//===- OnnxPlanModel.cpp - an .onnx model as the planner sees it ----------===//
//
// See trc/Driver/OnnxPlanModel.h.
//
//===----------------------------------------------------------------------===//
#include "trc/Driver/OnnxPlanModel.h"

namespace trc::plan {

rt::StatusOr<OnnxPlanModel> openOnnxPlanModel(const std::string &path, const std::string &dims) {
  OnnxPlanModel out;
  if (rt::Status s = describeOnnxModel(path, dims, out.description); !s)
    return s;
  rt::StatusOr<std::unique_ptr<CompiledModelWork>> work = CompiledModelWork::open(path, dims);
  if (!work.ok())
    return work.status();
  out.compiled = *std::move(work);
  // Without a shape the compiled steps are all there is to price: they must compile.
  if (!out.description.model)
    if (rt::Status s = out.compiled->check(); !s)
      return s;
  return out;
}

SearchResult OnnxPlanModel::search(const Cluster &cluster, long long globalBatch,
                                   const Constraints &k) {
  if (description.model)
    return plan::search(*description.model, cluster, globalBatch, k, compiled.get());
  return searchCompiled(*compiled, cluster, globalBatch, k);
}

std::string OnnxPlanModel::name(const std::string &path) const {
  return description.model ? description.spec : path;
}

} // namespace trc::plan
