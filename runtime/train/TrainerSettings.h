//===- TrainerSettings.h - options to compile settings and back -*- C++ -*-===//
//
// Internal to the Trainer. The compile-time settings of a training step
// (optimizer, precision, loss, attention, initial weights) spelled as the
// strings a saved step (training.trc) and a checkpoint's config record, made
// from TrainerOptions; and the other way: a saved step's settings adopted by
// a run that did not give those flags, checked where it did.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_TRAINERSETTINGS_H
#define TRC_RUNTIME_TRAIN_TRAINERSETTINGS_H

#include "runtime/support/Status.h"
#include "runtime/train/LrSchedule.h"
#include "runtime/train/StepCompiler.h"
#include "runtime/train/Trainer.h"

#include <map>
#include <string>

namespace trc::rt {

/// An input every (micro-)step feeds: the step's input name, its dtype and
/// the shape of one row (token data: [T] of i64 for the inputs and the
/// targets; row data: the arrays').
struct StepFeed {
  std::string input;
  DType dtype = DType::I64;
  std::vector<int64_t> rowShape;
};

/// The validated, resolved settings of one run.
struct RunSettings {
  TrainerOptions options;
  std::string inputsName, targetsName; // graph inputs fed with token ids / targets
  // Token data: the targets input takes the token window itself rather than
  // the next tokens (a model that shifts its labels itself; --feed NAME=labels).
  bool targetsAreWindow = false;
  std::vector<StepFeed> feeds;         // token data: inputsName, targetsName
  double initialLossScale = 65536.0;   // fp16
  LrSchedule schedule;
  TrainingBuild build;
  // The step's optimizer as saved steps and checkpoints record it:
  // describeTrainStep(build), or a saved step's own record.
  std::string trainStepRecord;
  // The data-, tensor- and pipeline-parallel plan (and offloading) as saved
  // steps record it (describeParallelBuild; "" = none).
  std::string parallelRecord;
  // --epochs: the optimizer steps one pass over the data takes (0: none).
  int64_t stepsPerEpoch = 0;
  // Evaluation alone (evaluatesOnly): options.data is the eval data, whose
  // shapes and feeds the step is compiled for; no step runs.
  bool evaluateOnly = false;
};

/// The build's data- and tensor-parallel options as saved steps record
/// them: describeDataParallel, then "tensor-parallel: " and
/// describeTensorParallel when the tensor degree is above 1, then
/// "offload: horizon=H" when activations are offloaded, then "pipeline:
/// stages=S chunks=C shard-degree=D microbatches=M" with pipeline stages ("" = none).
std::string describeParallelBuild(const TrainingBuild &build);

/// The step's input shapes for micro-batches of `rows` rows (an appended
/// loss's targets are its own: not a graph input to size).
std::map<std::string, std::vector<int64_t>> stepShapes(const RunSettings &run, int64_t rows);

/// Validates `options` and derives the run's settings (schedule, build).
StatusOr<RunSettings> resolveRunSettings(const TrainerOptions &options);

/// What every rank of a job must agree on, as (flag, value) pairs in a fixed
/// order: every option that shapes the run (files by size, since ranks may
/// see them at other paths), not the rank-local ones (metrics, profile).
std::vector<std::pair<std::string, std::string>> jobSignature(const TrainerOptions &options);
/// The first pair of `mine` that differs from rank 0's (`rootText`: its
/// pairs as "flag\tvalue\n" lines), as an error for this rank.
Status sameJobError(const std::vector<std::pair<std::string, std::string>> &mine,
                    const std::string &rootText);

/// The compile-time settings a saved training step records.
std::map<std::string, std::string> compileSettings(const RunSettings &run);

/// What a checkpoint records of the run, checked on resume.
std::map<std::string, std::string> checkpointConfig(const RunSettings &run);
/// The flags that set each key of checkpointConfig, for its errors.
const std::map<std::string, std::string> &checkpointConfigFlags();

/// Takes the feeds, vocabulary and compile-time settings of the saved
/// training step in `dir`; the run's shape and plan must be the step's, and
/// a compile-time flag given must agree with what the step was compiled
/// with (errors name the flag and the step's value).
Status adoptTrainingArtifact(const std::string &dir, int64_t ranks, const std::string &parallel,
                             RunSettings &run, int64_t &vocab);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_TRAINERSETTINGS_H
