//===- TrainFlags.cpp - trc-run's training flags to TrainerOptions --------===//
#include "runtime/train/TrainFlags.h"

#include "runtime/train/FlagValues.h"

#include <cmath>
#include <limits>

namespace trc::rt {

bool TrainArgs::on(const std::string &flag) const {
  read.insert(flag);
  return switches.count(flag) > 0;
}

bool TrainArgs::given(const std::string &flag) const {
  read.insert(flag);
  return values.count(flag) > 0;
}

const std::string &TrainArgs::value(const std::string &flag) const {
  read.insert(flag);
  return values.at(flag);
}

const std::vector<std::string> &TrainArgs::list(const std::string &flag) const {
  read.insert(flag);
  static const std::vector<std::string> none;
  auto it = lists.find(flag);
  return it == lists.end() ? none : it->second;
}

StatusOr<TrainerOptions> trainerOptionsFromFlags(const TrainArgs &a) {
  TrainerOptions o;
  o.model = a.model;
  o.device = a.device;
  o.feeds = a.list("--feed");
  o.freeze = a.list("--freeze");
  o.trainable = a.list("--trainable");
  for (const auto &[flag, given] : a.lists)
    o.givenFlags.insert(flag);
  o.shuffle = a.on("--shuffle");
  o.resume = a.on("--resume");
  o.resumeAuto = a.given("--resume"); // --resume auto
  o.overwriteCheckpoints = a.on("--overwrite-checkpoints");
  o.optimizer.nesterov = a.on("--nesterov");
  o.initWeights = a.on("--init-weights");
  o.profileSummary = a.on("--profile-summary");
  o.detectAnomaly = a.on("--detect-anomaly");
  o.checkpointSync = a.on("--checkpoint-sync");
  for (const char *flag : {"--nesterov", "--init-weights"})
    if (a.on(flag))
      o.givenFlags.insert(flag);
  for (const auto &[flag, value] : a.values)
    if (flag != "--resume")
      o.givenFlags.insert(flag);
  auto has = [&](const char *flag) { return a.given(flag); };
  auto text = [&](const char *flag) { return a.value(flag); };

  for (auto [flag, field] : {std::pair{"--batch-size", &o.batchSize},
                             std::pair{"--seq-len", &o.seqLen}, std::pair{"--steps", &o.steps},
                             std::pair{"--epochs", &o.epochs}})
    if (has(flag) && !parseIntFlag(text(flag), 1, *field))
      return Status::error(std::string("option '") + flag + "' expects a positive integer, got '" +
                           text(flag) + "'");
  for (auto [flag, field] : {std::pair{"--checkpoint-every", &o.checkpointEvery},
                             std::pair{"--eval-every", &o.evalEvery},
                             std::pair{"--log-every", &o.logEvery},
                             std::pair{"--keep-last", &o.keepLast}})
    if (has(flag) && !parseIntFlag(text(flag), 1, *field))
      return Status::error(std::string("option '") + flag + "' expects a positive integer, got '" +
                           text(flag) + "'");
  int64_t seed = 0;
  if (has("--seed") && !parseIntFlag(text("--seed"), 0, seed))
    return Status::error("option '--seed' expects a non-negative integer");
  o.seed = uint64_t(seed);
  if (has("--lr") && (!parseFloatFlag(text("--lr"), o.lr) || o.lr <= 0))
    return Status::error("option '--lr' expects a positive number");
  for (auto [flag, field] : {std::pair{"--momentum", &o.optimizer.momentum},
                             std::pair{"--weight-decay", &o.optimizer.weightDecay},
                             std::pair{"--clip-grad-norm", &o.optimizer.clipGradNorm}}) {
    double v;
    if (!has(flag))
      continue;
    if (!parseFloatFlag(text(flag), v) || v < 0)
      return Status::error(std::string("option '") + flag + "' expects a non-negative number");
    *field = v;
  }
  if (has("--signal-grace") &&
      (!parseFloatFlag(text("--signal-grace"), o.signalGrace) || !(o.signalGrace >= 0) ||
       !std::isfinite(o.signalGrace)))
    return Status::error("option '--signal-grace' expects seconds >= 0 (0: no bound), got '" +
                         text("--signal-grace") + "'");
  if (has("--profile-steps") && !parseIntFlag(text("--profile-steps"), 1, o.profileSteps))
    return Status::error("option '--profile-steps' expects a positive integer, got '" +
                         text("--profile-steps") + "'");
  if (has("--config") && text("--config").find_first_not_of(" \t\r\n") == std::string::npos)
    return Status::error("option '--config' needs a value (inline JSON, auto or a JSON file)");
  if (has("--profile") && text("--profile").empty())
    return Status::error("option '--profile' needs a file name");
  if (has("--memory-budget") && !parseIntFlag(text("--memory-budget"), 1, o.memoryBudget))
    return Status::error("option '--memory-budget' expects a positive byte count, got '" +
                         text("--memory-budget") + "'");
  if (has("--grad-accum") && !parseIntFlag(text("--grad-accum"), 1, o.gradAccum))
    return Status::error("option '--grad-accum' expects a positive integer");
  if (has("--ignore-index")) {
    int64_t v;
    if (!parseIntFlag(text("--ignore-index"), std::numeric_limits<int64_t>::min(), v))
      return Status::error("option '--ignore-index' expects an integer, got '" +
                           text("--ignore-index") + "'");
    o.ignoreIndex = v;
  }
  if (has("--loss-scale")) {
    double v;
    if (!parseFloatFlag(text("--loss-scale"), v) || v < 1)
      return Status::error(has("--precision") && text("--precision") == "fp16"
                               ? "option '--loss-scale' expects a number >= 1"
                               : "--loss-scale is the initial loss scale of --precision fp16");
    o.initialLossScale = v;
  }
  // Plain strings: the library checks their values.
  for (auto [flag, field] :
       {std::pair{"--data", &o.data}, std::pair{"--eval-data", &o.evalData},
        std::pair{"--metrics", &o.metricsPath}, std::pair{"--tensorboard", &o.tensorboardDir},
        std::pair{"--checkpoint-dir", &o.checkpointDir}, std::pair{"--optimizer", &o.optimizer.name},
        std::pair{"--lr-schedule", &o.lrSchedule}, std::pair{"--loss", &o.loss},
        std::pair{"--precision", &o.precision}, std::pair{"--attention", &o.attention},
        std::pair{"--config", &o.parallelConfig}, std::pair{"--export-onnx", &o.exportOnnx},
        std::pair{"--save-artifact", &o.saveArtifact}, std::pair{"--profile", &o.profilePath},
        std::pair{"--recompute", &o.recompute}, std::pair{"--on-nonfinite", &o.onNonFinite},
        std::pair{"--from-checkpoint", &o.fromCheckpoint}, std::pair{"--save-model", &o.saveModel},
        std::pair{"--predictions", &o.predictionsDir},
        std::pair{"--device-profile", &o.deviceProfile},
        std::pair{"--keep-best", &o.keepBest}})
    if (has(flag))
      *field = text(flag);
  return o;
}

} // namespace trc::rt
