//===- Trainer.cpp - the training loop (see Trainer.h) ---------------------===//
//
// runTrainer validates the options, connects the ranks, then either saves
// the compiled step (saveArtifact) or builds a TrainingJob: the step's
// session with its state zeroed or resumed, the data loader and the metrics
// writer, and runs the steps. Every rank runs the same calls in the same
// order (several of them are collective); only rank 0 prints, writes metrics
// and checkpoints, and exports.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Trainer.h"

#include "runtime/spec/EngineSupport.h"
#include "trc/Abi/AttrNames.h"
#include "trc/Abi/SlotNames.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/artifact/Session.h"
#include "runtime/backends/Backend.h"
#include "runtime/comm/Collectives.h"
#include "runtime/formats/Manifest.h"
#include "runtime/train/AnomalyReport.h"
#include "runtime/support/Names.h"
#include "runtime/support/HalfFloat.h"
#include "runtime/support/Profiler.h"
#include "runtime/support/SplitMix64.h"
#include "runtime/support/StopSignals.h"
#include "runtime/support/TensorSplit.h"
#include "runtime/support/ThreadPool.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/DataLoader.h"
#include "runtime/train/DistributedRun.h"
#include "runtime/train/Evaluator.h"
#include "runtime/train/Predictions.h"
#include "runtime/train/LossScaler.h"
#include "runtime/train/Metrics.h"
#include "runtime/train/ModelState.h"
#include "runtime/train/PipelineExecutor.h"
#include "runtime/train/RespecializeCheck.h"
#include "runtime/train/RowData.h"
#include "runtime/train/RunProfile.h"
#include "runtime/train/TensorBoard.h"
#include "runtime/train/SaveModel.h"
#include "runtime/train/TrainerSettings.h"
#include "runtime/train/TrainingArtifact.h"

#include "absl/strings/str_join.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <sys/resource.h>
#include <sys/stat.h>

namespace trc::rt {
namespace {

/// The dropout masks' key of a micro-step: SplitMix64 of (seed, counter).
uint64_t dropoutKey(uint64_t seed, uint64_t counter) {
  return splitmix64(splitmix64(seed) ^ counter);
}

/// A model that is a folder is a saved training step; anything else is
/// compiled (an .onnx file).
bool isSavedStep(const std::string &model) {
  struct stat st;
  return ::stat(model.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// Token data feeds [T] token ids and [T] targets per row.
void setTokenFeeds(RunSettings &run) {
  run.feeds = {{run.inputsName, DType::I64, {run.options.seqLen}},
               {run.targetsName, DType::I64, {run.options.seqLen}}};
}

/// Which graph inputs take the batch's inputs and targets: the feeds given,
/// else the first two integer inputs. `say`: print what was chosen for a
/// model that shifts its own labels (one rank of a job does).
Status chooseFeeds(StepCompiler &compiler, RunSettings &run, bool say) {
  const std::string &model = run.options.model;
  StatusOr<std::vector<GraphInput>> listed = compiler.listGraphInputs(model);
  if (!listed.ok())
    return listed.status();
  const std::vector<GraphInput> &inputs = *listed;
  bool chosenWindow = false; // --feed NAME=targets|labels said which
  for (const auto &feed : run.options.feeds) {
    auto eq = feed.find('=');
    std::string name = feed.substr(0, eq), role = eq == std::string::npos ? "" : feed.substr(eq + 1);
    bool known = false;
    for (const auto &in : inputs)
      known |= in.name == name;
    if (!known)
      return Status::error("--feed names '" + name + "', which is not a graph input of " + model);
    if (role == "inputs") {
      run.inputsName = name;
    } else if (role == "targets" || role == "labels") {
      run.targetsName = name;
      run.targetsAreWindow = role == "labels";
      chosenWindow = true;
    } else {
      return Status::error("--feed expects NAME=inputs, NAME=targets (the next tokens) or "
                           "NAME=labels (the token window, for a model that shifts its labels "
                           "itself), got '" + feed + "'");
    }
  }
  if (!run.build.loss.empty()) {
    // The appended loss brings its own targets input (trc-append-loss).
    if (!run.targetsName.empty())
      return Status::error("--feed " + run.targetsName +
                           "=targets: with --loss the targets are the loss's own input");
    run.targetsName = abi::kLossTargets;
  }
  for (const auto &in : inputs) {
    if (!in.isInteger || in.name == run.inputsName || in.name == run.targetsName)
      continue;
    if (run.inputsName.empty())
      run.inputsName = in.name;
    else if (run.targetsName.empty())
      run.targetsName = in.name;
    else if (!run.build.loss.empty())
      // A second integer input with --loss, which token data cannot feed:
      // often a model that brings its own loss (input_ids, labels -> loss).
      return Status::error("--loss " + run.build.loss + " appends a loss to a model that "
                           "outputs logits, but " + model + " also takes the integer input '" +
                           in.name + "' besides the token ids '" + run.inputsName +
                           "', which token data cannot feed: a model with its own loss trains "
                           "without --loss; other inputs need row data (--data rows.npz)");
  }
  if (run.inputsName.empty() || run.targetsName.empty())
    return Status::error(model + ": needs two integer graph inputs (token ids and targets; name "
                                 "them with --feed NAME=inputs --feed NAME=targets), or one "
                                 "(token ids) and --loss cross_entropy when the model outputs "
                                 "logits");
  for (const GraphInput &in : inputs)
    if (in.name == run.targetsName && !in.shiftedBy.empty() && !chosenWindow) {
      run.targetsAreWindow = true;
      if (say)
        std::fprintf(stderr,
                     "trc-run: the model shifts '%s' itself (node '%s' slices it from "
                     "position 1): it takes the token window, as '%s' does (--feed "
                     "%s=targets feeds the next tokens instead)\n",
                     in.name.c_str(), in.shiftedBy.c_str(), run.inputsName.c_str(),
                     in.name.c_str());
    }
  setTokenFeeds(run);
  return Status::success();
}

/// Row data: every graph input (and an appended loss's targets) takes the
/// array of its name (matchRowFeeds); the first integer input counts as
/// the token ids (tokens_per_second, the vocabulary).
Status chooseRowFeeds(StepCompiler &compiler, RunSettings &run, const RowDataset &data,
                      std::vector<RowFeed> &matched) {
  StatusOr<std::vector<GraphInput>> listed = compiler.listGraphInputs(run.options.model);
  if (!listed.ok())
    return listed.status();
  StatusOr<std::vector<RowFeed>> feeds =
      matchRowFeeds(data, *listed, run.build.loss.empty() ? "" : abi::kLossTargets);
  if (!feeds.ok())
    return feeds.status();
  matched = *std::move(feeds);
  run.feeds.clear();
  for (const RowFeed &feed : matched) {
    const std::vector<int64_t> &shape = feed.array->tensor.shape;
    run.feeds.push_back({feed.input, feed.array->tensor.dtype, {shape.begin() + 1, shape.end()}});
  }
  for (const GraphInput &in : *listed)
    if (in.isInteger) {
      run.inputsName = in.name;
      break;
    }
  return Status::success();
}

/// --precision auto on `target`: bf16 with fp32 master weights on cuda
/// (2.2x fp32's tokens/s for GPT-2 124M on an H200, bench/RESULTS.md), fp32
/// on the CPU (no 16-bit arithmetic there to gain from). Every rank resolves
/// it (only rank 0 compiles; all record it in checkpoints).
void resolvePrecision(RunSettings &run, const std::string &target) {
  if (run.options.precision == "auto")
    run.build.precision = target == "cuda" ? "bf16" : "fp32";
}

/// Compiles the training step for `target` with micro-batches of
/// `microRows` rows (feeds chosen, precision resolved for `target`).
StatusOr<CompiledStep> compileStep(StepCompiler &compiler, RunSettings &run, int64_t microRows,
                                   const std::string &target) {
  std::map<std::string, std::vector<int64_t>> shapes = stepShapes(run, microRows);
  run.build.tokenInput = run.inputsName;
  const std::string &attention = run.options.attention;
  // auto: fused for cuda, where the memory the kept probabilities take is
  // what limits the batch; unfused on the CPU, where recomputing them costs
  // time (measured: up to 20% of a step).
  // The ring (cp_comm_type p2p) is of fused attention.
  run.build.fuseAttention = attention == "fused" ||
                            (attention == "auto" && (target == "cuda" || run.build.contextRing));
  // Likewise a layer norm's statistics: kept for the backward on the CPU
  // unless recomputation was asked for (memory first).
  run.build.recomputeStatistics = target == "cuda" || run.build.recompute != "none";
  return compiler.compileTrainingStep(run.options.model, shapes, run.build, target);
}

/// saveArtifact DIR: rank 0 compiles the step as a run would and keeps it
/// in DIR with its training.trc; nothing is trained. A DIR that exists must
/// be a step saved before (it is replaced).
/// The rows of one program run: a data rank's share of the batch over its
/// micro-steps (--grad-accum) or the pipeline's microbatches.
int64_t microbatchRows(const TrainerOptions &o, DistributedRun &dist) {
  int64_t perStep = dist.pipelineDegree() > 1 ? dist.config().microbatches : o.gradAccum;
  return o.batchSize / dist.dataDegree() / perStep;
}

Status saveTrainingStep(StepCompiler &compiler, RunSettings &run, DistributedRun &dist) {
  const TrainerOptions &o = run.options;
  const std::string &dir = o.saveArtifact;
  if (!dist.isRoot())
    return Status::success();
  if (o.device != "cpu" && o.device != "cuda" && o.device != "auto")
    return Status::error("option '--device' expects cpu, cuda or auto, got '" + o.device + "'");
  // The step is compiled for the device it will run on, not this machine's.
  std::string target = o.device == "cuda" ? "cuda" : "cpu";
  resolvePrecision(run, target);
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) &&
      !(std::filesystem::is_directory(dir, ec) && isTrainingArtifact(dir)))
    return Status::error("--save-artifact " + dir + ": exists and is not a saved training step "
                         "(not replaced)");
  if (Status s = chooseFeeds(compiler, run, /*say=*/true); !s) // rank 0 only here
    return s;
  StatusOr<CompiledStep> compiled = compileStep(compiler, run, microbatchRows(o, dist), target);
  if (!compiled.ok())
    return compiled.status();
  const std::string &artifactDir = compiled->artifactDir;
  const TrainingModelInfo &info = compiled->info;
  TemporaryArtifact removeTemporary{artifactDir};
  TrainingArtifactInfo saved;
  saved.inputs = run.inputsName;
  saved.targets = run.targetsName;
  saved.targetsAreWindow = run.targetsAreWindow;
  saved.vocab = info.vocabSize;
  saved.batch = o.batchSize;
  saved.seq = o.seqLen;
  saved.gradAccum = o.gradAccum;
  saved.ranks = dist.size();
  saved.parallel = run.parallelRecord;
  saved.settings = compileSettings(run);
  if (Status s = writeTrainingInfo(artifactDir, saved); !s)
    return s;
  if (Status s = installTrainingArtifact(artifactDir, dir); !s)
    return s.withPrefix("--save-artifact " + dir + ": ");
  std::fprintf(stderr, "trc-run: saved the training step (target %s, batch %lld x %lld) to %s\n",
               target.c_str(), static_cast<long long>(o.batchSize),
               static_cast<long long>(o.seqLen), dir.c_str());
  return Status::success();
}

/// The plans this trainer runs: data parallelism with ZeRO, tensor and
/// pipeline parallelism (a step compiled for it: by the StepCompiler, or
/// saved; the step's tensor degree is checked against the plan's in
/// checkTensorDegree), recomputation and activation offloading (compiled
/// into the one-program step; the executor's with pipeline stages). The
/// rest of a ParallelPlan parses, and is refused here by the key that asks
/// for it.
Status checkRunnable(const ParallelPlan &plan) {
  if (Status s = engineRuns(plan); !s)
    return s;
  // trc-run replaces an auto_partition config by the planner's plan before
  // it gets here (lib/Driver: trc/Driver/AutoPlan.h); what remains is a saved step,
  // or a trainer embedded without the planner.
  if (plan.autoPartition)
    return Status::error("--config: key 'auto_partition': the planner chooses the plan when "
                         "trc-run compiles an .onnx model (built with the compiler); a saved "
                         "step keeps the plan it was compiled with");
  return Status::success();
}

/// Microbatches without pipeline stages (a plan trc-plan prints, SageMaker's
/// meaning too) are gradient accumulation: that many micro-steps per step.
/// --grad-accum, when given, must agree.
Status microbatchesAsAccumulation(const ParallelPlan &plan, RunSettings &run, bool root) {
  if (plan.pipelineDegree > 1 || plan.microbatches <= 1)
    return Status::success();
  TrainerOptions &o = run.options;
  if (o.givenFlags.count("--grad-accum") && o.gradAccum != plan.microbatches)
    return Status::error("--grad-accum " + std::to_string(o.gradAccum) +
                         " contradicts --config key 'microbatches': " +
                         std::to_string(plan.microbatches) +
                         " (without pipeline stages, microbatches are gradient accumulation)");
  if (o.gradAccum == plan.microbatches)
    return Status::success();
  o.gradAccum = plan.microbatches;
  run.build.accumulate = true;
  run.trainStepRecord = describeTrainStep(run.build);
  if (root)
    std::fprintf(stderr,
                 "trc-run: --config microbatches %lld without pipeline stages: %lld micro-steps "
                 "of gradient accumulation per step (as --grad-accum %lld)\n",
                 static_cast<long long>(plan.microbatches),
                 static_cast<long long>(plan.microbatches),
                 static_cast<long long>(plan.microbatches));
  return Status::success();
}

/// The recomputation policy: --recompute, else --config's `recompute`
/// (both given: they must agree); --memory-budget alone means auto.
Status chooseRecompute(const TrainerOptions &o, const ParallelPlan &plan, TrainingBuild &build) {
  std::string policy = o.recompute.empty() ? plan.recompute : o.recompute;
  if (!o.recompute.empty() && plan.recompute != "none" && plan.recompute != o.recompute)
    return Status::error("--recompute " + o.recompute + " contradicts --config key 'recompute': " +
                         plan.recompute);
  if (o.memoryBudget > 0 && policy == "none")
    policy = "auto";
  if (o.memoryBudget > 0 && policy != "auto")
    return Status::error("--memory-budget is the arena budget of recompute auto (got " + policy +
                         ")");
  build.recompute = policy;
  build.memoryLimit = o.memoryBudget;
  return Status::success();
}

/// Every split param and state slot of the step (manifest `split`) must be
/// split over the plan's tensor degree, every split data input (one of
/// `feeds`: a sequence) over its context degree: a step compiled for other
/// degrees would load the wrong parts.
Status checkSplitDegrees(const Manifest &manifest, const std::vector<StepFeed> &feeds,
                         int tensorDegree, int contextDegree, const std::string &step) {
  auto compiledFor = [&](const char *key, int degree, const char *axis, int compiled,
                         const std::string &why) {
    return Status::error(std::string("--config: key '") + key + "': " + std::to_string(degree) +
                         ", but the training step " + step + " was compiled for " + axis +
                         " degree " + std::to_string(compiled) + why);
  };
  const Slot *splitInput = nullptr;
  for (const Slot &slot : manifest.slots) {
    if (!slot.isSplit())
      continue;
    bool input = slot.kind == SlotKind::Input &&
                 std::any_of(feeds.begin(), feeds.end(),
                             [&](const StepFeed &f) { return f.input == slot.name; });
    int degree = input ? contextDegree : tensorDegree;
    if (input)
      splitInput = &slot;
    if (slot.split.degree != degree)
      return compiledFor(input ? "context_parallel_degree" : "tensor_parallel_degree", degree,
                         input ? "context" : "tensor", int(slot.split.degree),
                         " (" + std::string(slotKindName(slot.kind)) + " '" +
                             percentEncode(slot.name) + "' is split over " +
                             std::to_string(slot.split.degree) + " ranks)");
  }
  if (contextDegree > 1 && !splitInput)
    return compiledFor("context_parallel_degree", contextDegree, "context", 1,
                       " (no input is split)");
  return Status::success();
}

/// Each fed input slot of the step takes the rows a program step feeds it
/// (`microRows` rows of the feed's row shape, this rank's part of a split
/// one): a saved step whose training.trc says another batch or sequence
/// than its program was compiled for is refused here, naming the file,
/// rather than at its first step.
Status checkFeedShapes(const Manifest &manifest, const std::vector<StepFeed> &feeds,
                       int64_t microRows, const std::string &infoFile) {
  for (const StepFeed &feed : feeds) {
    const Slot *slot = manifest.find(SlotKind::Input, feed.input);
    if (!slot)
      continue;
    std::vector<int64_t> shape{microRows};
    shape.insert(shape.end(), feed.rowShape.begin(), feed.rowShape.end());
    if (slot->isSplit())
      shape = splitPartShape(shape, slot->split);
    if (slot->shape != shape)
      return Status::error(infoFile + ": its batch and sequence make a program step feed " +
                           formatType(feed.dtype, shape) + " to input '" +
                           percentEncode(feed.input) + "', which its program takes as " +
                           formatType(slot->dtype, slot->shape) +
                           " (save the step again with trc-run MODEL.onnx ... --save-artifact)");
  }
  return Status::success();
}

/// What a pipeline-parallel run does not do yet, refused by flag or key.
Status checkPipelineOptions(const TrainerOptions &o, const ParallelPlan &plan) {
  auto refuse = [](const std::string &what) {
    return Status::error(what + " is not available with 'pipeline_parallel_degree' yet");
  };
  if (o.detectAnomaly) // its sites would span several stage programs
    return refuse("--detect-anomaly");
  if (o.batchSize % (int64_t(plan.dataDegree()) * plan.microbatches) != 0)
    return Status::error("--config: key 'microbatches': " + std::to_string(plan.microbatches) +
                         " microbatches on each of " + std::to_string(plan.dataDegree()) +
                         " data rank(s) do not divide --batch-size " + std::to_string(o.batchSize));
  return Status::success();
}

/// Pipeline stages' slots read and written whole (sharded and
/// tensor-parallel ones through their groups), as the one-program step's.
LogicalSlots logicalSlots(DistributedRun &dist) {
  LogicalSlots logical;
  logical.read = [&dist](Session &session, const Slot &slot) {
    return dist.readFull(session, slot);
  };
  logical.write = [&dist](Session &session, const Slot &slot, const HostTensor &whole) {
    return dist.writeFull(session, slot, whole);
  };
  return logical;
}

/// A FindTensor over `tensors`.
FindTensor tensorFinder(const std::vector<NamedTensor> &tensors) {
  return [&tensors](const std::string &name) -> const HostTensor * {
    for (const NamedTensor &t : tensors)
      if (t.name == name)
        return &t.tensor;
    return nullptr;
  };
}

/// An evaluation's metrics (kEvalMetrics: one spelling for training,
/// evaluation alone and --keep-best).
void addEvalMetrics(StepMetrics &m, const EvalResult &e) {
  for (const EvalMetric &metric : kEvalMetrics)
    if (std::optional<double> value = evalMetricValue(e, metric))
      m.extra.push_back({metric.name, MetricValue(*value)});
}

/// This process's peak resident memory so far, in MiB (getrusage).
double peakResidentMegabytes() {
  struct rusage usage;
  if (::getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return double(usage.ru_maxrss) / 1024.0; // Linux: KiB
}

/// An evaluation's numbers as the step line shows them.
std::string describeEval(const EvalResult &e) {
  char text[160];
  std::string out;
  for (const EvalMetric &metric : kEvalMetrics)
    if (std::optional<double> value = evalMetricValue(e, metric)) {
      std::snprintf(text, sizeof text, metric.format, *value);
      out += (out.empty() ? "" : " | ") + std::string(metric.name) + " " + text;
    }
  if (e.tokens)
    std::snprintf(text, sizeof text, " (%lld windows, %lld tokens, %.1f s)",
                  static_cast<long long>(e.rows), static_cast<long long>(e.tokens), e.seconds);
  else
    std::snprintf(text, sizeof text, " (%lld rows, %.1f s)", static_cast<long long>(e.rows),
                  e.seconds);
  return out + text;
}

/// A value as a non-finite message shows it: nan, inf, -inf or %g.
std::string describeValue(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

/// What made a step non-finite: "the loss is nan (gradient norm inf)",
/// and with --detect-anomaly where it began.
std::string describeNonFinite(const StepResult &r) {
  std::string text = !std::isfinite(r.loss)
                         ? "the loss is " + describeValue(r.loss) + " (gradient norm " +
                               describeValue(r.gradNorm) + ")"
                         : "the gradient norm is " + describeValue(r.gradNorm) + " (loss " +
                               describeValue(r.loss) + ")";
  return r.anomaly.empty() ? text : text + "; " + r.anomaly;
}

/// Whether `n` values of `dtype` at `data` are all finite (integers are).
bool allFinite(DType dtype, const void *data, int64_t n) {
  auto every = [&](auto read) {
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(read(i)))
        return false;
    return true;
  };
  const auto *u16 = static_cast<const uint16_t *>(data);
  switch (dtype) {
  case DType::F32:
    return every([&](int64_t i) { return static_cast<const float *>(data)[i]; });
  case DType::F64:
    return every([&](int64_t i) { return static_cast<const double *>(data)[i]; });
  case DType::F16:
    return every([&](int64_t i) { return f16ToFloat(u16[i]); });
  case DType::BF16:
    return every([&](int64_t i) { return bf16ToFloat(u16[i]); });
  default:
    return true;
  }
}

/// "trc-run: 28 tensors train (28 tagged PARAMETER by the exporter); 2
/// frozen (2 tagged BUFFER by the exporter)": which of the model's float
/// initializers the step trains, and why (README "Bring your own model").
void reportParameters(const TrainingModelInfo &info) {
  // "N noun (n1 reason1, n2 reason2)"
  auto describe = [](const std::map<std::string, int64_t> &counts, const char *noun) {
    int64_t total = 0;
    std::string reasons;
    for (const auto &[reason, count] : counts) {
      total += count;
      reasons += (reasons.empty() ? "" : ", ") + std::to_string(count) + " " + reason;
    }
    return std::to_string(total) + noun + (reasons.empty() ? "" : " (" + reasons + ")");
  };
  std::fprintf(stderr, "trc-run: %s; %s\n",
               describe(info.trainingTensors, " tensors train").c_str(),
               describe(info.frozenTensors, " frozen").c_str());
  if (!info.respecializedInputs.empty())
    std::fprintf(stderr,
                 "trc-run: the export's static shapes were re-specialized to this run's sizes "
                 "(%s): %lld traced shape constants re-derived\n",
                 absl::StrJoin(info.respecializedInputs, ", ").c_str(),
                 static_cast<long long>(info.rederivedConstants));
}

/// One training run on this rank: the compiled step's session and the
/// state around it.
class TrainingJob {
public:
  TrainingJob(RunSettings &run, DistributedRun &dist, StepCompiler *compiler, bool fromArtifact,
              const std::function<void(const StepResult &)> &onStep)
      : run_(run), o_(run.options), dist_(dist), compiler_(compiler),
        fromArtifact_(fromArtifact), onStep_(onStep), profile_(run.options) {}
  ~TrainingJob() {
    (void)awaitCheckpoint(); // an error path left one being written
    setCollectiveBackend(nullptr); // before the backend goes
  }

  Status prepare();
  Status prepareLocal(int64_t &vocab);
  Status prepareShared(int64_t vocab);
  Status train();
  Status evaluateAlone();
  StatusOr<int64_t> loadParameters(const std::string &checkpoint);
  StatusOr<std::vector<NamedTensor>> gatherTrained();
  Status saveResults(int64_t steps);

private:
  /// An input every step feeds: the global batch and this rank's
  /// micro-batch rows of it (row data: from array `array`).
  struct FeedBuffer {
    std::string input;
    const NamedTensor *array = nullptr;
    // `micro`: this rank's rows of a micro-step; with context parallelism
    // (the step's input slot split over the context group) `micro` holds
    // this rank's part of each row's sequence.
    HostTensor batch, micro;
  };

  Status openData(int64_t vocab);
  Status openRows();
  Status checkRows();
  Status readBatch();
  Status getStep(int64_t &vocab);
  Status checkRespecialization(const TrainingModelInfo &info);
  Status openEvaluator(int64_t vocab);
  /// Evaluates the trained parameters (after `step` steps); with
  /// --predictions rank 0 writes the rows' outputs.
  StatusOr<std::optional<EvalResult>> evaluate(int64_t step);
  Status allocateStepBuffers();
  Status takeRows(FeedBuffer &feed, int64_t micro, const Slot *slot);
  Status zeroState();
  Status resume();
  StatusOr<StepResult> runStep(int64_t step);
  Status openPipeline(int64_t vocab);
  Status finishPreparing(int64_t vocab);
  Status openMetrics();
  Status openSharedEvaluator(int64_t vocab);
  // The step engine: the one program's or the pipeline's step, chosen when
  // the step's programs open; each fills `result` (loss, norm, update).
  Status runProgramStep(int64_t step, StepResult &result);
  Status runPipelineStep(int64_t step, StepResult &result);
  Status (TrainingJob::*engineStep_)(int64_t step, StepResult &result) = nullptr;
  StatusOr<bool> isNonFinite(double loss, double gradNorm);
  Status nonFiniteError(const StepResult &result, int64_t inARow);
  Status stopEveryRank(const Status &rootError);
  Status checkpoint(int64_t step, const StepResult &result,
                    const std::optional<EvalResult> &eval);
  struct PendingCheckpoint;
  std::unique_ptr<PendingCheckpoint> pending_; // rank 0: a checkpoint being written
  Status awaitCheckpoint();
  StatusOr<int> stopSignal();
  // The stop signal every rank agreed on with this step's loss check, until
  // stopSignal takes it (several ranks only).
  std::optional<int> agreedSignal_;
  Status stopOnSignal(int signal, int64_t step, const StepResult &result, bool checkpointed);

  RunSettings &run_;
  const TrainerOptions &o_;
  DistributedRun &dist_;
  StepCompiler *compiler_;
  const bool fromArtifact_; // a saved step, not an .onnx model
  const std::function<void(const StepResult &)> &onStep_;

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<DataLoader> data_; // token data
  // Row data (--data rows.npz): the arrays, their order, what they feed.
  std::unique_ptr<RowDataset> rows_;
  std::unique_ptr<RowLoader> rowLoader_;
  std::vector<RowFeed> rowFeeds_;
  TrainingModelInfo info_; // what compiling the step learned (rank 0)
  std::unique_ptr<Evaluator> evaluator_; // --eval-data (rank 0)
  std::string artifactDir_;
  TemporaryArtifact removeTemporary_;
  std::unique_ptr<Artifact> artifact_;
  std::unique_ptr<Session> session_;
  // Pipeline parallelism: the stage programs instead of one session.
  std::unique_ptr<PipelineExecutor> pipeline_;
  // The parameters and optimizer state, whichever of the two holds them.
  std::unique_ptr<ModelState> state_;
  bool lossScaling_ = false, dropout_ = false;
  // --keep-best (rank 0): the best evaluated checkpoint so far.
  std::optional<BestCheckpoint> best_;
  // --detect-anomaly: each site's code, OR-ed over the step's micro-steps.
  std::vector<float> anomalyCodes_;
  LossScaler scaler_;
  int64_t firstStep_ = 0, rankRows_ = 0, microRows_ = 0;
  // Where rank 0 logs each step (--metrics, --tensorboard); empty elsewhere.
  std::vector<std::unique_ptr<MetricsSink>> metrics_;
  Status logMetrics(const StepMetrics &m);
  // What each step feeds, allocated once: the batch inputs (run_.feeds'
  // order) and the scalar inputs.
  std::vector<FeedBuffer> feeds_;
  int64_t tokensPerRow_ = 0; // tokens_per_second's tokens in one row
  HostTensor lr_, stepCount_, keepAccum_, gradScale_, lossScale_, rngKey_;
  RunProfile profile_; // --profile: spans of the steps below (RunProfile.h)
};

Status TrainingJob::openData(int64_t vocab) {
  DataLoaderOptions options;
  options.batchSize = o_.batchSize;
  options.seqLen = o_.seqLen;
  options.shuffle = o_.shuffle;
  options.seed = o_.seed;
  options.vocabSize = vocab;
  StatusOr<std::unique_ptr<DataLoader>> opened = DataLoader::open(o_.data, options);
  if (!opened.ok())
    return opened.status();
  data_ = *std::move(opened);
  return Status::success();
}

/// Row data: the arrays, matched to the model's inputs before anything
/// compiles (so a bad file fails fast).
Status TrainingJob::openRows() {
  StatusOr<std::unique_ptr<RowDataset>> opened = RowDataset::open(o_.data);
  if (!opened.ok())
    return opened.status();
  rows_ = *std::move(opened);
  if (Status s = chooseRowFeeds(*compiler_, run_, *rows_, rowFeeds_); !s)
    return s;
  rowLoader_ = std::make_unique<RowLoader>(*rows_, o_.batchSize, o_.shuffle, o_.seed);
  return Status::success();
}

/// Rank 0 bounds the rows by what the compile learned (token ids, labels);
/// every rank learns the verdict.
Status TrainingJob::checkRows() {
  std::optional<int64_t> ignore;
  if (!run_.build.loss.empty())
    ignore = run_.build.ignoreIndex;
  Status verdict = dist_.isRoot() ? checkRowValues(*rows_, rowFeeds_, info_, ignore)
                                  : Status::success();
  return dist_.shareVerdict(verdict);
}

/// The next global batch into every feed's `batch`.
Status TrainingJob::readBatch() {
  if (rowLoader_) {
    std::vector<std::pair<const NamedTensor *, void *>> fills;
    for (FeedBuffer &feed : feeds_)
      fills.push_back({feed.array, feed.batch.data()});
    rowLoader_->next(fills);
    return Status::success();
  }
  if (Status s = data_->next(feeds_[0].batch.as<int64_t>(), feeds_[1].batch.as<int64_t>()); !s)
    return s;
  if (run_.targetsAreWindow) // the model shifts them itself
    std::copy_n(feeds_[0].batch.as<int64_t>(), feeds_[0].batch.numElements(),
                feeds_[1].batch.as<int64_t>());
  return Status::success();
}

/// --eval-data (rank 0): the eval rows (or token windows, ids below
/// `vocab`) and the forward program(s).
Status TrainingJob::openEvaluator(int64_t vocab) {
  StatusOr<std::vector<GraphInput>> inputs = compiler_->listGraphInputs(o_.model);
  if (!inputs.ok())
    return inputs.status();
  EvaluatorOptions options;
  options.model = o_.model;
  options.data = o_.evalData;
  // As many rows as a micro-step of one process: a forward of that size fits.
  options.batch = o_.batchSize / o_.gradAccum;
  if (!run_.build.loss.empty()) {
    options.lossTargets = abi::kLossTargets;
    options.ignoreIndex = run_.build.ignoreIndex;
  }
  if (!isRowData(o_.evalData)) // token data: its windows, fed as the training's
    options.tokens = TokenWindowOptions{
        o_.evalData, o_.seqLen, vocab, run_.inputsName,
        // an appended loss's targets are the array named "targets" (RowData.h)
        run_.build.loss.empty() ? run_.targetsName : "targets", run_.targetsAreWindow};
  StatusOr<std::unique_ptr<Evaluator>> opened =
      Evaluator::open(options, *inputs, info_, *compiler_, *backend_);
  if (!opened.ok())
    return opened.status();
  evaluator_ = *std::move(opened);
  std::fprintf(stderr, "trc-run: --eval-data %s: %lld %s, evaluated on rank 0\n",
               o_.evalData.c_str(), static_cast<long long>(evaluator_->rows()),
               options.tokens ? ("windows of " + std::to_string(o_.seqLen) + " tokens").c_str()
                              : "rows");
  return Status::success();
}

/// The trained parameters, gathered whole on rank 0 (collective: every rank
/// takes part, whichever engine holds them), into rank 0's eval programs,
/// then rank 0 evaluates.
StatusOr<std::optional<EvalResult>> TrainingJob::evaluate(int64_t step) {
  ProfileScope evalPhase("eval");
  StatusOr<std::vector<NamedTensor>> trained = state_->read(StateParts::Parameters);
  if (!trained.ok())
    return trained.status();
  for (const NamedTensor &t : *trained)
    if (evaluator_ && evaluator_->hasParameter(t.name))
      if (Status s = evaluator_->setParameter(t.name, t.tensor); !s)
        return s;
  if (!evaluator_)
    return std::optional<EvalResult>();
  std::vector<NamedTensor> outputs;
  const bool predicting = !o_.predictionsDir.empty();
  StatusOr<EvalResult> result = evaluator_->evaluate(predicting ? &outputs : nullptr);
  if (!result.ok())
    return result.status();
  if (predicting)
    if (Status s = writePredictions(o_.predictionsDir, step, outputs); !s)
      return s;
  return std::optional<EvalResult>(*result);
}

/// A static export compiled at other sizes than it was traced at computes
/// what it does at its traced sizes (RespecializeCheck.h), or an error.
Status TrainingJob::checkRespecialization(const TrainingModelInfo &info) {
  std::string skipped;
  Status s = checkRespecialized(*compiler_, *backend_, o_.model, stepShapes(run_, microRows_),
                                info, skipped);
  if (s)
    std::fprintf(stderr, "trc-run: %s\n",
                 skipped.empty() ? "checked: at the traced and at this run's sizes the "
                                   "forward computes the same on repeated rows"
                                 : ("not checked on repeated rows: " + skipped).c_str());
  return s;
}

/// The saved step's settings, or the .onnx model compiled on rank 0 and
/// shared with the others.
Status TrainingJob::getStep(int64_t &vocab) {
  if (fromArtifact_) {
    artifactDir_ = o_.model;
    return Status::success();
  }
  TrainingModelInfo info;
  // Rank 0 compiles; the other ranks receive the same artifact.
  Status compiled = Status::success();
  if (dist_.isRoot()) {
    run_.build.deviceMemory = backend_->memoryBytes();
    StatusOr<CompiledStep> step = compileStep(*compiler_, run_, microRows_, backend_->target());
    if (step.ok()) {
      artifactDir_ = step->artifactDir;
      info = step->info;
      reportParameters(info);
      if (!info.respecializedInputs.empty())
        compiled = checkRespecialization(info);
    } else {
      compiled = step.status();
    }
    info_ = info;
  }
  removeTemporary_.artifactDir = artifactDir_;
  if (dist_.size() > 1) {
    Status shared = dist_.shareArtifact(compiled.ok(), artifactDir_, info.vocabSize);
    removeTemporary_.artifactDir = artifactDir_;
    if (!compiled)
      return compiled;
    if (!shared)
      return shared;
  }
  if (!compiled)
    return compiled;
  vocab = info.vocabSize;
  return Status::success();
}

/// Every rank learns rank 0's job (jobSignature), prepares what needs no
/// other rank (backend, feeds, data) and compares its job with rank 0's; the
/// ranks agree on the outcome before their first collective, so that a
/// failure on one rank ends every rank with that rank's error.
Status TrainingJob::prepare() {
  std::vector<std::pair<std::string, std::string>> mine = jobSignature(o_);
  std::string text, rootText;
  for (const auto &[key, value] : mine)
    rootText += key + "\t" + value + "\n";
  text = rootText;
  if (dist_.size() > 1)
    if (Status s = dist_.broadcastText(rootText); !s)
      return s;
  // A rank's own failure (a missing file) says more than how its job differs.
  int64_t vocab = 0;
  Status local = prepareLocal(vocab);
  if (local.ok() && text != rootText)
    local = sameJobError(mine, rootText);
  if (Status s = dist_.agree(local); !s)
    return s;
  return prepareShared(vocab);
}

Status TrainingJob::prepareLocal(int64_t &vocab) {
  if (fromArtifact_ && !o_.exportOnnx.empty())
    return Status::error("--export-onnx writes the trained weights into the .onnx model they "
                         "came from: train MODEL.onnx, not the saved step " + o_.model);
  if (!fromArtifact_ && !compiler_)
    return Status::error(o_.model + ": this runtime-only build of trc-run cannot compile a "
                         "model; train a step saved on the build machine with trc-run "
                         "MODEL.onnx ... --save-artifact DIR");
  const bool rowData = isRowData(o_.data);
  if (fromArtifact_ && rowData)
    return Status::error("--data " + o_.data + ": the saved training step " + o_.model +
                         " trains on token data (--data FILE --seq-len T); train rows from "
                         "MODEL.onnx");
  if (fromArtifact_ && !o_.evalData.empty())
    return Status::error("--eval-data compiles the model's forward program: train MODEL.onnx, "
                         "not the saved step " + o_.model);
  // A saved step runs on its own target under --device auto.
  std::string device =
      fromArtifact_ && o_.device == "auto" ? Artifact::targetOf(o_.model) : o_.device;
  StatusOr<std::unique_ptr<Backend>> backend = createBackend(device);
  if (!backend.ok())
    return backend.status();
  backend_ = *std::move(backend);
  setCollectiveBackend(backend_.get());
  if (!fromArtifact_) // a saved step's precision is its own (adoptTrainingArtifact)
    resolvePrecision(run_, backend_->target());
  // NCCL moves device memory; the CPU backend's tensors are host memory.
  if (dist_.config().communicator == "nccl" && std::string(backend_->target()) != "cuda")
    return Status::error("--config communicator: nccl needs a CUDA device (this run uses " +
                         std::string(backend_->target()) + "); use mpi for CPU ranks");
  if (dist_.isRoot() && dist_.dataParallel())
    std::fprintf(stderr, "trc-run: %d rank%s, %s, %d thread%s per rank\n", dist_.size(),
                 dist_.size() == 1 ? "" : "s", dist_.config().describe().c_str(), threadCount(),
                 threadCount() == 1 ? "" : "s");
  if (fromArtifact_) {
    if (Status s = adoptTrainingArtifact(o_.model, dist_.size(), run_.parallelRecord, run_, vocab);
        !s)
      return s;
    setTokenFeeds(run_);
  } else if (rowData) {
    if (Status s = openRows(); !s)
      return s;
  } else if (Status s = chooseFeeds(*compiler_, run_, dist_.isRoot()); !s) {
    return s;
  }
  // Token data is opened once before compiling so that a bad data file
  // fails fast, and again below with the model's vocabulary as the bound
  // on token ids.
  if (!rowData)
    if (Status s = openData(0); !s)
      return s;
  // Data rank d of D takes rows [d*B/D, (d+1)*B/D) of each global batch
  // (the ranks of a tensor group take the same rows); each micro-step
  // takes 1/grad-accum of those.
  rankRows_ = o_.batchSize / dist_.dataDegree();
  microRows_ = microbatchRows(o_, dist_);
  return Status::success();
}

/// What follows the agreement: the step compiled on rank 0 and shared, the
/// data's vocabulary bound, the session.
Status TrainingJob::prepareShared(int64_t vocab) {
  const bool rowData = isRowData(o_.data);
  if (Status s = getStep(vocab); !s)
    return s;
  if (rowData) {
    if (Status s = checkRows(); !s)
      return s;
  } else if (vocab > 0) {
    if (Status s = openData(vocab); !s)
      return s;
  }
  if (isPipelineArtifact(artifactDir_))
    return openPipeline(vocab);
  StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::load(artifactDir_, backend_->target());
  if (!artifact.ok())
    return artifact.status();
  artifact_ = *std::move(artifact);
  if (Status s = checkSplitDegrees(artifact_->manifest(), run_.feeds, dist_.tensorDegree(),
                                   dist_.contextDegree(),
                                   fromArtifact_ ? "in " + o_.model : "compiled from " + o_.model);
      !s)
    return s;
  if (fromArtifact_)
    if (Status s = checkFeedShapes(artifact_->manifest(), run_.feeds, microRows_,
                                   o_.model + "/" + kTrainingInfoFile);
        !s)
      return s;
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(*artifact_, *backend_, dist_.shardIndex(), dist_.tensorIndex());
  if (!session.ok())
    return session.status();
  session_ = *std::move(session);
  state_ = sessionState(*session_, dist_);
  engineStep_ = &TrainingJob::runProgramStep;
  if (Status s = dist_.broadcastParameters(*session_); !s)
    return s;
  const Manifest &manifest = artifact_->manifest();
  lossScaling_ = manifest.find(SlotKind::Input, abi::kLossScale) != nullptr;
  // A step compiled with --detect-anomaly reports where NaN/inf began.
  anomalyCodes_.assign(manifest.anomalySites.size(), 0.0f);
  if (o_.detectAnomaly && anomalyCodes_.empty())
    return Status::error("option '--detect-anomaly': the training step in " + o_.model +
                         " was saved without it (save it again with --detect-anomaly)");
  dropout_ = manifest.find(SlotKind::Input, abi::kRngKey) != nullptr;
  scaler_.scale = run_.initialLossScale;
  return finishPreparing(vocab);
}

/// What both engines do last: the step's buffers, the state (the one
/// program's zeroed first; the pipeline's stages start theirs zeroed), the
/// resumed checkpoint, the evaluator and the metrics.
Status TrainingJob::finishPreparing(int64_t vocab) {
  if (Status s = allocateStepBuffers(); !s)
    return s;
  if (session_)
    if (Status s = zeroState(); !s)
      return s;
  if (o_.resume)
    if (Status s = resume(); !s)
      return s;
  if (Status s = openSharedEvaluator(vocab); !s)
    return s;
  return openMetrics();
}

/// --eval-data's programs on rank 0; every rank learns whether they opened.
Status TrainingJob::openSharedEvaluator(int64_t vocab) {
  if (o_.evalData.empty())
    return Status::success();
  return dist_.shareVerdict(dist_.isRoot() ? openEvaluator(vocab) : Status::success());
}

/// --metrics and --tensorboard, written by rank 0 (continued after the
/// resumed step on --resume); every rank learns whether they opened (a bad
/// file on --resume used to leave the others waiting in their first step).
Status TrainingJob::openMetrics() {
  if (o_.metricsPath.empty() && o_.tensorboardDir.empty())
    return Status::success();
  Status opened = Status::success();
  auto add = [&](auto sink) {
    if (!sink.ok())
      opened = sink.status();
    else
      metrics_.push_back(*std::move(sink));
  };
  if (dist_.isRoot() && !o_.metricsPath.empty())
    add(o_.resume ? MetricsWriter::resume(o_.metricsPath, firstStep_)
                  : MetricsWriter::create(o_.metricsPath));
  if (dist_.isRoot() && opened.ok() && !o_.tensorboardDir.empty())
    add(o_.resume ? TensorBoardWriter::resume(o_.tensorboardDir, firstStep_)
                  : TensorBoardWriter::create(o_.tensorboardDir));
  return dist_.shareVerdict(opened);
}

Status TrainingJob::logMetrics(const StepMetrics &m) {
  for (const std::unique_ptr<MetricsSink> &sink : metrics_)
    if (Status s = sink->write(m); !s)
      return s;
  return Status::success();
}

/// The stage programs this rank holds and the schedule it runs.
Status TrainingJob::openPipeline(int64_t vocab) {
  const ParallelPlan &plan = dist_.config();
  StatusOr<ScheduleKind> kind = parseScheduleKind(plan.pipelineSchedule);
  if (!kind.ok())
    return Status(kind.status()).withPrefix("--config: ");
  ScheduleShape shape;
  shape.ranks = dist_.pipelineDegree();
  shape.microbatches = plan.microbatches;
  shape.chunks = plan.virtualStages;
  shape.activeMicrobatches = plan.activeMicrobatches;
  StatusOr<PipelineSchedule> schedule = makeSchedule(*kind, shape);
  if (!schedule.ok())
    return Status(schedule.status()).withPrefix("--config: ");
  if (Status s = checkSchedule(*schedule); !s)
    return s;
  StatusOr<std::unique_ptr<PipelineExecutor>> opened =
      PipelineExecutor::open(artifactDir_, *backend_, dist_.pipelineGroup(), dist_.dataGroup(),
                             dist_.dataContextGroup(), dist_.replicaGroup(), dist_.shardIndex(), dist_.tensorIndex(), *std::move(schedule),
                             logicalSlots(dist_));
  if (!opened.ok())
    return opened.status();
  pipeline_ = *std::move(opened);
  if (plan.offloadActivations)
    pipeline_->offloadStashes(plan.activationLoadingHorizon);
  state_ = pipelineState(*pipeline_);
  engineStep_ = &TrainingJob::runPipelineStep;
  // The last stage scales the loss; every rank scales its gradients back
  // and takes part in the scaler's decision.
  lossScaling_ = run_.build.precision == "fp16";
  scaler_.scale = run_.initialLossScale;
  if (dist_.isRoot())
    std::fprintf(stderr, "trc-run: %d pipeline stage%s, %s schedule, %d microbatches of %lld rows\n",
                 dist_.pipelineDegree() * plan.virtualStages,
                 dist_.pipelineDegree() * plan.virtualStages == 1 ? "" : "s",
                 plan.pipelineSchedule.c_str(), plan.microbatches,
                 static_cast<long long>(microRows_));
  return finishPreparing(vocab);
}

/// One optimizer step through the pipeline: data rank d's microbatch m
/// takes rows [d*B/D + m*B/(D*M), ...) of the global batch (the loss and
/// gradients are the mean over microbatches and data ranks, as one device
/// computes over the batch). A non-finite step's update is discarded.
Status TrainingJob::runPipelineStep(int64_t step, StepResult &out) {
  auto feed = [&](Session &session, int microbatch) -> Status {
    for (FeedBuffer &f : feeds_) {
      const Slot *slot = session.manifest().find(SlotKind::Input, f.input);
      if (!slot)
        continue;
      if (Status s = takeRows(f, microbatch, slot); !s)
        return s;
      if (Status s = session.setInput(f.input, f.micro); !s)
        return s.withPrefix("--data " + o_.data + ": step " + std::to_string(step + 1) + ": ");
    }
    return Status::success();
  };
  Status agreed = Status::success();
  auto decide = [&](double loss, double gradNorm) {
    StatusOr<bool> bad = isNonFinite(loss, gradNorm);
    if (!bad.ok())
      agreed = bad.status();
    out.nonFinite = bad.ok() && *bad;
    // An overflowed f16 step is skipped (the same answer on every rank:
    // the norm is global).
    return bad.ok() && !*bad && (!lossScaling_ || scaler_.update(gradNorm));
  };
  StatusOr<PipelineStepResult> result =
      pipeline_->runStep(feed, float(out.learningRate), float(step + 1), decide,
                         lossScaling_ ? float(scaler_.scale) : 1.0f);
  if (!result.ok())
    return result.status();
  if (!agreed)
    return agreed;
  out.loss = result->loss;
  out.gradNorm = result->gradNorm;
  out.applied = result->applied;
  // The schedule's activation memory, per pipeline rank, once.
  if (step + 1 == o_.steps && dist_.dataIndex() == 0) {
    std::string host = dist_.config().offloadActivations
                           ? " on the device, " + std::to_string(result->peakHostStashBytes) +
                                 " offloaded to the host"
                           : "";
    std::fprintf(stderr, "trc-run: pipeline rank %d: peak stashed activations %llu bytes%s\n",
                 dist_.pipelineIndex(), static_cast<unsigned long long>(result->peakStashBytes),
                 host.c_str());
  }
  return Status::success();
}

/// Optimizer state starts at zero; a resumed run loads it all back.
Status TrainingJob::zeroState() {
  for (const Slot &slot : session_->manifest().slots)
    if (slot.kind == SlotKind::Input && abi::isStateSlot(slot.name)) {
      HostTensor zeros;
      if (Status s = zeros.allocate(slot.dtype, slot.shape); !s)
        return s;
      if (Status s = session_->setInput(slot.name, zeros); !s)
        return s;
    }
  return Status::success();
}

Status TrainingJob::resume() {
  StatusOr<std::string> latest = latestCheckpoint(o_.checkpointDir);
  if (!latest.ok())
    return latest.status();
  const std::string &folder = *latest;
  StatusOr<CheckpointContents> read = readCheckpoint(folder);
  if (!read.ok())
    return read.status();
  CheckpointState &state = read->state;
  // The optimizer record leaves accumulation to grad_accum (checkpoints
  // written before 2026-11-28 had it in both): compared without it.
  if (auto optimizer = state.config.find("optimizer"); optimizer != state.config.end())
    optimizer->second = withoutAccumulation(optimizer->second);
  const std::vector<NamedTensor> &tensors = read->tensors;
  std::map<std::string, std::string> config = checkpointConfig(run_);
  // A run extended with more --steps: a schedule total that followed
  // --steps follows the new one from here on (and says so).
  auto savedSchedule = state.config.find("lr_schedule");
  if (savedSchedule != state.config.end() &&
      differOnlyInTotal(savedSchedule->second, config["lr_schedule"]) &&
      o_.lrSchedule.find("total=") == std::string::npos && o_.steps > state.step) {
    if (dist_.isRoot())
      std::fprintf(stderr,
                   "trc-run: --resume at step %lld: the run is extended to %lld steps; the "
                   "learning-rate schedule's total follows --steps: steps %lld-%lld follow "
                   "'%s' (the checkpoint's run planned '%s')\n",
                   static_cast<long long>(state.step), static_cast<long long>(o_.steps),
                   static_cast<long long>(state.step + 1), static_cast<long long>(o_.steps),
                   config["lr_schedule"].c_str(), savedSchedule->second.c_str());
    config["lr_schedule"] = savedSchedule->second;
  }
  // Fewer data ranks after a relaunch accumulate more microbatches
  // (trc-launch): the global batch, hence the run, is the same.
  auto savedAccum = state.config.find("grad_accum");
  if (savedAccum != state.config.end() && savedAccum->second != config["grad_accum"] &&
      state.config.count("batch_size") && state.config.at("batch_size") == config["batch_size"]) {
    if (dist_.isRoot())
      std::fprintf(stderr,
                   "trc-run: --resume at step %lld: --grad-accum %s (the checkpoint's run "
                   "accumulated %s); the global batch, %s rows, is the same\n",
                   static_cast<long long>(state.step), config["grad_accum"].c_str(),
                   savedAccum->second.c_str(), config["batch_size"].c_str());
    config["grad_accum"] = savedAccum->second;
  }
  if (Status s = checkCheckpointConfig(folder, state, config, checkpointConfigFlags()); !s)
    return s;
  FindTensor find = tensorFinder(tensors);
  if (Status s = state_->write(find, StateParts::ParametersAndOptimizer); !s)
    return s.withPrefix(folder + ": ");
  if (lossScaling_) {
    const HostTensor *scale = find(LossScaler::kScaleTensor);
    const HostTensor *good = find(LossScaler::kGoodStepsTensor);
    if (!scale || !good || scale->dtype != DType::F64 || good->dtype != DType::I64 ||
        scale->numElements() != 1 || good->numElements() != 1)
      return Status::error(folder + ": the checkpoint has no valid loss-scaler state ('" +
                           LossScaler::kScaleTensor + "', '" + LossScaler::kGoodStepsTensor +
                           "')");
    scaler_.scale = *static_cast<const double *>(scale->data());
    scaler_.goodSteps = *static_cast<const int64_t *>(good->data());
  }
  // The position comes from the checkpoint: both are named.
  if (Status s = rowLoader_ ? rowLoader_->restore(state.data) : data_->restore(state.data); !s)
    return s.withPrefix(folder + ": ");
  firstStep_ = state.step;
  if (!o_.keepBest.empty()) {
    StatusOr<std::optional<BestCheckpoint>> best = readBestCheckpoint(o_.checkpointDir);
    if (!best.ok())
      return best.status();
    if (*best && (*best)->metric != o_.keepBest)
      return Status::error("--keep-best " + o_.keepBest + ": " + o_.checkpointDir +
                           "/best ranks checkpoints by " + (*best)->metric);
    best_ = *best;
  }
  return Status::success();
}

/// The step's host buffers: each feed's global batch and micro-step rows,
/// and the step's scalars.
Status TrainingJob::allocateStepBuffers() {
  feeds_.clear();
  tokensPerRow_ = 1;
  for (const StepFeed &feed : run_.feeds) {
    FeedBuffer buffer;
    buffer.input = feed.input;
    for (const RowFeed &row : rowFeeds_)
      if (row.input == feed.input)
        buffer.array = row.array;
    std::vector<int64_t> shape{o_.batchSize};
    shape.insert(shape.end(), feed.rowShape.begin(), feed.rowShape.end());
    if (Status s = buffer.batch.allocate(feed.dtype, shape); !s)
      return s;
    shape[0] = microRows_;
    if (Status s = buffer.micro.allocate(feed.dtype, shape); !s)
      return s;
    if (feed.input == run_.inputsName) // the token ids: a row's elements are its tokens
      tokensPerRow_ = buffer.micro.numElements() / microRows_;
    feeds_.push_back(std::move(buffer));
  }
  for (HostTensor *scalar : {&lr_, &stepCount_, &keepAccum_, &gradScale_, &lossScale_})
    if (Status s = scalar->allocate(DType::F32, {}); !s)
      return s;
  return rngKey_.allocate(DType::I64, {});
}

/// Copies this data rank's micro-step (or microbatch) `micro` rows of
/// `feed`'s global batch into its `micro` buffer: with context parallelism
/// (`slot`, the step's input, split over the context group) this rank's
/// part of each row.
Status TrainingJob::takeRows(FeedBuffer &feed, int64_t micro, const Slot *slot) {
  size_t rowBytes = feed.batch.byteSize() / size_t(o_.batchSize);
  size_t first = size_t(dist_.dataIndex() * rankRows_ + micro * microRows_) * rowBytes;
  const char *rows = static_cast<const char *>(feed.batch.data()) + first;
  std::vector<int64_t> shape = feed.batch.shape;
  shape[0] = microRows_;
  if (!slot || !slot->isSplit()) {
    std::memcpy(feed.micro.data(), rows, feed.micro.byteSize());
    return Status::success();
  }
  if (slot->split.degree != dist_.contextDegree())
    return Status::error("input '" + percentEncode(slot->name) + "' is split over " +
                         std::to_string(slot->split.degree) + " ranks, the context group has " +
                         std::to_string(dist_.contextDegree()));
  if (feed.micro.shape == shape) // the first split feed: the part's shape
    if (Status s = feed.micro.allocate(feed.batch.dtype, splitPartShape(shape, slot->split)); !s)
      return s;
  takeSplitPart(rows, feed.micro.data(), shape, dtypeSize(feed.batch.dtype), slot->split,
                dist_.contextIndex());
  return Status::success();
}

/// One optimizer step: the global batch read, the engine's step, its rates.
StatusOr<StepResult> TrainingJob::runStep(int64_t step) {
  auto start = std::chrono::steady_clock::now();
  ProfileScope dataPhase("data");
  if (Status s = readBatch(); !s)
    return s;
  dataPhase.end();
  StepResult result;
  result.step = step + 1;
  result.learningRate = run_.schedule.at(step);
  if (Status s = (this->*engineStep_)(step, result); !s)
    return s;
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  result.stepTimeMs = ms;
  result.tokensPerSecond = double(o_.batchSize * tokensPerRow_) / (ms / 1000.0);
  result.samplesPerSecond = double(o_.batchSize) / (ms / 1000.0);
  return result;
}

/// One optimizer step of the one program: gradAccum micro-steps of this
/// rank's rows, then the update (skipped on an fp16 overflow).
Status TrainingJob::runProgramStep(int64_t step, StepResult &result) {
  const int64_t accum = o_.gradAccum;
  auto setScalar = [&](HostTensor &t, double v) { *static_cast<float *>(t.data()) = float(v); };
  setScalar(lr_, result.learningRate);
  setScalar(stepCount_, double(step + 1));
  setScalar(lossScale_, scaler_.scale);
  setScalar(gradScale_, 1.0 / (double(accum) * (lossScaling_ ? scaler_.scale : 1.0)));
  double lossSum = 0, gradNorm = 0;
  bool applied = true, nonFinite = false;
  std::fill(anomalyCodes_.begin(), anomalyCodes_.end(), 0.0f);
  for (int64_t micro = 0; micro < accum; ++micro) {
    bool last = micro + 1 == accum;
    ProfileScope feedPhase("feed");
    std::vector<std::pair<std::string, HostTensor *>> feeds;
    for (FeedBuffer &f : feeds_) {
      if (Status s = takeRows(f, micro, session_->manifest().find(SlotKind::Input, f.input)); !s)
        return s;
      feeds.push_back({f.input, &f.micro});
    }
    setScalar(keepAccum_, last ? 0.0 : 1.0);
    feeds.push_back({abi::kLearningRate, &lr_});
    feeds.push_back({abi::kStepCount, &stepCount_});
    if (accum > 1)
      feeds.push_back({abi::kKeepAccum, &keepAccum_});
    if (accum > 1 || lossScaling_)
      feeds.push_back({abi::kGradScale, &gradScale_});
    if (lossScaling_)
      feeds.push_back({abi::kLossScale, &lossScale_});
    if (dropout_) { // a pure function of (seed, micro-step): resumes exactly
      *static_cast<int64_t *>(rngKey_.data()) =
          static_cast<int64_t>(dropoutKey(o_.seed, uint64_t(step * accum + micro)));
      feeds.push_back({abi::kRngKey, &rngKey_});
    }
    for (size_t i = 0; i < feeds.size(); ++i)
      if (Status s = session_->setInput(feeds[i].first, *feeds[i].second); !s)
        // The data's feeds (an index out of its table's rows, a label out
        // of the classes: the manifest's bound and labels records).
        return i < feeds_.size() ? s.withPrefix("--data " + o_.data + ": step " +
                                                std::to_string(step + 1) + ": ")
                                 : s;
    feedPhase.end();
    ProfileScope computePhase("compute"); // Session::run adds the program's span
    if (Status s = session_->run(); !s)
      return s;
    computePhase.end();
    ProfileScope readbackPhase("readback");
    StatusOr<HostTensor> loss = session_->getOutput(abi::kLossOutput);
    if (!loss.ok())
      return loss.status();
    lossSum += *static_cast<const float *>(loss->data());
    if (!anomalyCodes_.empty()) {
      StatusOr<HostTensor> codes = session_->getOutput(abi::kAnomalyOutput);
      if (!codes.ok())
        return codes.status();
      const float *code = static_cast<const float *>(codes->data());
      for (size_t i = 0; i < anomalyCodes_.size(); ++i)
        anomalyCodes_[i] = float(int(anomalyCodes_[i]) | int(code[i]));
    }
    StatusOr<HostTensor> norm =
        last ? session_->getOutput(abi::kGradNormOutput) : StatusOr<HostTensor>(HostTensor());
    if (!norm.ok())
      return norm.status();
    readbackPhase.end();
    ProfileScope updatePhase("update");
    if (!last) { // the running gradient sum moves, and running statistics
      // (each micro-step's forward updates them, as each forward does in
      // PyTorch); trainable parameters and optimizer state wait for the step.
      const Manifest &m = session_->manifest();
      auto moves = [&](std::string_view slot) {
        const Slot *param = m.find(SlotKind::Param, slot);
        return abi::isAccumulatorSlot(slot) || (param && !param->trainable);
      };
      if (Status s = session_->applyUpdates(moves); !s)
        return s;
      continue;
    }
    gradNorm = *static_cast<const float *>(norm->data());
    // A non-finite step's update is discarded (train() stops or goes on);
    // an overflowed f16 step is skipped (its sums still reset).
    StatusOr<bool> bad = isNonFinite(lossSum / double(accum), gradNorm);
    if (!bad.ok())
      return bad.status();
    nonFinite = *bad;
    applied = !nonFinite && (!lossScaling_ || scaler_.update(gradNorm));
    if (Status s = applied ? session_->applyUpdates()
                           : session_->applyUpdates(abi::isAccumulatorSlot);
        !s)
      return s;
  }
  result.loss = lossSum / double(accum);
  result.gradNorm = gradNorm;
  result.applied = applied;
  result.nonFinite = nonFinite;
  if (nonFinite && !anomalyCodes_.empty()) {
    const auto &sites = artifact_->manifest().anomalySites;
    result.anomaly = describeAnomalyOrigin(sites, findAnomalyOrigin(sites, anomalyCodes_));
  }
  return Status::success();
}

/// Whether a step with this (global) loss and gradient norm is non-finite:
/// either is inf or NaN, except that under fp16 loss scaling a non-finite
/// norm with a finite loss is an overflow, the loss scaler's to skip. Every
/// rank gets the same answer (the values are global already; with several
/// ranks they also agree over the world, so that none goes on alone).
StatusOr<bool> TrainingJob::isNonFinite(double loss, double gradNorm) {
  int64_t bad = !std::isfinite(loss) || (!lossScaling_ && !std::isfinite(gradNorm)) ? 1 : 0;
  if (dist_.size() == 1)
    return bad != 0;
  // The stop signals ride the same collective (stopSignal takes the answer
  // after the step), one all-reduce a step instead of two.
  int64_t verdict[2] = {bad, StopSignals::pending()};
  if (Status s = dist_.world().allReduce(verdict, verdict, 2, DType::I64, ReduceOp::Max); !s)
    return s;
  agreedSignal_ = int(verdict[1]);
  return verdict[0] != 0;
}

/// Ends the run on every rank (all call it) with rank 0's `rootError` as
/// the job's one error line. Alone: that error. With several ranks rank 0
/// prints it before any rank leaves (mpirun ends the job when the first
/// rank exits non-zero) and every rank returns reported().
Status TrainingJob::stopEveryRank(const Status &rootError) {
  if (dist_.size() == 1)
    return rootError;
  if (dist_.isRoot()) {
    std::fprintf(stderr, "error: %s\n", rootError.message().c_str());
    std::fflush(stderr);
  }
  (void)dist_.barrier();
  return Status::reported();
}

/// The error that stops a run at a non-finite step (every rank calls it):
/// rank 0's names the step, what was not finite and the last good
/// checkpoint.
Status TrainingJob::nonFiniteError(const StepResult &result, int64_t inARow) {
  if (!dist_.isRoot())
    return stopEveryRank(Status::reported());
  std::string message = "step " + std::to_string(result.step) + ": " + describeNonFinite(result);
  if (o_.onNonFinite == "skip")
    message += ", the " + std::to_string(inARow) + "th non-finite step in a row; stopping "
               "(--on-nonfinite skip skips at most " + std::to_string(kMaxNonFiniteSkips) +
               " in a row)";
  else
    message += "; stopping (--on-nonfinite skip skips such steps)";
  if (!o_.checkpointDir.empty()) {
    StatusOr<std::string> latest = latestCheckpoint(o_.checkpointDir);
    message += latest.ok() ? "; the last good checkpoint is " + *latest
                           : "; no checkpoint was written";
  }
  return stopEveryRank(Status::error(message));
}

/// Full tensors of every state slot (collective), written by rank 0.
/// A checkpoint's copies of the state, written by a background thread on
/// rank 0 while training goes on (torchtitan's asynchronous checkpointing):
/// saveCheckpoint's atomicity is unchanged (`latest` moves only once the
/// folder is whole), so a kill during the write resumes from the one before.
struct TrainingJob::PendingCheckpoint {
  std::vector<NamedTensor> staged; // the state's whole tensors
  double scale = 0;                // fp16 loss scaling
  int64_t goodSteps = 0;
  CheckpointState state;
  CheckpointWriteOptions options;
  std::optional<BestCheckpoint> best; // set when this is the new best
  std::thread writer;
  Status status;
  std::vector<std::string> warnings;
};

/// Waits for the checkpoint in the background, if any: its error, if it
/// failed; a new best is recorded.
Status TrainingJob::awaitCheckpoint() {
  if (!pending_)
    return Status::success();
  std::unique_ptr<PendingCheckpoint> done = std::move(pending_);
  {
    ProfileScope waiting("checkpoint: wait for the previous write");
    done->writer.join();
  }
  for (const std::string &warning : done->warnings)
    std::fprintf(stderr, "warning: --keep-last: %s\n", warning.c_str());
  if (done->status.ok() && done->best)
    best_ = done->best;
  return done->status;
}

Status TrainingJob::checkpoint(int64_t step, const StepResult &result,
                               const std::optional<EvalResult> &eval) {
  auto job = std::make_unique<PendingCheckpoint>();
  // Whole tensors on rank 0 (every rank helps gather them).
  StatusOr<std::vector<NamedTensor>> gathered = state_->read(StateParts::ParametersAndOptimizer);
  if (!gathered.ok())
    return gathered.status();
  job->staged = *std::move(gathered);
  // Views of the copies (the job owns them until its write ends).
  std::vector<SafetensorsView> views;
  for (const NamedTensor &t : job->staged)
    views.push_back({t.name, t.tensor.dtype, t.tensor.shape, t.tensor.data()});
  // A state that is not finite (an update that overflowed) is not
  // checkpointed: `latest` stays on the last good one.
  Status finite = Status::success();
  if (dist_.isRoot())
    for (const SafetensorsView &v : views) {
      int64_t n = 1;
      for (int64_t d : v.shape)
        n *= d;
      if (!allFinite(v.dtype, v.data, n)) {
        finite = Status::error("step " + std::to_string(step + 1) + ": '" + percentEncode(v.name) +
                               "' holds inf or NaN after the update; not checkpointed, stopping");
        break;
      }
    }
  if (Status s = dist_.shareVerdict(finite); !s)
    return stopEveryRank(s);
  if (!dist_.isRoot()) // only rank 0 writes; every rank can resume from it
    return Status::success();
  // One write at a time: the previous one ends (and says how) first.
  if (Status s = awaitCheckpoint(); !s)
    return s;
  job->scale = scaler_.scale;
  job->goodSteps = scaler_.goodSteps;
  if (lossScaling_) {
    views.push_back({LossScaler::kScaleTensor, DType::F64, {1}, &job->scale});
    views.push_back({LossScaler::kGoodStepsTensor, DType::I64, {1}, &job->goodSteps});
  }
  CheckpointState &state = job->state;
  state.step = step + 1;
  state.data = rowLoader_ ? rowLoader_->state() : data_->state();
  state.seed = o_.seed;
  state.config = checkpointConfig(run_);
  // Recorded, never compared on resume: checkpoints hold logical tensors,
  // so any plan resumes any other plan's checkpoint.
  state.config["parallel_plan"] = dist_.config().describe();
  // The step's numbers, for whoever picks a checkpoint later.
  state.metrics = {{"loss", result.loss},
                   {"learning_rate", result.learningRate},
                   {"grad_norm", result.gradNorm}};
  if (eval)
    for (const EvalMetric &metric : kEvalMetrics)
      if (std::optional<double> v = evalMetricValue(*eval, metric))
        state.metrics.emplace_back(metric.name, *v);
  job->options.keepLast = o_.keepLast;
  // --keep-best: this step's evaluation against the best so far.
  std::optional<double> value;
  const EvalMetric *keepBest = findEvalMetric(o_.keepBest); // validated: null when not given
  if (keepBest && eval) {
    value = evalMetricValue(*eval, *keepBest);
    if (!value)
      return Status::error("--keep-best " + o_.keepBest + ": the evaluation of " + o_.evalData +
                           " has no " + o_.keepBest);
  }
  const bool higherIsBetter = keepBest && keepBest->higherIsBetter;
  const bool better = value && std::isfinite(*value) &&
                      (!best_ || (higherIsBetter ? *value > best_->value : *value < best_->value));
  job->options.keepStep = better ? step + 1 : best_ ? best_->step : 0;
  if (better)
    job->best = BestCheckpoint{step + 1, o_.keepBest, *value};
  PendingCheckpoint *writing = job.get();
  const std::string dir = o_.checkpointDir;
  writing->writer = std::thread([writing, dir, views = std::move(views)] {
    CheckpointSaveResult saved;
    writing->status = saveCheckpoint(dir, writing->state, views, writing->options, &saved);
    writing->warnings = std::move(saved.warnings);
    if (writing->status.ok() && writing->best)
      writing->status = writeBestCheckpoint(dir, *writing->best);
  });
  pending_ = std::move(job);
  if (o_.checkpointSync)
    return awaitCheckpoint();
  return Status::success();
}

/// The stop signal any rank caught (StopSignals), agreed on by every rank
/// (collective with several), or 0.
StatusOr<int> TrainingJob::stopSignal() {
  if (std::optional<int> agreed = std::exchange(agreedSignal_, std::nullopt))
    return *agreed; // agreed with the step's loss check (isNonFinite)
  int64_t caught = StopSignals::pending();
  if (dist_.size() > 1)
    if (Status s = dist_.world().allReduce(&caught, &caught, 1, DType::I64, ReduceOp::Max); !s)
      return s;
  return int(caught);
}

/// Ends the run after step `step` (0-based) because of `signal`: its state
/// checkpointed (unless it just was), waited for, and one error line that
/// says how to continue (every rank calls it).
Status TrainingJob::stopOnSignal(int signal, int64_t step, const StepResult &result,
                                 bool checkpointed) {
  std::string what = "stopped by " + StopSignals::name(signal) + " after step " +
                     std::to_string(step + 1) + " of " + std::to_string(o_.steps);
  if (o_.checkpointDir.empty())
    return stopEveryRank(Status::error(what + "; nothing saved (no --checkpoint-dir)"));
  if (!checkpointed)
    if (Status s = checkpoint(step, result, std::nullopt); !s)
      return s;
  if (Status s = awaitCheckpoint(); !s)
    return s;
  return stopEveryRank(Status::error(what + ": checkpoint " + o_.checkpointDir + "/step-" +
                                     std::to_string(step + 1) +
                                     " written; continue with --resume"));
}

Status TrainingJob::train() {
  const bool root = dist_.isRoot();
  // SIGTERM, SIGINT and SIGUSR1 stop the run between steps (stopSignal).
  StopSignals signals(o_.signalGrace);
  ProgressBar progress(o_.steps, firstStep_, 2, false, o_.logEvery);
  if (Status s = profile_.begin(dist_, firstStep_, backend_->pciBusId()); !s)
    return s;
  // The run's summary (Hugging Face Trainer's names): the mean loss and
  // the time of the steps, evaluation excluded.
  double lossSum = 0, runSeconds = 0;
  int64_t finiteSteps = 0, nonFiniteInARow = 0;
  std::optional<EvalResult> lastEval;
  for (int64_t step = firstStep_; step < o_.steps; ++step) {
    profile_.beforeStep(step);
    ProfileScope stepSpan("step", profile::kStep);
    stepSpan.arg("step", step + 1);
    StatusOr<StepResult> ran = runStep(step);
    if (!ran.ok())
      return ran.status();
    StepResult &result = *ran;
    // A non-finite step (its update discarded) stops the run, or with
    // --on-nonfinite skip is skipped, up to kMaxNonFiniteSkips in a row.
    nonFiniteInARow = result.nonFinite ? nonFiniteInARow + 1 : 0;
    const bool stop = result.nonFinite &&
                      (o_.onNonFinite != "skip" || nonFiniteInARow >= kMaxNonFiniteSkips);
    if (!result.nonFinite) {
      lossSum += result.loss;
      ++finiteSteps;
    }
    runSeconds += result.stepTimeMs / 1000.0;
    bool last = step + 1 == o_.steps;
    // --eval-data: every --eval-every steps and after the last one.
    if (!stop && !o_.evalData.empty() &&
        (last || (o_.evalEvery && (step + 1) % o_.evalEvery == 0))) {
      StatusOr<std::optional<EvalResult>> evaluated = evaluate(result.step);
      if (!evaluated.ok())
        return evaluated.status();
      if (const std::optional<EvalResult> &e = *evaluated) {
        result.evalLoss = e->loss;
        result.evalAccuracy = e->accuracy;
        result.evalPerplexity = e->perplexity;
        lastEval = e;
      }
    }
    if (!metrics_.empty()) {
      StepMetrics m;
      m.step = result.step;
      m.loss = MetricValue(result.loss);
      m.learningRate = MetricValue(result.learningRate);
      m.gradNorm = MetricValue(result.gradNorm);
      m.tokensPerSecond = MetricValue(result.tokensPerSecond);
      m.stepTimeMs = MetricValue(result.stepTimeMs);
      m.time = std::chrono::duration<double>(
                   std::chrono::system_clock::now().time_since_epoch()).count();
      if (rows_)
        m.extra.push_back({"samples_per_second", MetricValue(result.samplesPerSecond)});
      if (lossScaling_)
        m.extra.push_back({"loss_scale", MetricValue(scaler_.scale)});
      if (lossScaling_ || o_.onNonFinite == "skip")
        m.extra.push_back({"skipped", MetricValue(result.applied ? 0.0 : 1.0)});
      m.extra.push_back({"peak_rss_mb", MetricValue(peakResidentMegabytes())});
      if (result.evalLoss)
        addEvalMetrics(m, *lastEval);
      if (Status s = logMetrics(m); !s)
        return s;
    }
    if (onStep_)
      onStep_(result);
    if (root)
      progress.update(step + 1, result.loss, result.tokensPerSecond,
                      result.evalLoss ? describeEval(*lastEval) : "");
    if (stop) {
      if (root)
        progress.clear();
      // The last good checkpoint the error names is whole on disk.
      if (Status s = awaitCheckpoint(); !s)
        return s;
      return nonFiniteError(result, nonFiniteInARow);
    }
    if (result.nonFinite && root) {
      progress.clear();
      std::fprintf(stderr, "trc-run: step %lld: %s; update skipped (--on-nonfinite skip)\n",
                   static_cast<long long>(result.step), describeNonFinite(result).c_str());
    }
    const bool checkpointed = o_.checkpointEvery && ((step + 1) % o_.checkpointEvery == 0 || last);
    if (checkpointed) {
      if (root)
        progress.clear();
      ProfileScope checkpointPhase("checkpoint");
      if (Status s = checkpoint(step, result, result.evalLoss ? lastEval : std::nullopt); !s)
        return s;
    }
    // Asked to stop (Slurm's SIGTERM before a preemption, Ctrl-C): every
    // rank learns it after the same step, which is checkpointed.
    if (!last) {
      StatusOr<int> asked = stopSignal();
      if (!asked.ok())
        return asked.status();
      if (*asked) {
        if (root)
          progress.clear();
        return stopOnSignal(*asked, step, result, checkpointed);
      }
    }
  }
  if (root)
    progress.finish();
  if (Status s = awaitCheckpoint(); !s)
    return s;
  int64_t ran = o_.steps - firstStep_;
  if (root && ran > 0)
    std::fprintf(stderr,
                 "trc-run: train_loss %.4f (mean of %lld%s steps), train_runtime %.1f s, "
                 "train_samples_per_second %.1f%s%s\n",
                 lossSum / double(finiteSteps), static_cast<long long>(finiteSteps),
                 finiteSteps < ran ? " finite" : "", runSeconds,
                 double(ran * o_.batchSize) / runSeconds, lastEval ? ", " : "",
                 lastEval ? describeEval(*lastEval).c_str() : "");
  if (root && best_)
    std::fprintf(stderr, "trc-run: --keep-best %s: the best checkpoint is %s/step-%lld (%s %.6g)\n",
                 o_.keepBest.c_str(), o_.checkpointDir.c_str(),
                 static_cast<long long>(best_->step), o_.keepBest.c_str(), best_->value);
  return profile_.finish(dist_);
}

/// --from-checkpoint: the parameters of a checkpoint (a step-<N> folder, or
/// a checkpoint folder's latest) into the session; its step. Optimizer
/// state and the data position are not read: nothing trains.
StatusOr<int64_t> TrainingJob::loadParameters(const std::string &checkpoint) {
  StatusOr<std::string> resolved = checkpointFolder(checkpoint);
  if (!resolved.ok())
    return Status(resolved.status()).withPrefix("--from-checkpoint: ");
  const std::string &folder = *resolved;
  StatusOr<CheckpointContents> read = readCheckpoint(folder);
  if (!read.ok())
    return Status(read.status()).withPrefix("--from-checkpoint: ");
  if (Status s = state_->write(tensorFinder(read->tensors), StateParts::Parameters); !s)
    return s.withPrefix("--from-checkpoint " + folder + ": ");
  return read->state.step;
}

/// Evaluation alone (--eval-data without --data): the model's parameters,
/// or a checkpoint's, evaluated once; with --metrics one line at that step.
Status TrainingJob::evaluateAlone() {
  int64_t step = 0;
  if (!o_.fromCheckpoint.empty()) {
    StatusOr<int64_t> loaded = loadParameters(o_.fromCheckpoint);
    if (!loaded.ok())
      return loaded.status();
    step = *loaded;
  }
  StatusOr<std::optional<EvalResult>> evaluated = evaluate(step);
  if (!evaluated.ok())
    return evaluated.status();
  if (!dist_.isRoot() || !*evaluated)
    return Status::success();
  const EvalResult &e = **evaluated;
  if (onStep_) { // the evaluation as a step's results (no update)
    StepResult result;
    result.step = step;
    result.applied = false;
    result.evalLoss = e.loss;
    result.evalAccuracy = e.accuracy;
    result.evalPerplexity = e.perplexity;
    onStep_(result);
  }
  std::fprintf(stderr, "trc-run: %s%s\n", describeEval(e).c_str(),
               o_.fromCheckpoint.empty()
                   ? ", the model's own parameters"
                   : (", the parameters of step " + std::to_string(step)).c_str());
  if (metrics_.empty())
    return Status::success();
  StepMetrics m;
  m.step = step;
  m.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
               .count();
  addEvalMetrics(m, e);
  return logMetrics(m);
}

/// The parameters training changed, whole on rank 0 (collective).
StatusOr<std::vector<NamedTensor>> TrainingJob::gatherTrained() {
  return state_->read(StateParts::Parameters);
}

/// --export-onnx and --save-model: rank 0 writes what every rank gathered.
Status TrainingJob::saveResults(int64_t steps) {
  if (o_.exportOnnx.empty() && o_.saveModel.empty())
    return Status::success();
  StatusOr<std::vector<NamedTensor>> trained = gatherTrained();
  if (!trained.ok())
    return trained.status();
  if (!dist_.isRoot())
    return Status::success();
  if (!o_.exportOnnx.empty()) {
    TrainedWeights weights;
    std::map<std::string, HostTensor *> byName;
    for (NamedTensor &t : *trained) {
      weights.names.push_back(t.name);
      byName[t.name] = &t.tensor;
    }
    // The export reads each tensor once: it takes them unless --save-model
    // writes them afterwards (a 124M model's weights are not copied).
    weights.read = [&](const std::string &name) -> StatusOr<HostTensor> {
      HostTensor &from = *byName.at(name);
      if (o_.saveModel.empty())
        return std::move(from);
      HostTensor copy;
      if (Status s = copy.allocate(from.dtype, from.shape); !s)
        return s;
      std::memcpy(copy.data(), from.data(), from.byteSize());
      return copy;
    };
    if (Status s = compiler_->exportOnnx(o_.model, o_.exportOnnx, weights); !s)
      return s;
  }
  if (!o_.saveModel.empty()) {
    SavedModel saved{o_.saveModel, o_.model, steps, *std::move(trained), {}};
    if (compiler_ && !fromArtifact_) {
      StatusOr<std::map<std::string, std::string>> metadata = compiler_->modelMetadata(o_.model);
      if (!metadata.ok())
        return metadata.status();
      saved.metadata = *std::move(metadata);
    }
    if (Status s = saveModel(saved); !s)
      return s;
    std::fprintf(stderr, "trc-run: --save-model %s: %zu trained tensors%s\n",
                 o_.saveModel.c_str(), saved.tensors.size(),
                 saved.metadata.count(abi::kHfConfigMetadataKey)
                     ? " and config.json (from_pretrained loads it)"
                     : "");
  }
  return Status::success();
}

/// What the plan asks of this run, checked and recorded in `run.build`:
/// the engine runs it, microbatches without stages are accumulation, the
/// batch divides, pipeline stages' limits, recomputation, offloading,
/// tensor parallelism. Depends on the flags (`options`, as given) and the
/// plan only.
Status configurePlan(const TrainerOptions &options, RunSettings &run, DistributedRun &dist) {
  const ParallelPlan &plan = dist.config();
  if (Status s = checkRunnable(plan); !s)
    return s;
  if (Status s = microbatchesAsAccumulation(plan, run, dist.isRoot()); !s)
    return s;
  // The ranks of a tensor group share their rows: the batch is split over
  // the data axis only.
  const int64_t dataRanks = dist.dataDegree();
  const int64_t accumulation = run.options.gradAccum; // microbatches may have set it
  if (options.batchSize % (dataRanks * accumulation) != 0)
    return Status::error(
        "--batch-size " + std::to_string(options.batchSize) +
        " is the global batch: it must be a multiple of the " +
        (dist.tensorDegree() * dist.contextDegree() > 1
             ? "data-parallel degree (world size over tensor and context degrees, "
             : "world size (") +
        std::to_string(dataRanks) + ") times --grad-accum (" + std::to_string(accumulation) +
        ")");
  if (plan.pipelineDegree > 1) {
    if (run.options.gradAccum > 1) { // more microbatches: the same sums
      if (dist.isRoot())
        std::fprintf(stderr,
                     "trc-run: --grad-accum %lld with pipeline stages: %d x %lld microbatches "
                     "per step\n",
                     static_cast<long long>(run.options.gradAccum), plan.microbatches,
                     static_cast<long long>(run.options.gradAccum));
      dist.accumulateInMicrobatches(int(run.options.gradAccum));
      run.options.gradAccum = 1;
      run.build.accumulate = false;
      run.trainStepRecord = describeTrainStep(run.build);
    }
    if (Status s = checkPipelineOptions(options, plan); !s)
      return s;
    const bool sharded = plan.zeroStage > 0 && plan.shardDegree > 1;
    run.build.pipeline = PipelineBuild{plan.pipelineDegree, plan.virtualStages,
                                       sharded ? plan.shardDegree : 1,
                                       sharded ? plan.zeroStage : 0, plan.microbatches};
  } else if (dist.dataParallel()) {
    run.build.dataParallel = dist.dataParallelBuild();
  }
  if (Status s = chooseRecompute(options, plan, run.build); !s)
    return s;
  // Pipeline stages offload in the executor (their stashes), not in the
  // compiled programs.
  run.build.offload = plan.offloadActivations && plan.pipelineDegree == 1;
  run.build.horizon = plan.activationLoadingHorizon;
  if (plan.tensorDegree > 1)
    run.build.tensorParallel = TensorParallelBuild{plan.tensorDegree, plan.sequenceParallel};
  run.build.contextDegree = plan.contextDegree;
  run.build.contextRing = plan.contextDegree > 1 && plan.cpCommType == "p2p";
  run.build.contextBalance = plan.contextDegree > 1 && plan.cpLoadBalance;
  if (run.build.contextRing && run.options.attention == "unfused")
    return Status::error("--attention unfused: key 'cp_comm_type': 'p2p' passes blocks of "
                         "fused attention around the ring (leave --attention auto or fused)");
  return Status::success();
}

} // namespace

Status runTrainer(const TrainerOptions &options, StepCompiler *compiler,
                  const std::function<void(const StepResult &)> &onStep) {
  // The flags' own contradictions are every rank's: printed once for the job.
  if (Status s = validateTrainerOptions(options); !s)
    return onceForTheJob(s);
  StatusOr<RunSettings> resolved = resolveRunSettings(options);
  if (!resolved.ok())
    return resolved.status();
  RunSettings &run = *resolved;
  // A bad export target fails now, not after the training run.
  if (!options.exportOnnx.empty() && compiler)
    if (Status s = compiler->checkExportTarget(options.model, options.exportOnnx); !s)
      return s;
  if (!options.saveModel.empty())
    if (Status s = checkSaveModelTarget(options.saveModel); !s)
      return s;
  if (!options.predictionsDir.empty())
    if (Status s = checkPredictionsTarget(options.predictionsDir); !s)
      return s;
  // Ranks, groups and the data-parallel plan (one process: world size 1).
  StatusOr<std::unique_ptr<DistributedRun>> created = DistributedRun::create(options.parallelConfig);
  if (!created.ok())
    return created.status();
  std::unique_ptr<DistributedRun> dist = *std::move(created);
  // The plan's checks follow from the flags, the same on every rank: the
  // ranks agree, and rank 0 alone prints the error.
  if (Status s = dist->agree(configurePlan(options, run, *dist)); !s)
    return s;
  if (Status s = checkProfileTarget(options, dist->world()); !s) // before any training
    return s;
  if (run.stepsPerEpoch && dist->isRoot())
    std::fprintf(stderr, "trc-run: --epochs %lld: %lld steps (%lld per pass over %s)%s\n",
                 static_cast<long long>(options.epochs),
                 static_cast<long long>(run.options.steps),
                 static_cast<long long>(run.stepsPerEpoch), options.data.c_str(),
                 run.options.steps < options.epochs * run.stepsPerEpoch ? ", capped by --steps"
                                                                       : "");
  run.parallelRecord = describeParallelBuild(run.build);
  const bool fromArtifact = isSavedStep(options.model);
  if (!options.saveArtifact.empty()) {
    if (fromArtifact)
      return Status::error("--save-artifact compiles an .onnx model; " + options.model +
                           " is a folder (already a saved training step?)");
    if (!compiler)
      return Status::error(options.model + ": --save-artifact compiles, which this "
                                           "runtime-only build cannot do");
    return saveTrainingStep(*compiler, run, *dist);
  }
  TrainingJob job(run, *dist, compiler, fromArtifact, onStep);
  if (Status s = job.prepare(); !s)
    return s;
  // From here on an error may be this rank's alone.
  if (run.evaluateOnly)
    return dist->leaveAlone(job.evaluateAlone());
  if (Status s = job.train(); !s)
    return dist->leaveAlone(s);
  return dist->leaveAlone(job.saveResults(run.options.steps));
}

} // namespace trc::rt
