//===- TrainerSettings.cpp - options to compile settings and back ----------===//
//
// See TrainerSettings.h. The strings made here are recorded in saved steps
// and checkpoints and compared on reuse, so they are built in one place.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/TrainerSettings.h"

#include "runtime/support/LaunchEnvironment.h"
#include "runtime/support/Parse.h"
#include "runtime/train/DataLoader.h"
#include "runtime/train/Evaluator.h"
#include "runtime/train/RowData.h"
#include "runtime/train/TrainingArtifact.h"
#include "trc/Abi/SlotNames.h"

#include "absl/strings/str_join.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace trc::rt {
namespace {

/// The shortest text that reads back as `v` ("0.01", not "0.010000").
std::string shortestText(double v) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  return ec == std::errc() ? std::string(buffer, end) : std::to_string(v);
}

std::string lossSetting(const RunSettings &run) {
  return run.build.loss.empty()
             ? "model"
             : run.build.loss + " ignore_index=" + std::to_string(run.build.ignoreIndex);
}

bool oneOf(const std::string &value, std::initializer_list<const char *> allowed) {
  for (const char *a : allowed)
    if (value == a)
      return true;
  return false;
}

// What describeTrainStep appends for gradient accumulation.
constexpr const char *kAccumulateRecord = " accumulate=true";

} // namespace

std::string describeTrainStep(const TrainingBuild &b) {
  std::string options = "optimizer=" + b.optimizer.name;
  for (const auto &[value, key] : {std::pair{&b.optimizer.momentum, "momentum"},
                                   std::pair{&b.optimizer.weightDecay, "weight-decay"},
                                   std::pair{&b.optimizer.clipGradNorm, "clip-norm"}})
    if (*value)
      options += std::string(" ") + key + "=" + shortestText(**value);
  if (b.optimizer.nesterov)
    options += " nesterov=true";
  if (b.accumulate)
    options += kAccumulateRecord;
  return options;
}

std::string withoutAccumulation(std::string record) {
  size_t at = record.find(kAccumulateRecord);
  if (at != std::string::npos)
    record.erase(at, std::strlen(kAccumulateRecord));
  return record;
}

std::string describeParameterChoice(const TrainingBuild &b) {
  auto list = [](const std::vector<std::string> &patterns) {
    std::string text;
    for (const std::string &p : patterns)
      text += (text.empty() ? "" : " ") + p;
    return text;
  };
  if (b.freeze.empty() && b.trainable.empty())
    return "model";
  return "freeze=[" + list(b.freeze) + "] trainable=[" + list(b.trainable) + "]";
}

std::string describeDataParallel(const DataParallelBuild &dp) {
  std::string o = "zero-stage=" + std::to_string(dp.zeroStage) +
                  " shard-degree=" + std::to_string(dp.shardDegree) +
                  " bucket-mb=" + std::to_string(dp.bucketMb);
  if (dp.hybrid)
    o += " hybrid=true";
  return o;
}

std::string describeTensorParallel(const TensorParallelBuild &tp) {
  return "degree=" + std::to_string(tp.degree) +
         " sequence-parallel=" + (tp.sequenceParallel ? "true" : "false");
}

std::string describeParallelBuild(const TrainingBuild &build) {
  std::string record;
  if (build.dataParallel)
    record = describeDataParallel(*build.dataParallel);
  if (build.tensorParallel)
    record += (record.empty() ? "" : " ") + std::string("tensor-parallel: ") +
              describeTensorParallel(*build.tensorParallel);
  if (build.contextDegree > 1)
    record += (record.empty() ? "" : " ") + std::string("context-parallel: degree=") +
              std::to_string(build.contextDegree) + (build.contextRing ? " ring" : "") +
              (build.contextBalance ? " balanced" : "");
  if (build.offload)
    record += (record.empty() ? "" : " ") + std::string("offload: horizon=") +
              std::to_string(build.horizon);
  if (build.pipeline)
    record += (record.empty() ? "" : " ") + std::string("pipeline: stages=") +
              std::to_string(build.pipeline->stages) +
              " chunks=" + std::to_string(build.pipeline->chunks) +
              " shard-degree=" + std::to_string(build.pipeline->shardDegree) +
              " zero-stage=" + std::to_string(build.pipeline->zeroStage) +
              " microbatches=" + std::to_string(build.pipeline->microbatches);
  return record;
}

bool evaluatesOnly(const TrainerOptions &o) {
  return o.data.empty() && !o.evalData.empty() && o.saveArtifact.empty();
}

namespace {
/// What evaluating alone takes no part of; then the options are checked as
/// a run on the eval data.
Status validateEvaluationOnly(const TrainerOptions &o) {
  for (auto [flag, given] :
       {std::pair{"--steps", o.steps > 0}, std::pair{"--epochs", o.epochs > 0},
        std::pair{"--eval-every", o.evalEvery > 0},
        std::pair{"--checkpoint-dir", !o.checkpointDir.empty()},
        std::pair{"--resume", o.resume || o.resumeAuto},
        std::pair{"--export-onnx", !o.exportOnnx.empty()},
        std::pair{"--save-model", !o.saveModel.empty()},
        std::pair{"--profile", !o.profilePath.empty() || o.profileSummary},
        std::pair{"--detect-anomaly", o.detectAnomaly}})
    if (given)
      return Status::error(std::string(flag) + ": --eval-data without --data evaluates and "
                           "trains nothing (give --data to train)");
  TrainerOptions asRun = o;
  asRun.data = o.evalData;
  asRun.evalData.clear();
  asRun.predictionsDir.clear();
  asRun.fromCheckpoint.clear();
  asRun.steps = 1;
  return validateTrainerOptions(asRun);
}
} // namespace

Status validateTrainerOptions(const TrainerOptions &o) {
  if (evaluatesOnly(o))
    return validateEvaluationOnly(o);
  if (!o.fromCheckpoint.empty())
    return Status::error("--from-checkpoint evaluates a checkpoint: give --eval-data without "
                         "--data (to continue training from a checkpoint: --checkpoint-dir D "
                         "--resume)");
  // Saving the step needs its shape only; training needs data and steps.
  const bool saving = !o.saveArtifact.empty();
  // Rows (.npz, a folder of .npy) carry their shapes; token data needs T.
  const bool rows = !o.data.empty() && isRowData(o.data);
  if (o.data.empty() && !saving)
    return Status::error("training needs --data");
  if (o.batchSize < 1)
    return Status::error("training needs --batch-size");
  if (rows) {
    if (o.seqLen)
      return Status::error("--seq-len: the arrays of --data " + o.data +
                           " give the shapes; drop --seq-len");
    if (!o.feeds.empty())
      return Status::error("--feed: --data " + o.data +
                           " feeds each model input the array of its name");
    if (saving)
      return Status::error("--save-artifact saves steps for token data (--data FILE "
                           "--seq-len T); rows (" + o.data + ") train MODEL.onnx directly");
  } else if (o.seqLen < 1) {
    return Status::error("training needs --seq-len");
  }
  if (o.logEvery < 1)
    return Status::error("option '--log-every' expects a positive integer");
  if (o.evalEvery < 0)
    return Status::error("option '--eval-every' expects a positive integer");
  if (o.evalEvery && o.evalData.empty())
    return Status::error("--eval-every needs --eval-data");
  if (!o.evalData.empty() && !isRowData(o.evalData) && isRowData(o.data))
    return Status::error("--eval-data " + o.evalData + " is token data, --data " + o.data +
                         " is rows: evaluate on rows like the training data (an .npz file "
                         "or a folder of .npy files)");
  if (!o.evalData.empty() && saving)
    return Status::error("--eval-data evaluates a training run; --save-artifact trains nothing");
  if (!o.keepBest.empty()) {
    if (!findEvalMetric(o.keepBest)) {
      std::string names;
      for (const EvalMetric &metric : kEvalMetrics)
        names += std::string(names.empty() ? "" : ", ") + metric.name;
      return Status::error("option '--keep-best' expects one of " + names + ", got '" +
                           o.keepBest + "'");
    }
    if (o.checkpointDir.empty() || o.evalData.empty() || !o.evalEvery)
      return Status::error("--keep-best compares the evaluations of checkpoints: it needs "
                           "--checkpoint-dir, --eval-data and --eval-every");
    if (o.checkpointEvery % o.evalEvery != 0)
      return Status::error("--keep-best: --checkpoint-every " +
                           std::to_string(o.checkpointEvery) + " must be a multiple of "
                           "--eval-every " + std::to_string(o.evalEvery) +
                           ", so that every checkpoint has its evaluation");
  }
  if (!o.predictionsDir.empty() && o.evalData.empty())
    return Status::error("--predictions writes the outputs of an evaluation: it needs "
                         "--eval-data");
  if (!o.saveModel.empty() && saving)
    return Status::error("--save-model saves the trained model; --save-artifact trains nothing");
  if (o.steps < 1 && o.epochs < 1 && !saving)
    return Status::error("training needs --steps or --epochs");
  if (o.epochs && saving)
    return Status::error("--epochs: --save-artifact trains nothing");
  if (o.checkpointEvery < 0)
    return Status::error("option '--checkpoint-every' expects a positive integer");
  if (o.checkpointSync && !o.checkpointEvery)
    return Status::error("--checkpoint-sync waits for the checkpoints of --checkpoint-every K");
  if (o.checkpointEvery && o.checkpointDir.empty())
    return Status::error("--checkpoint-every needs --checkpoint-dir");
  if (o.keepLast && o.checkpointDir.empty())
    return Status::error("--keep-last needs --checkpoint-dir");
  if ((o.resume || o.resumeAuto) && o.checkpointDir.empty())
    return Status::error(std::string(o.resumeAuto ? "--resume auto" : "--resume") +
                         " needs --checkpoint-dir");
  if (o.overwriteCheckpoints && (o.resume || o.resumeAuto))
    return Status::error("--overwrite-checkpoints starts over; --resume continues: give one");
  if (o.overwriteCheckpoints && o.checkpointDir.empty())
    return Status::error("--overwrite-checkpoints needs --checkpoint-dir");
  if (!oneOf(o.optimizer.name, {"adamw", "adam", "sgd"}))
    return Status::error("option '--optimizer' expects adamw, adam or sgd, got '" +
                         o.optimizer.name + "'");
  if (!(std::isfinite(o.lr) && o.lr > 0))
    return Status::error("option '--lr' expects a positive number");
  for (const auto &[value, flag] :
       {std::pair{&o.optimizer.momentum, "--momentum"},
        std::pair{&o.optimizer.weightDecay, "--weight-decay"},
        std::pair{&o.optimizer.clipGradNorm, "--clip-grad-norm"}})
    if (*value && !(std::isfinite(**value) && **value >= 0))
      return Status::error(std::string("option '") + flag + "' expects a non-negative number");
  if (o.optimizer.clipGradNorm && *o.optimizer.clipGradNorm == 0)
    return Status::error("option '--clip-grad-norm' expects a positive norm (leave it out not "
                         "to clip)");
  if (o.optimizer.name != "sgd" && (o.optimizer.momentum || o.optimizer.nesterov))
    return Status::error(std::string(o.optimizer.momentum ? "--momentum" : "--nesterov") +
                         " is SGD's; --optimizer " + o.optimizer.name + " does not use it");
  if ((o.resume || o.resumeAuto) && saving)
    return Status::error("--resume continues a training run; --save-artifact trains nothing");
  if (o.gradAccum < 1)
    return Status::error("option '--grad-accum' expects a positive integer");
  if (o.batchSize % o.gradAccum != 0)
    return Status::error("--grad-accum " + std::to_string(o.gradAccum) +
                         " does not divide --batch-size " + std::to_string(o.batchSize) +
                         " (each micro-step takes batch-size / grad-accum rows)");
  if (!o.loss.empty() && o.loss != "cross_entropy")
    return Status::error("option '--loss' expects cross_entropy, got '" + o.loss + "'");
  if (o.ignoreIndex && o.loss.empty())
    return Status::error("--ignore-index needs --loss cross_entropy");
  if (!oneOf(o.precision, {"auto", "fp32", "bf16", "fp16"}))
    return Status::error("option '--precision' expects auto, fp32, bf16 or fp16, got '" +
                         o.precision + "'");
  if (!oneOf(o.attention, {"auto", "fused", "unfused"}))
    return Status::error("option '--attention' expects auto, fused or unfused, got '" +
                         o.attention + "'");
  if (!oneOf(o.recompute, {"", "none", "selective", "full", "auto"}))
    return Status::error("option '--recompute' expects none, selective, full or auto, got '" +
                         o.recompute + "'");
  if (o.memoryBudget < 0 || (o.memoryBudget > 0 && !oneOf(o.recompute, {"", "auto"})))
    return Status::error("--memory-budget is the arena budget of --recompute auto (got "
                         "--recompute " + o.recompute + ")");
  if (o.profileSteps < 0)
    return Status::error("option '--profile-steps' expects a positive integer");
  if (o.profileSteps && o.profilePath.empty() && !o.profileSummary)
    return Status::error("--profile-steps needs --profile FILE or --profile-summary");
  if (saving && (!o.profilePath.empty() || o.profileSummary))
    return Status::error("--profile records a training run; --save-artifact trains nothing");
  for (auto [flag, given] : {std::pair{"--metrics", !o.metricsPath.empty()},
                             std::pair{"--tensorboard", !o.tensorboardDir.empty()}})
    if (saving && given)
      return Status::error(std::string(flag) + " logs a training run; --save-artifact trains nothing");
  if (!oneOf(o.onNonFinite, {"stop", "skip"}))
    return Status::error("option '--on-nonfinite' expects stop or skip, got '" + o.onNonFinite +
                         "'");
  if (o.initialLossScale) {
    if (o.precision != "fp16")
      return Status::error("--loss-scale is the initial loss scale of --precision fp16");
    if (!(*o.initialLossScale >= 1 && std::isfinite(*o.initialLossScale)))
      return Status::error("option '--loss-scale' expects a number >= 1");
  }
  return Status::success();
}

std::map<std::string, std::vector<int64_t>> stepShapes(const RunSettings &run, int64_t rows) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const StepFeed &feed : run.feeds) {
    if (!run.build.loss.empty() && feed.input == abi::kLossTargets)
      continue;
    std::vector<int64_t> shape{rows};
    shape.insert(shape.end(), feed.rowShape.begin(), feed.rowShape.end());
    shapes[feed.input] = shape;
  }
  return shapes;
}

/// --resume auto resumes when --checkpoint-dir holds a run's checkpoint
/// (`latest`), else starts; a fresh run into such a folder would repoint
/// `latest` at its own checkpoints and lose the other run's place, so it is
/// refused unless --overwrite-checkpoints says to start over.
Status resolveResume(TrainerOptions &o) {
  if (o.checkpointDir.empty() || !o.saveArtifact.empty())
    return Status::success();
  std::error_code ec;
  bool holds = std::filesystem::exists(o.checkpointDir + "/latest", ec);
  if (o.resumeAuto) {
    o.resume = holds;
    StatusOr<LaunchEnvironment> launch = readLaunchEnvironment();
    if (launch.ok() && launch->rank == 0) // one line per job
        std::fprintf(stderr, "trc-run: --resume auto: %s\n",
                   holds ? ("resuming from the checkpoint in " + o.checkpointDir).c_str()
                         : ("no checkpoint in " + o.checkpointDir + "; starting").c_str());
    return Status::success();
  }
  if (holds && !o.resume && !o.overwriteCheckpoints)
    return Status::error("--checkpoint-dir " + o.checkpointDir +
                         " holds another run's checkpoints: --resume continues that run, "
                         "--resume auto continues it or starts when there is none, "
                         "--overwrite-checkpoints starts over (replacing them as this run saves)");
  return Status::success();
}

namespace {
std::string optionalText(const std::optional<double> &v) {
  return v ? std::to_string(*v) : "-";
}
/// A file's identity across ranks: its size (a saved step: its manifest's).
std::string fileIdentity(const std::string &path) {
  if (path.empty())
    return "-";
  std::error_code ec;
  std::string file = std::filesystem::is_directory(path, ec) ? path + "/manifest.trc" : path;
  uintmax_t size = std::filesystem::file_size(file, ec);
  return ec ? "unreadable" : std::to_string(size) + " bytes";
}
} // namespace

std::vector<std::pair<std::string, std::string>> jobSignature(const TrainerOptions &o) {
  const OptimizerSettings &opt = o.optimizer;
  return {
      {"the model", fileIdentity(o.model)},
      {"--data", fileIdentity(o.data)},
      {"--eval-data", fileIdentity(o.evalData)},
      {"--device", o.device},
      {"--batch-size", std::to_string(o.batchSize)},
      {"--seq-len", std::to_string(o.seqLen)},
      {"--steps", std::to_string(o.steps)},
      {"--grad-accum", std::to_string(o.gradAccum)},
      {"--seed", std::to_string(o.seed)},
      {"--shuffle", o.shuffle ? "on" : "off"},
      {"--feed", absl::StrJoin(o.feeds, ",")},
      {"--freeze", absl::StrJoin(o.freeze, ",")},
      {"--trainable", absl::StrJoin(o.trainable, ",")},
      {"--optimizer", opt.name},
      {"--momentum", optionalText(opt.momentum)},
      {"--weight-decay", optionalText(opt.weightDecay)},
      {"--clip-grad-norm", optionalText(opt.clipGradNorm)},
      {"--nesterov", opt.nesterov ? "on" : "off"},
      {"--lr", std::to_string(o.lr)},
      {"--lr-schedule", o.lrSchedule},
      {"--loss", o.loss},
      {"--ignore-index", o.ignoreIndex ? std::to_string(*o.ignoreIndex) : "-"},
      {"--precision", o.precision},
      {"--loss-scale", optionalText(o.initialLossScale)},
      {"--attention", o.attention},
      {"--recompute", o.recompute},
      {"--memory-budget", std::to_string(o.memoryBudget)},
      {"--init-weights", o.initWeights ? "on" : "off"},
      {"--eval-every", std::to_string(o.evalEvery)},
      {"--checkpoint-every", std::to_string(o.checkpointEvery)},
      {"--resume", o.resume ? "on" : "off"},
      {"--config", o.parallelConfig},
      {"--on-nonfinite", o.onNonFinite},
      {"--detect-anomaly", o.detectAnomaly ? "on" : "off"},
  };
}

Status sameJobError(const std::vector<std::pair<std::string, std::string>> &mine,
                    const std::string &rootText) {
  std::map<std::string, std::string> root;
  for (std::string_view line : splitText(rootText, '\n')) {
    size_t tab = line.find('\t');
    if (tab != std::string_view::npos)
      root.emplace(std::string(line.substr(0, tab)), std::string(line.substr(tab + 1)));
  }
  for (const auto &[key, value] : mine) {
    auto it = root.find(key);
    std::string theirs = it == root.end() ? "unknown" : it->second;
    if (theirs != value)
      return Status::error(key + " is '" + value + "' here and '" + theirs +
                           "' on rank 0: every rank must run the same job (model, data and "
                           "flags)");
  }
  return Status::error("this rank's job differs from rank 0's");
}

/// --epochs: the steps one pass over --data takes: ceil(rows / B) for row
/// data (the last batch wraps into the next epoch), the loader's B x T
/// windows for token data.
static StatusOr<int64_t> stepsPerEpoch(const TrainerOptions &o) {
  if (isRowData(o.data)) {
    StatusOr<std::unique_ptr<RowDataset>> rows = RowDataset::open(o.data);
    if (!rows.ok())
      return rows.status();
    return ((*rows)->rows() + o.batchSize - 1) / o.batchSize;
  }
  DataLoaderOptions options;
  options.batchSize = o.batchSize;
  options.seqLen = o.seqLen;
  options.shuffle = o.shuffle;
  options.seed = o.seed;
  StatusOr<std::unique_ptr<DataLoader>> tokens = DataLoader::open(o.data, options);
  if (!tokens.ok())
    return tokens.status();
  return (*tokens)->windowsPerEpoch();
}

StatusOr<RunSettings> resolveRunSettings(const TrainerOptions &options) {
  if (Status s = validateTrainerOptions(options); !s)
    return s;
  RunSettings run;
  run.options = options;
  if (evaluatesOnly(options)) {
    run.evaluateOnly = true;
    run.options.data = options.evalData;
  }
  if (Status s = resolveResume(run.options); !s)
    return s;
  if (options.epochs > 0) {
    StatusOr<int64_t> perEpoch = stepsPerEpoch(options);
    if (!perEpoch.ok())
      return perEpoch.status();
    run.stepsPerEpoch = *perEpoch;
    int64_t all = options.epochs * *perEpoch;
    run.options.steps = options.steps > 0 ? std::min(options.steps, all) : all;
  }
  if (run.options.steps < 1)
    run.options.steps = 1; // --save-artifact: no run
  StatusOr<LrSchedule> schedule =
      parseLrSchedule(options.lrSchedule, options.lr, run.options.steps);
  if (!schedule.ok())
    return Status(schedule.status()).withPrefix("--lr-schedule: ");
  run.schedule = *schedule;
  run.initialLossScale = options.initialLossScale.value_or(65536.0);
  run.build.optimizer = options.optimizer;
  run.build.detectAnomaly = options.detectAnomaly;
  run.build.accumulate = options.gradAccum > 1;
  run.trainStepRecord = describeTrainStep(run.build);
  run.build.initWeights = options.initWeights;
  run.build.freeze = options.freeze;
  run.build.trainable = options.trainable;
  run.build.initSeed = options.seed;
  run.build.loss = options.loss;
  run.build.ignoreIndex = options.ignoreIndex.value_or(-100);
  run.build.precision = options.precision;
  return run;
}

std::map<std::string, std::string> compileSettings(const RunSettings &run) {
  const std::string &attention = run.options.attention;
  return {{"train_step", run.trainStepRecord},
          {"parameters", describeParameterChoice(run.build)},
          {"precision", run.build.precision},
          {"loss", lossSetting(run)},
          {"attention", attention == "auto" ? (run.build.fuseAttention ? "fused" : "unfused")
                                            : attention},
          {"init_weights", run.build.initWeights ? "seed=" + std::to_string(run.build.initSeed)
                                                 : "no"},
          {"recompute", run.build.recompute +
                            (run.build.memoryLimit ? " budget=" + std::to_string(run.build.memoryLimit)
                                                   : "")}};
}

const std::map<std::string, std::string> &checkpointConfigFlags() {
  static const std::map<std::string, std::string> flags = {
      {"batch_size", "--batch-size"},
      {"seq_len", "--seq-len"},
      {"optimizer", "--optimizer and its flags"},
      {"loss", "--loss"},
      {"precision", "--precision"},
      {"grad_accum", "--grad-accum"},
      {"initial_loss_scale", "--loss-scale"},
      {"lr_schedule", "--lr-schedule"},
      {"seed", "--seed"},
      {"parallel_plan", "--config"}};
  return flags;
}

std::map<std::string, std::string> checkpointConfig(const RunSettings &run) {
  return {{"batch_size", std::to_string(run.options.batchSize)},
          {"seq_len", std::to_string(run.options.seqLen)},
          // Accumulation is grad_accum's: a relaunch on fewer ranks accumulates
          // more with the same optimizer state (Trainer::resume).
          {"optimizer", withoutAccumulation(run.trainStepRecord)},
          {"loss", lossSetting(run)},
          {"precision", run.build.precision},
          {"grad_accum", std::to_string(run.options.gradAccum)},
          {"initial_loss_scale", std::to_string(run.initialLossScale)},
          {"lr_schedule", run.schedule.spec()},
          {"seed", std::to_string(run.options.seed)}};
}

namespace {
// Which flags choose each compile-time setting.
const std::map<std::string, std::vector<const char *>> kSettingFlags = {
    {"train_step", {"--optimizer", "--momentum", "--weight-decay", "--clip-grad-norm",
                    "--nesterov"}},
    {"precision", {"--precision"}},
    {"loss", {"--loss", "--ignore-index"}},
    {"attention", {"--attention"}},
    {"init_weights", {"--init-weights"}},
    {"recompute", {"--recompute", "--memory-budget"}},
    {"parameters", {"--freeze", "--trainable"}}};
} // namespace

Status adoptTrainingArtifact(const std::string &dir, int64_t ranks, const std::string &parallel,
                             RunSettings &run, int64_t &vocab) {
  StatusOr<TrainingArtifactInfo> read = readTrainingInfo(dir);
  if (!read.ok())
    return read.status();
  TrainingArtifactInfo &info = *read;
  auto differs = [&](const char *what, int64_t mine, int64_t saved) {
    return Status::error(std::string(what) + " " + std::to_string(mine) +
                         ": the training step in " + dir + " was compiled for " +
                         std::to_string(saved) +
                         " (save it again with trc-run MODEL.onnx ... --save-artifact)");
  };
  const TrainerOptions &o = run.options;
  if (o.batchSize != info.batch)
    return differs("--batch-size", o.batchSize, info.batch);
  if (o.seqLen != info.seq)
    return differs("--seq-len", o.seqLen, info.seq);
  if (o.gradAccum != info.gradAccum)
    return differs("--grad-accum", o.gradAccum, info.gradAccum);
  if (ranks != info.ranks)
    return differs("world size", ranks, info.ranks);
  if (parallel != info.parallel)
    return Status::error("--config: the training step in " + dir +
                         " was compiled for the plan '" +
                         (info.parallel.empty() ? std::string("none") : info.parallel) +
                         "', this run asks for '" +
                         (parallel.empty() ? std::string("none") : parallel) + "'");
  auto mine = compileSettings(run);
  // Steps saved before recomputation existed were compiled without it.
  std::map<std::string, std::string> settings = info.settings;
  settings.try_emplace("recompute", "none");
  settings.try_emplace("parameters", describeParameterChoice(TrainingBuild{}));
  for (const auto &[key, flags] : kSettingFlags) {
    auto saved = settings.find(key);
    if (saved == settings.end())
      return Status::error(dir + "/" + kTrainingInfoFile + ": no setting '" + key + "'");
    for (const char *flag : flags)
      if (o.givenFlags.count(flag) && mine[key] != saved->second &&
          !(key == "attention" && o.attention == "auto") &&
          !(key == "precision" && o.precision == "auto"))
        return Status::error(std::string("option '") + flag + "': the training step in " +
                             dir + " was compiled with " + key + " '" + saved->second +
                             "' (this run asks for '" + mine[key] + "')");
  }
  // Flags not given take the step's settings (the checkpoints' config
  // then matches a run that compiled with them).
  run.options.attention = info.settings["attention"];
  run.trainStepRecord = info.settings["train_step"];
  run.build.precision = info.settings["precision"];
  const std::string &loss = info.settings["loss"];
  run.build.loss = loss == "model" ? "" : loss.substr(0, loss.find(' '));
  if (size_t at = loss.find("ignore_index="); at != std::string::npos) {
    std::optional<int64_t> index = parseInt64(std::string_view(loss).substr(at + 13));
    if (!index)
      return Status::error(dir + "/" + kTrainingInfoFile + ": bad setting loss '" + loss + "'");
    run.build.ignoreIndex = *index;
  }
  run.inputsName = info.inputs;
  run.targetsName = info.targets;
  run.targetsAreWindow = info.targetsAreWindow;
  vocab = info.vocab;
  return Status::success();
}

} // namespace trc::rt
