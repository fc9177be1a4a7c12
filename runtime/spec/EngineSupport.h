//===- EngineSupport.h - which parallel plans the training engines run ----===//
//
// The one declaration of what trc's training engines (the one-program step
// and the pipeline executor) can run, as a function of the plan alone. The
// trainer refuses a --config it cannot run with this error (naming the key),
// and the planner's search (lib/Plan) never offers such a plan, so a plan
// trc-plan prints, or --config auto picks, is one trc-run trains.
// Limits that depend on the run's flags as well (fp16, --grad-accum, saved
// steps with pipelines) are the trainer's (runtime/train/Trainer.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SPEC_ENGINESUPPORT_H
#define TRC_RUNTIME_SPEC_ENGINESUPPORT_H

#include "runtime/spec/ParallelPlan.h"
#include "runtime/support/Status.h"

namespace trc::rt {

/// Success when the engines run `plan`; else an error naming the key.
Status engineRuns(const ParallelPlan &plan);

} // namespace trc::rt

#endif // TRC_RUNTIME_SPEC_ENGINESUPPORT_H
