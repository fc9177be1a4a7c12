//===- AutoPlan.h - `--config auto`: the planner picks the plan -*- C++ -*-===//
//
// With an .onnx model and the compiler, `--config auto` asks the
// planner (lib/Plan: the same cost model and search as trc-plan) for the
// fastest plan trc-run can train on this job's ranks (CPU ranks as
// `cpu:WORLD`; data, tensor and sequence parallelism and ZeRO; no pipeline
// or recomputation yet), prints it with its prediction on rank 0, and
// replaces the config with the plan's JSON. Other configs are unchanged.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TOOLS_TRC_RUN_AUTOPLAN_H
#define TRC_TOOLS_TRC_RUN_AUTOPLAN_H

#include "runtime/train/Trainer.h"

namespace trc {

rt::Status resolveAutoPlan(rt::TrainerOptions &options);

} // namespace trc

#endif // TRC_TOOLS_TRC_RUN_AUTOPLAN_H
