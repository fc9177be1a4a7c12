//===- TrainJob.cpp - a training command run with the compiler ------------===//
#include "trc/Driver/TrainJob.h"

#include "trc/Driver/AutoPlan.h"
#include "trc/Driver/CompileInProcess.h"

#include "runtime/train/TrainFlags.h"

namespace trc {

rt::Status runTrainCommand(const rt::RunCommand &command,
                           const std::function<void(const rt::StepResult &)> &onStep) {
  rt::TrainArgs args = command.train;
  args.model = command.model;
  args.device = command.device;
  rt::StatusOr<rt::TrainerOptions> options = rt::trainerOptionsFromFlags(args);
  if (!options.ok())
    return options.status();
  auto profile = args.values.find("--device-profile");
  if (rt::Status s =
          resolveAutoPlan(*options, profile == args.values.end() ? "" : profile->second);
      !s)
    return s;
  InProcessStepCompiler compiler;
  return rt::runTrainer(*options, &compiler, onStep);
}

} // namespace trc
