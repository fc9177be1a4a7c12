//===- EngineSupport.cpp - which parallel plans the engines run -----------===//
#include "runtime/spec/EngineSupport.h"

namespace trc::rt {

// Both engines run every plan ParallelPlan parses (the pipeline executor
// shards within stages (ZeRO 1-3, hybrid), accumulates, scales fp16 losses,
// offloads its stashes, carries running statistics and runs context-parallel
// stages, gathered or ring) but context parallelism with sequence
// parallelism. A key that one engine cannot run is refused here.
Status engineRuns(const ParallelPlan &plan) {
  if (plan.contextDegree == 1)
    return Status::success();
  const std::string cp = "'context_parallel_degree': " + std::to_string(plan.contextDegree);
  if (plan.sequenceParallel)
    return Status::error("keys " + cp +
                         " and 'sequence_parallel': true: both split the positions (the "
                         "context axis already splits every activation's sequence)");
  return Status::success();
}

} // namespace trc::rt
