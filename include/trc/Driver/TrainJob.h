//===- TrainJob.h - a training command run with the compiler ----*- C++ -*-===//
//
// The one path from a trc-run command line to a finished training job in a
// build with the compiler, taken by trc-run and by the Python package's
// `trc.Trainer` alike: the command's training flags become TrainerOptions
// (runtime/train/TrainFlags.h), `--config auto` is planned (AutoPlan.h) and
// the Trainer runs with the in-process StepCompiler (CompileInProcess.h).
// Preconditions: parseRunCommand accepted `command` and it selects training
// (command.training); checkRunPaths has passed.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DRIVER_TRAINJOB_H
#define TRC_DRIVER_TRAINJOB_H

#include "runtime/support/Status.h"
#include "runtime/train/RunCommand.h"
#include "runtime/train/Trainer.h"

#include <functional>

namespace trc {

/// Runs the training job `command` describes; `onStep` (optional) sees
/// every step's results (and an evaluation alone's). Errors are the
/// Trainer's (Status::reported(): the compiler printed its own).
rt::Status runTrainCommand(const rt::RunCommand &command,
                           const std::function<void(const rt::StepResult &)> &onStep = nullptr);

} // namespace trc

#endif // TRC_DRIVER_TRAINJOB_H
