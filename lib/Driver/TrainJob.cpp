//===- TrainJob.cpp - a training command run with the compiler ------------===//
#include "trc/Driver/TrainJob.h"

#include "trc/Driver/AutoPlan.h"
#include "trc/Driver/CompileInProcess.h"

#include "runtime/train/DistributedRun.h"
#include "runtime/train/RunCommand.h"

namespace trc {

rt::Status runTrainCommand(const rt::RunCommand &command,
                           const std::function<void(const rt::StepResult &)> &onStep) {
  // The flags and the planner's verdict are every rank's alike: printed once.
  rt::StatusOr<rt::TrainerOptions> options = rt::trainerOptions(command);
  if (!options.ok())
    return rt::onceForTheJob(options.status());
  if (rt::Status s = resolveAutoPlan(*options, options->deviceProfile); !s)
    return rt::onceForTheJob(s);
  InProcessStepCompiler compiler;
  return rt::runTrainer(*options, &compiler, onStep);
}

} // namespace trc
