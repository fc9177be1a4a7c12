//===- AutoPlan.cpp - `--config auto` (AutoPlan.h) -------------------------===//
#include "AutoPlan.h"

#include "../trc-plan/OnnxModelSpec.h"
#include "runtime/comm/LaunchEnvironment.h"
#include "trc/Plan/Cluster.h"
#include "trc/Plan/Search.h"

#include <cstdio>

namespace trc {

using rt::Status;

Status resolveAutoPlan(rt::TrainerOptions &options) {
  if (options.parallelConfig != "auto")
    return Status::success();
  const std::string &model = options.model;
  if (model.size() < 5 || model.compare(model.size() - 5, 5, ".onnx") != 0)
    return Status::success(); // a saved step: its plan is compiled in
  rt::StatusOr<rt::LaunchEnvironment> env = rt::readLaunchEnvironment();
  if (!env.ok())
    return env.status();
  int world = env->size > 0 ? env->size : 1;

  plan::OnnxModelDescription description;
  std::string dims = "batch=" + std::to_string(options.batchSize) +
                     ",sequence=" + std::to_string(options.seqLen);
  if (Status s = plan::describeOnnxModel(model, dims, description); !s)
    return s.withPrefix("--config auto: ");
  plan::Cluster cluster;
  if (Status s = plan::parseCluster("cpu:" + std::to_string(world), cluster); !s)
    return s.withPrefix("--config auto: ");
  // What the trainer runs today.
  plan::Constraints constraints;
  constraints.pipeline = 1;
  constraints.microbatches = 1;
  constraints.virtualStages = 1;
  constraints.recompute = plan::Recompute::None;
  plan::SearchResult result =
      plan::search(description.model, cluster, options.batchSize, constraints);
  if (result.ranked.empty()) {
    std::string need;
    if (result.leastMemory)
      need = ": the smallest plan needs " +
             std::to_string(static_cast<long long>(result.leastMemory->predicted.memoryBytes)) +
             " bytes per rank, a rank has " +
             std::to_string(static_cast<long long>(cluster.device.memoryBytes -
                                                   cluster.device.reservedBytes));
    return Status::error("--config auto: no plan of " + description.spec + " fits " +
                         std::to_string(world) + " CPU ranks" + need);
  }
  const plan::Ranked &best = result.ranked.front();
  if (env->rank == 0)
    std::fprintf(stderr,
                 "trc-run: --config auto: %s (predicted %.3f ms per step, %.1f MB per rank; "
                 "%lld plans priced in %.3f s)\n",
                 best.plan.describe().c_str(), best.predicted.stepTime * 1e3,
                 best.predicted.memoryBytes / 1e6, result.evaluated, result.seconds);
  options.parallelConfig = best.plan.toJson();
  return Status::success();
}

} // namespace trc
