//===- EngineSupport.cpp - which parallel plans the engines run -----------===//
#include "runtime/spec/EngineSupport.h"

namespace trc::rt {

Status engineRuns(const ParallelPlan &plan) {
  // Pipeline stages shard their optimizer state (ZeRO-1) or their
  // parameters as well (ZeRO-3) over their data ranks; the gradients they
  // accumulate over microbatches stay whole (ZeRO-2 would shard those).
  if (plan.pipelineDegree > 1 && plan.zeroStage == 2)
    return Status::error("--config: key 'zero_stage': ZeRO-2 sharding of pipeline stages is "
                         "not available yet (zero_stage 1 is: each stage's optimizer state "
                         "sharded over its data ranks; 3: its parameters as well); "
                         "this trc trains data-, tensor- and pipeline-parallel "
                         "plans with recomputation and offloading (ddp, zero_stage, "
                         "sharded_data_parallel_degree, hybrid_shard_degree, "
                         "tensor_parallel_degree, sequence_parallel, pipeline_parallel_degree, "
                         "microbatches, pipeline_schedule, virtual_stages, recompute, "
                         "offload_activations, activation_loading_horizon)");
  if (plan.offloadActivations && plan.pipelineDegree > 1)
    return Status::error("--config: key 'offload_activations': activation offloading is not "
                         "available with 'pipeline_parallel_degree' yet");
  return Status::success();
}

} // namespace trc::rt
