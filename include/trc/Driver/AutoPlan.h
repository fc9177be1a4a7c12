//===- AutoPlan.h - `--config auto`: the planner picks the plan -*- C++ -*-===//
//
// With an .onnx model and the compiler, `--config auto`, or a --config
// whose JSON says `"auto_partition": true` (SageMaker's key; its `optimize`
// "speed" or "memory" and `memory_weight` choose the objective, and the
// plan keys it also gives are kept as constraints, as trc-plan --plan
// does), asks the planner (lib/Plan: the same cost model and search as
// trc-plan) for the best plan this trainer can run on this job's ranks:
// CPU ranks as `cpu:WORLD`, priced with `--device-profile` (trc-run
// --calibrate) or the cpu spec sheet. Runnable today: data, tensor and
// sequence parallelism with ZeRO; pipelines of 1F1B, GPipe, ZB-H1 or
// interleaved stages without ZeRO; recomputation none, selective or full
// (the plan's "recompute" key). Rank 0 prints the plan
// with its prediction; the config becomes the plan's JSON (with the
// given bucket_cap_mb and communicator). Other configs are unchanged
// (and --device-profile is an error with them).
//
// Errors: a model that fits no plan names the bytes per rank the least
// hungry plan needs and what a rank has; bad profiles, keys and values
// are the planner's and the config parser's errors.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DRIVER_AUTOPLAN_H
#define TRC_DRIVER_AUTOPLAN_H

#include "runtime/train/Trainer.h"

namespace trc {

rt::Status resolveAutoPlan(rt::TrainerOptions &options, const std::string &profilePath);

} // namespace trc

#endif // TRC_DRIVER_AUTOPLAN_H
