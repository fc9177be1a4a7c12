//===- Train.cpp - trc-run's training loop -----------------------------------===//
#include "Train.h"

#include "CompileInProcess.h"
#include "Distributed.h"
#include "ExportOnnx.h"
#include "runtime/train/LossScaler.h"
#include "RunHelpers.h"
#include "TrainingArtifact.h"
#ifdef TRC_RUN_WITH_COMPILER
#include "trc/Import/OnnxImporter.h"
#endif

#include "runtime/artifact/Artifact.h"
#include "runtime/backends/Backend.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/comm/Collectives.h"
#include "runtime/train/DataLoader.h"
#include "runtime/train/LrSchedule.h"
#include "runtime/train/Metrics.h"
#include "runtime/support/Names.h"
#include "runtime/artifact/Session.h"
#include "runtime/support/SplitMix64.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <sys/stat.h>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

using namespace trc::rt;

namespace trc {
namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

bool parseFloat(const std::string &text, double &out) {
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && std::isfinite(out);
}

/// The validated settings of a run.
struct Run {
  int64_t batch = 0, seq = 0, steps = 0, seed = 0, checkpointEvery = 0;
  int64_t gradAccum = 1; // micro-steps per optimizer step
  double initialLossScale = 65536.0; // fp16
  std::string data, metrics, checkpointDir, optimizer = "adamw";
  std::string inputsName, targetsName;
  // fused, unfused, or auto: fused for cuda, where the memory the kept
  // probabilities take is what limits the batch; unfused on the CPU, where
  // recomputing them costs time (measured: up to 20% of a step).
  std::string attention = "auto";
  LrSchedule schedule;
  TrainingBuild build;
};

std::string valueOr(const TrainArgs &a, const std::string &flag, const std::string &d) {
  auto it = a.values.find(flag);
  return it == a.values.end() ? d : it->second;
}

int configure(const TrainArgs &a, Run &run) {
  // Saving the step needs its shape only; training needs data and steps.
  const bool saving = a.values.count("--save-artifact");
  for (const char *required : {"--data", "--batch-size", "--seq-len", "--steps"})
    if (!a.values.count(required) &&
        !(saving && (std::string(required) == "--data" || std::string(required) == "--steps")))
      return fail(std::string("training needs ") + required);
  auto positive = [&](const char *flag, int64_t &out) {
    if (!parseInt(a.values.at(flag), 1, out))
      return fail(std::string("option '") + flag + "' expects a positive integer, got '" +
                  a.values.at(flag) + "'") == 0;
    return true;
  };
  if (!positive("--batch-size", run.batch) || !positive("--seq-len", run.seq) ||
      (a.values.count("--steps") && !positive("--steps", run.steps)))
    return 1;
  if (!a.values.count("--steps"))
    run.steps = 1; // --save-artifact: no run
  run.data = valueOr(a, "--data", "");
  run.metrics = valueOr(a, "--metrics", "");
  run.checkpointDir = valueOr(a, "--checkpoint-dir", "");
  if (a.values.count("--checkpoint-every") &&
      !parseInt(a.values.at("--checkpoint-every"), 1, run.checkpointEvery))
    return fail("option '--checkpoint-every' expects a positive integer");
  if (run.checkpointEvery && run.checkpointDir.empty())
    return fail("--checkpoint-every needs --checkpoint-dir");
  if (a.resume && run.checkpointDir.empty())
    return fail("--resume needs --checkpoint-dir");
  if (!parseInt(valueOr(a, "--seed", "0"), 0, run.seed))
    return fail("option '--seed' expects a non-negative integer");
  run.optimizer = valueOr(a, "--optimizer", "adamw");
  if (run.optimizer != "adamw" && run.optimizer != "adam" && run.optimizer != "sgd")
    return fail("option '--optimizer' expects adamw, adam or sgd, got '" + run.optimizer +
                "'");
  double lr;
  if (!parseFloat(valueOr(a, "--lr", "1e-3"), lr) || lr <= 0)
    return fail("option '--lr' expects a positive number");
  if (Status s = parseLrSchedule(valueOr(a, "--lr-schedule", "constant"), lr, run.steps,
                                 run.schedule);
      !s)
    return fail("--lr-schedule: " + s.message());
  std::string options = "optimizer=" + run.optimizer;
  for (const auto &[flag, key] : {std::pair<const char *, const char *>{"--momentum", "momentum"},
                                  {"--weight-decay", "weight-decay"},
                                  {"--clip-grad-norm", "clip-norm"}}) {
    if (!a.values.count(flag))
      continue;
    double v;
    if (!parseFloat(a.values.at(flag), v) || v < 0)
      return fail(std::string("option '") + flag + "' expects a non-negative number");
    options += std::string(" ") + key + "=" + a.values.at(flag);
  }
  if (a.nesterov)
    options += " nesterov=true";
  if (a.values.count("--grad-accum")) {
    if (!parseInt(a.values.at("--grad-accum"), 1, run.gradAccum))
      return fail("option '--grad-accum' expects a positive integer");
    if (run.batch % run.gradAccum != 0)
      return fail("--grad-accum " + std::to_string(run.gradAccum) +
                  " does not divide --batch-size " + std::to_string(run.batch) +
                  " (each micro-step takes batch-size / grad-accum rows)");
    if (run.gradAccum > 1)
      options += " accumulate=true";
  }
  run.build.trainStepOptions = options;
  run.build.initWeights = a.initWeights;
  run.build.initSeed = uint64_t(run.seed);
  run.build.loss = valueOr(a, "--loss", "");
  if (a.values.count("--loss") && run.build.loss != "cross_entropy")
    return fail("option '--loss' expects cross_entropy, got '" + run.build.loss + "'");
  if (a.values.count("--ignore-index")) {
    if (run.build.loss.empty())
      return fail("--ignore-index needs --loss cross_entropy");
    char *end = nullptr;
    const std::string &text = a.values.at("--ignore-index");
    run.build.ignoreIndex = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0')
      return fail("option '--ignore-index' expects an integer, got '" + text + "'");
  }
  run.build.precision = valueOr(a, "--precision", "fp32");
  if (run.build.precision != "fp32" && run.build.precision != "bf16" &&
      run.build.precision != "fp16")
    return fail("option '--precision' expects fp32, bf16 or fp16, got '" +
                run.build.precision + "'");
  run.attention = valueOr(a, "--attention", "auto");
  if (run.attention != "auto" && run.attention != "fused" && run.attention != "unfused")
    return fail("option '--attention' expects auto, fused or unfused, got '" + run.attention +
                "'");
  if (a.values.count("--loss-scale")) {
    if (run.build.precision != "fp16")
      return fail("--loss-scale is the initial loss scale of --precision fp16");
    if (!parseFloat(a.values.at("--loss-scale"), run.initialLossScale) ||
        run.initialLossScale < 1)
      return fail("option '--loss-scale' expects a number >= 1");
  }
  return 0;
}

/// Which graph inputs take the batch's inputs and targets: --feed, else the
/// first two integer inputs.
#ifdef TRC_RUN_WITH_COMPILER
int chooseFeeds(const TrainArgs &a, Run &run) {
  std::vector<GraphInputInfo> inputs;
  std::string error;
  if (!listGraphInputs(a.model, inputs, error))
    return fail(error);
  for (const auto &feed : a.feeds) {
    auto eq = feed.find('=');
    std::string name = feed.substr(0, eq), role = eq == std::string::npos ? "" : feed.substr(eq + 1);
    bool known = false;
    for (const auto &in : inputs)
      known |= in.name == name;
    if (!known)
      return fail("--feed names '" + name + "', which is not a graph input of " + a.model);
    if (role == "inputs")
      run.inputsName = name;
    else if (role == "targets")
      run.targetsName = name;
    else
      return fail("--feed expects NAME=inputs or NAME=targets, got '" + feed + "'");
  }
  if (!run.build.loss.empty()) {
    // The appended loss brings its own targets input (trc-append-loss).
    if (!run.targetsName.empty())
      return fail("--feed " + run.targetsName +
                  "=targets: with --loss the targets are the loss's own input");
    run.targetsName = "loss.targets";
  }
  for (const auto &in : inputs) {
    if (!in.isInteger || in.name == run.inputsName || in.name == run.targetsName)
      continue;
    if (run.inputsName.empty())
      run.inputsName = in.name;
    else if (run.targetsName.empty())
      run.targetsName = in.name;
  }
  if (run.inputsName.empty() || run.targetsName.empty())
    return fail(a.model + ": needs two integer graph inputs (token ids and targets; name "
                          "them with --feed NAME=inputs --feed NAME=targets), or one (token "
                          "ids) and --loss cross_entropy when the model outputs logits");
  return 0;
}
#endif

/// The compile-time settings a saved training step records, and the flags
/// that choose each (tools/trc-run/TrainingArtifact.h).
std::map<std::string, std::string> compileSettings(const Run &run) {
  return {{"train_step", run.build.trainStepOptions},
          {"precision", run.build.precision},
          {"loss", run.build.loss.empty() ? "model"
                                          : run.build.loss + " ignore_index=" +
                                                std::to_string(run.build.ignoreIndex)},
          {"attention", run.attention == "auto"
                            ? (run.build.fuseAttention ? "fused" : "unfused")
                            : run.attention},
          {"init_weights", run.build.initWeights ? "seed=" + std::to_string(run.build.initSeed)
                                                 : "no"}};
}

const std::map<std::string, std::vector<const char *>> kSettingFlags = {
    {"train_step", {"--optimizer", "--momentum", "--weight-decay", "--clip-grad-norm",
                    "--nesterov"}},
    {"precision", {"--precision"}},
    {"loss", {"--loss", "--ignore-index"}},
    {"attention", {"--attention"}},
    {"init_weights", {"--init-weights"}}};

bool given(const TrainArgs &a, const std::string &flag) {
  if (flag == "--nesterov")
    return a.nesterov;
  if (flag == "--init-weights")
    return a.initWeights;
  return a.values.count(flag) > 0;
}

/// Takes the feeds, vocabulary and compile-time settings of the saved
/// training step in `dir`; the run's shape and plan must be the step's, and
/// a compile-time flag given must agree with what the step was compiled
/// with (errors name the flag and the step's value).
int adoptTrainingArtifact(const TrainArgs &a, const std::string &dir, int64_t ranks,
                          const std::string &parallel, Run &run, int64_t &vocab) {
  TrainingArtifactInfo info;
  if (Status s = readTrainingInfo(dir, info); !s)
    return fail(s.message());
  auto differs = [&](const char *what, int64_t mine, int64_t saved) {
    return fail(std::string(what) + " " + std::to_string(mine) + ": the training step in " +
                dir + " was compiled for " + std::to_string(saved) +
                " (save it again with trc-run MODEL.onnx ... --save-artifact)");
  };
  if (run.batch != info.batch)
    return differs("--batch-size", run.batch, info.batch);
  if (run.seq != info.seq)
    return differs("--seq-len", run.seq, info.seq);
  if (run.gradAccum != info.gradAccum)
    return differs("--grad-accum", run.gradAccum, info.gradAccum);
  if (ranks != info.ranks)
    return differs("world size", ranks, info.ranks);
  if (parallel != info.parallel)
    return fail("--config: the training step in " + dir + " was compiled for the plan '" +
                (info.parallel.empty() ? std::string("none") : info.parallel) +
                "', this run asks for '" + (parallel.empty() ? std::string("none") : parallel) +
                "'");
  auto mine = compileSettings(run);
  for (const auto &[key, flags] : kSettingFlags) {
    auto saved = info.settings.find(key);
    if (saved == info.settings.end())
      return fail(dir + "/" + kTrainingInfoFile + ": no setting '" + key + "'");
    for (const char *flag : flags)
      if (given(a, flag) && mine[key] != saved->second &&
          !(key == "attention" && run.attention == "auto"))
        return fail(std::string("option '") + flag + "': the training step in " + dir +
                    " was compiled with " + key + " '" + saved->second +
                    "' (this run asks for '" + mine[key] + "')");
  }
  // Flags not given take the step's settings (the checkpoints' config
  // then matches a run that compiled with them).
  run.attention = info.settings["attention"];
  run.build.trainStepOptions = info.settings["train_step"];
  run.build.precision = info.settings["precision"];
  const std::string &loss = info.settings["loss"];
  run.build.loss = loss == "model" ? "" : loss.substr(0, loss.find(' '));
  if (size_t at = loss.find("ignore_index="); at != std::string::npos)
    run.build.ignoreIndex = std::strtoll(loss.c_str() + at + 13, nullptr, 10);
  run.inputsName = info.inputs;
  run.targetsName = info.targets;
  vocab = info.vocab;
  return 0;
}

/// Names of the slots a checkpoint holds: parameters and optimizer state.
std::vector<const Slot *> stateSlots(const Manifest &m) {
  std::vector<const Slot *> out;
  for (const Slot &s : m.slots) {
    bool isState = s.kind == SlotKind::Input && s.name.find(':') != std::string::npos;
    if (s.kind == SlotKind::Param || isState)
      out.push_back(&s);
  }
  return out;
}

/// The dropout masks' key of a micro-step: SplitMix64 of (seed, counter).
uint64_t dropoutKey(uint64_t seed, uint64_t counter) {
  return splitmix64(splitmix64(seed) ^ counter);
}

/// Gradient-accumulation buffers: updated on every micro-step.
bool isAccumulator(std::string_view name) { return name.rfind("grad_accum:", 0) == 0; }

std::map<std::string, std::string> runConfig(const Run &run) {
  return {{"batch_size", std::to_string(run.batch)},
          {"seq_len", std::to_string(run.seq)},
          {"optimizer", run.build.trainStepOptions},
          {"loss", run.build.loss.empty() ? "model"
                                          : run.build.loss + " ignore_index=" +
                                                std::to_string(run.build.ignoreIndex)},
          {"precision", run.build.precision},
          {"grad_accum", std::to_string(run.gradAccum)},
          {"initial_loss_scale", std::to_string(run.initialLossScale)},
          {"lr_schedule", run.schedule.spec()},
          {"seed", std::to_string(run.seed)}};
}

#ifdef TRC_RUN_WITH_COMPILER
/// Compiles the training step of `a.model` for `target` with micro-batches
/// of `microRows` rows (feeds chosen).
bool compileForTraining(const TrainArgs &a, Run &run, int64_t microRows,
                        const std::string &target, std::string &artifactDir,
                        TrainingModelInfo &info, std::string &error) {
  std::map<std::string, std::vector<int64_t>> shapes{{run.inputsName, {microRows, run.seq}}};
  if (run.build.loss.empty())
    shapes[run.targetsName] = {microRows, run.seq};
  run.build.tokenInput = run.inputsName;
  run.build.fuseAttention =
      run.attention == "fused" || (run.attention == "auto" && target == "cuda");
  return compileOnnxForTraining(a.model, shapes, run.build, target, artifactDir, info, error);
}
#endif

/// --save-artifact DIR: rank 0 compiles the step as a run would and keeps it
/// in DIR with its training.trc; nothing is trained. A DIR that exists must
/// be a step saved before (it is replaced).
int saveTrainingStep(const TrainArgs &a, Run &run, DistributedRun &dist,
                     const std::string &dir) {
#ifdef TRC_RUN_WITH_COMPILER
  if (!dist.isRoot())
    return 0;
  if (a.device != "cpu" && a.device != "cuda" && a.device != "auto")
    return fail("option '--device' expects cpu, cuda or auto, got '" + a.device + "'");
  // The step is compiled for the device it will run on, not this machine's.
  std::string target = a.device == "cuda" ? "cuda" : "cpu";
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !(fs::is_directory(dir, ec) && isTrainingArtifact(dir)))
    return fail("--save-artifact " + dir + ": exists and is not a saved training step "
                "(not replaced)");
  if (int rc = chooseFeeds(a, run))
    return rc;
  int64_t microRows = run.batch / dist.size() / run.gradAccum;
  std::string artifactDir, error;
  TrainingModelInfo info;
  bool compiled = compileForTraining(a, run, microRows, target, artifactDir, info, error);
  RemoveTemporaryArtifact removeTemporary{artifactDir};
  if (!compiled) {
    std::fputs(error.c_str(), stderr);
    return 1;
  }
  TrainingArtifactInfo saved;
  saved.inputs = run.inputsName;
  saved.targets = run.targetsName;
  saved.vocab = info.vocabSize;
  saved.batch = run.batch;
  saved.seq = run.seq;
  saved.gradAccum = run.gradAccum;
  saved.ranks = dist.size();
  saved.parallel = run.build.dataParallelOptions;
  saved.settings = compileSettings(run);
  if (Status s = writeTrainingInfo(artifactDir, saved); !s)
    return fail(s.message());
  // Replace DIR: the old step goes only once the new one is complete; a
  // rename across file systems falls back to a copy.
  std::string staging = dir + ".saving";
  fs::remove_all(staging, ec);
  fs::rename(artifactDir, staging, ec);
  if (ec) {
    ec.clear();
    fs::copy(artifactDir, staging, fs::copy_options::recursive, ec);
    if (ec)
      return fail("--save-artifact " + dir + ": cannot write " + staging + ": " + ec.message());
  }
  fs::remove_all(dir, ec);
  fs::rename(staging, dir, ec);
  if (ec)
    return fail("--save-artifact " + dir + ": " + ec.message());
  std::fprintf(stderr, "trc-run: saved the training step (target %s, batch %lld x %lld) to %s\n",
               target.c_str(), static_cast<long long>(run.batch),
               static_cast<long long>(run.seq), dir.c_str());
  return 0;
#else
  (void)run;
  (void)dist;
  (void)dir;
  return fail(a.model + ": --save-artifact compiles, which this runtime-only build cannot do");
#endif
}

} // namespace

int runTraining(const TrainArgs &a) {
  Run run;
  if (int rc = configure(a, run))
    return rc;
  // Ranks, groups and the data-parallel plan (one process: world size 1).
  std::unique_ptr<DistributedRun> dist;
  if (Status s = DistributedRun::create(valueOr(a, "--config", ""), dist); !s)
    return fail(s.message());
  const int64_t ranks = dist->size();
  if (run.batch % (ranks * run.gradAccum) != 0)
    return fail("--batch-size " + std::to_string(run.batch) + " is the global batch: it must be "
                "a multiple of the world size (" + std::to_string(ranks) + ") times --grad-accum (" +
                std::to_string(run.gradAccum) + ")");
  if (dist->dataParallel())
    run.build.dataParallelOptions = dist->passOptions();
  const bool root = dist->isRoot();
  struct stat modelStat;
  const bool fromArtifact =
      ::stat(a.model.c_str(), &modelStat) == 0 && S_ISDIR(modelStat.st_mode);
  const std::string saveDir = valueOr(a, "--save-artifact", "");
  if (fromArtifact && !saveDir.empty())
    return fail("--save-artifact compiles an .onnx model; " + a.model +
                " is a folder (already a saved training step?)");
  if (fromArtifact && a.values.count("--export-onnx"))
    return fail("--export-onnx writes the trained weights into the .onnx model they came "
                "from: train MODEL.onnx, not the saved step " + a.model);
#ifndef TRC_RUN_WITH_COMPILER
  if (!fromArtifact)
    return fail(a.model + ": this runtime-only build of trc-run cannot compile a model; "
                "train a step saved on the build machine with trc-run MODEL.onnx ... "
                "--save-artifact DIR");
#endif
  if (!saveDir.empty())
    return saveTrainingStep(a, run, *dist, saveDir);

  std::unique_ptr<Backend> backend;
  // A saved step runs on its own target under --device auto.
  std::string device = fromArtifact && a.device == "auto" ? deviceForArtifact(a.model) : a.device;
  if (Status s = createBackend(device, backend); !s)
    return fail(s.message());
  setCollectiveBackend(backend.get());
  struct ForgetBackend { // before the backend goes
    ~ForgetBackend() { setCollectiveBackend(nullptr); }
  } forgetBackend;
  // NCCL moves device memory; the CPU backend's tensors are host memory.
  if (dist->config().communicator == "nccl" && std::string(backend->target()) != "cuda")
    return fail("--config communicator: nccl needs a CUDA device (this run uses " +
                std::string(backend->target()) + "); use mpi for CPU ranks");
  if (root && dist->dataParallel())
    std::fprintf(stderr, "trc-run: %d rank%s, %s\n", dist->size(), dist->size() == 1 ? "" : "s",
                 dist->config().describe().c_str());
  int64_t vocab = 0;
  if (fromArtifact) {
    if (int rc = adoptTrainingArtifact(a, a.model, ranks, run.build.dataParallelOptions, run,
                                       vocab))
      return rc;
  }
#ifdef TRC_RUN_WITH_COMPILER
  else if (int rc = chooseFeeds(a, run)) {
    return rc;
  }
#endif

  DataLoaderOptions dataOptions;
  dataOptions.batchSize = run.batch;
  dataOptions.seqLen = run.seq;
  dataOptions.shuffle = a.shuffle;
  dataOptions.seed = static_cast<uint64_t>(run.seed);
  // Opened once before compiling so that a bad data file fails fast, and
  // again below with the model's vocabulary as the bound on token ids.
  std::unique_ptr<DataLoader> data;
  if (Status s = DataLoader::open(run.data, dataOptions, data); !s)
    return fail(s.message());

  // Rank r takes rows [r*B/R, (r+1)*B/R) of each global batch; each
  // micro-step takes 1/grad-accum of those.
  int64_t rankRows = run.batch / ranks;
  int64_t microRows = rankRows / run.gradAccum;
  std::string artifactDir = fromArtifact ? a.model : "";
  RemoveTemporaryArtifact removeTemporary{""};
#ifdef TRC_RUN_WITH_COMPILER
  if (!fromArtifact) {
    std::string error;
    TrainingModelInfo info;
    // Rank 0 compiles; the other ranks receive the same artifact.
    bool compiled = !root || compileForTraining(a, run, microRows, backend->target(),
                                                artifactDir, info, error);
    removeTemporary.artifactDir = artifactDir;
    if (!compiled)
      std::fputs(error.c_str(), stderr);
    if (ranks > 1) {
      Status shared = dist->shareArtifact(compiled, artifactDir, info.vocabSize);
      removeTemporary.artifactDir = artifactDir;
      if (!shared)
        return compiled ? fail(shared.message()) : 1;
    }
    if (!compiled)
      return 1;
    vocab = info.vocabSize;
  }
#endif
  if (vocab > 0) {
    dataOptions.vocabSize = vocab;
    if (Status s = DataLoader::open(run.data, dataOptions, data); !s)
      return fail(s.message());
  }

  std::unique_ptr<Artifact> artifact;
  std::unique_ptr<Session> session;
  if (Status s = openSession(artifactDir, *backend, artifact, session, dist->shardIndex()); !s)
    return fail(s.message());
  if (Status s = dist->broadcastParameters(*session); !s)
    return fail(s.message());
  const Manifest &manifest = artifact->manifest();
  auto hasInput = [&](const char *name) {
    return manifest.find(SlotKind::Input, name) != nullptr;
  };
  bool lossScaling = hasInput("trc.loss_scale");
  bool dropout = hasInput("trc.rng_key");

  // Optimizer state starts at zero; a resumed run loads it all back.
  auto slots = stateSlots(manifest);
  for (const Slot *slot : slots)
    if (slot->kind == SlotKind::Input) {
      HostTensor zeros;
      if (Status s = zeros.allocate(slot->dtype, slot->shape); !s)
        return fail(s.message());
      if (Status s = session->setInput(slot->name, zeros); !s)
        return fail(s.message());
    }
  LossScaler scaler;
  scaler.scale = run.initialLossScale;
  int64_t firstStep = 0;
  if (a.resume) {
    std::string folder;
    if (Status s = latestCheckpoint(run.checkpointDir, folder); !s)
      return fail(s.message());
    CheckpointState state;
    std::vector<NamedTensor> tensors;
    if (Status s = readCheckpoint(folder, state, tensors); !s)
      return fail(s.message());
    if (Status s = checkCheckpointConfig(folder, state, runConfig(run)); !s)
      return fail(s.message());
    auto find = [&](const std::string &name) -> const NamedTensor * {
      for (const auto &t : tensors)
        if (t.name == name)
          return &t;
      return nullptr;
    };
    for (const Slot *slot : slots) {
      const NamedTensor *found = find(slot->name);
      if (!found)
        return fail(folder + ": the checkpoint has no tensor '" + percentEncode(slot->name) +
                    "'");
      if (Status s = dist->writeFull(*session, *slot, found->tensor); !s)
        return fail(folder + ": " + s.message());
    }
    if (lossScaling) {
      const NamedTensor *scale = find(LossScaler::kScaleTensor);
      const NamedTensor *good = find(LossScaler::kGoodStepsTensor);
      if (!scale || !good || scale->tensor.dtype != DType::F64 ||
          good->tensor.dtype != DType::I64 || scale->tensor.numElements() != 1 ||
          good->tensor.numElements() != 1)
        return fail(folder + ": the checkpoint has no valid loss-scaler state ('" +
                    LossScaler::kScaleTensor + "', '" + LossScaler::kGoodStepsTensor + "')");
      scaler.scale = *static_cast<const double *>(scale->tensor.data());
      scaler.goodSteps = *static_cast<const int64_t *>(good->tensor.data());
    }
    if (Status s = data->restore(state.data); !s)
      return fail(s.message());
    firstStep = state.step;
  }

  std::unique_ptr<MetricsWriter> metrics;
  if (!run.metrics.empty() && root) {
    Status s = a.resume ? MetricsWriter::resume(run.metrics, firstStep, metrics)
                        : MetricsWriter::create(run.metrics, metrics);
    if (!s)
      return fail(s.message());
  }
  HostTensor inputs, targets, microInputs, microTargets, lr, stepCount, loss, norm;
  HostTensor keepAccum, gradScale, lossScale, rngKey;
  (void)rngKey.allocate(DType::I64, {});
  for (auto [tensor, rows] : {std::pair{&inputs, run.batch}, std::pair{&targets, run.batch},
                              std::pair{&microInputs, microRows},
                              std::pair{&microTargets, microRows}})
    if (Status s = tensor->allocate(DType::I64, {rows, run.seq}); !s)
      return fail(s.message());
  for (HostTensor *scalar : {&lr, &stepCount, &keepAccum, &gradScale, &lossScale})
    (void)scalar->allocate(DType::F32, {});
  auto setScalar = [&](HostTensor &t, double v) { *static_cast<float *>(t.data()) = float(v); };
  ProgressBar progress(run.steps, firstStep);

  for (int64_t step = firstStep; step < run.steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    if (Status s = data->next(static_cast<int64_t *>(inputs.data()),
                              static_cast<int64_t *>(targets.data()));
        !s)
      return fail(s.message());
    double rate = run.schedule.at(step);
    setScalar(lr, rate);
    setScalar(stepCount, double(step + 1));
    setScalar(lossScale, scaler.scale);
    setScalar(gradScale, 1.0 / (double(run.gradAccum) * (lossScaling ? scaler.scale : 1.0)));
    double lossSum = 0, gradNorm = 0;
    bool applied = true;
    for (int64_t micro = 0; micro < run.gradAccum; ++micro) {
      bool last = micro + 1 == run.gradAccum;
      auto takeRows = [&](HostTensor &part, const HostTensor &full) {
        size_t first = size_t((dist->rank() * rankRows + micro * microRows) * run.seq),
               count = size_t(microRows * run.seq);
        std::memcpy(part.data(), static_cast<const int64_t *>(full.data()) + first,
                    count * sizeof(int64_t));
      };
      takeRows(microInputs, inputs);
      takeRows(microTargets, targets);
      setScalar(keepAccum, last ? 0.0 : 1.0);
      std::vector<std::pair<std::string, HostTensor *>> feeds{
          {run.inputsName, &microInputs}, {run.targetsName, &microTargets},
          {"trc.lr", &lr}, {"trc.step", &stepCount}};
      if (run.gradAccum > 1)
        feeds.push_back({"trc.keep_accum", &keepAccum});
      if (run.gradAccum > 1 || lossScaling)
        feeds.push_back({"trc.grad_scale", &gradScale});
      if (lossScaling)
        feeds.push_back({"trc.loss_scale", &lossScale});
      if (dropout) { // a pure function of (seed, micro-step): resumes exactly
        *static_cast<int64_t *>(rngKey.data()) =
            static_cast<int64_t>(dropoutKey(uint64_t(run.seed), uint64_t(step * run.gradAccum + micro)));
        feeds.push_back({"trc.rng_key", &rngKey});
      }
      for (auto &[name, value] : feeds)
        if (Status s = session->setInput(name, *value); !s)
          return fail(s.message());
      if (Status s = session->run(); !s)
        return fail(s.message());
      if (Status s = session->getOutput("loss", loss); !s)
        return fail(s.message());
      lossSum += *static_cast<float *>(loss.data());
      if (!last) { // only the running gradient sum moves
        if (Status s = session->applyUpdates(isAccumulator); !s)
          return fail(s.message());
        continue;
      }
      if (Status s = session->getOutput("grad_norm", norm); !s)
        return fail(s.message());
      gradNorm = *static_cast<float *>(norm.data());
      // An overflowed f16 step is skipped (its sums still reset).
      applied = !lossScaling || scaler.update(gradNorm);
      Status s = applied ? session->applyUpdates() : session->applyUpdates(isAccumulator);
      if (!s)
        return fail(s.message());
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                          start)
                    .count();
    double lossValue = lossSum / double(run.gradAccum);
    double tokensPerSecond = double(run.batch * run.seq) / (ms / 1000.0);
    if (metrics) {
      StepMetrics m;
      m.step = step + 1;
      m.loss = MetricValue(lossValue);
      m.learningRate = MetricValue(rate);
      m.gradNorm = MetricValue(gradNorm);
      m.tokensPerSecond = MetricValue(tokensPerSecond);
      m.stepTimeMs = MetricValue(ms);
      if (lossScaling) {
        m.extra.push_back({"loss_scale", MetricValue(scaler.scale)});
        m.extra.push_back({"skipped", MetricValue(applied ? 0.0 : 1.0)});
      }
      if (Status s = metrics->write(m); !s)
        return fail(s.message());
    }
    if (root)
      progress.update(step + 1, lossValue, tokensPerSecond);

    bool last = step + 1 == run.steps;
    if (run.checkpointEvery && ((step + 1) % run.checkpointEvery == 0 || last)) {
      std::vector<HostTensor> values(slots.size());
      std::vector<SafetensorsView> views;
      for (size_t i = 0; i < slots.size(); ++i) {
        if (Status s = dist->readFull(*session, *slots[i], values[i]); !s)
          return fail(s.message());
        views.push_back({slots[i]->name, values[i].dtype, values[i].shape, values[i].data()});
      }
      double scale = scaler.scale;
      int64_t good = scaler.goodSteps;
      if (lossScaling) {
        views.push_back({LossScaler::kScaleTensor, DType::F64, {1}, &scale});
        views.push_back({LossScaler::kGoodStepsTensor, DType::I64, {1}, &good});
      }
      CheckpointState state;
      state.step = step + 1;
      state.data = data->state();
      state.seed = static_cast<uint64_t>(run.seed);
      state.config = runConfig(run);
      if (root) { // only rank 0 writes; every rank can resume from it
        progress.clear();
        if (Status s = saveCheckpoint(run.checkpointDir, state, views); !s)
          return fail(s.message());
      }
    }
  }
  if (root)
    progress.finish();
  if (auto out = a.values.find("--export-onnx"); out != a.values.end()) {
    // Every rank helps gather sharded parameters; rank 0 writes.
    std::map<std::string, HostTensor> trained;
    TrainedWeights weights;
    for (const Slot *slot : manifest.slotsOfKind(SlotKind::Param))
      if (slot->trainable) {
        if (Status s = dist->readFull(*session, *slot, trained[slot->name]); !s)
          return fail(s.message());
        weights.names.push_back(slot->name);
      }
    weights.read = [&](const std::string &name, HostTensor &value) {
      value = std::move(trained.at(name));
      return Status::success();
    };
#ifdef TRC_RUN_WITH_COMPILER
    if (root)
      if (Status s = exportTrainedOnnx(a.model, out->second, weights); !s)
        return fail(s.message());
#endif
  }
  return 0;
}

} // namespace trc
