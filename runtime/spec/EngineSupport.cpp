//===- EngineSupport.cpp - which parallel plans the engines run -----------===//
#include "runtime/spec/EngineSupport.h"

namespace trc::rt {

// Both engines run every plan ParallelPlan parses: the pipeline executor
// shards within stages (ZeRO 1-3, hybrid), accumulates, scales fp16 losses
// and offloads its stashes. What one engine cannot run is refused here: the
// pipeline executor passes each stage's gradients and activations, not
// updated state (a running statistic updated per microbatch on its stage).
Status engineRuns(const ParallelPlan &plan, const ModelTraits &model) {
  if (plan.pipelineDegree > 1 && model.updatesState)
    return Status::error("--config: key 'pipeline_parallel_degree': pipeline stages of a model "
                         "whose training step updates state (BatchNormalization's running "
                         "statistics) are not available yet; use data parallelism");
  return Status::success();
}

} // namespace trc::rt
