//===- EngineSupport.cpp - which parallel plans the engines run -----------===//
#include "runtime/spec/EngineSupport.h"

namespace trc::rt {

Status engineRuns(const ParallelPlan &plan) {
  if (plan.offloadActivations && plan.pipelineDegree > 1)
    return Status::error("--config: key 'offload_activations': activation offloading is not "
                         "available with 'pipeline_parallel_degree' yet");
  return Status::success();
}

} // namespace trc::rt
