//===- trc-run.cpp - run a compiled trc artifact ----------------------------===//
//
// A thin front end: it parses the flags and hands them to the runtime's
// libraries. Evaluation mode:
//   trc-run ARTIFACT_DIR [--device cpu|cuda|auto] --input NAME=FILE.npy ...
//           --output-dir DIR
// runs the artifact once on the inputs and writes DIR/<output name>.npy for
// every output (runtime/artifact/Evaluation.h: all or nothing). Any problem
// prints one `error: ...` line and exits 1.
// `--device auto` runs an artifact on its target (cpu or cuda) and compiles
// an .onnx model for the GPU when one is present, else the CPU. MODEL may be an
// .onnx file when trc-run is built with the compiler: it is compiled
// in-process (input shapes from the .npy inputs; inputs that determine
// shapes, such as a Reshape's shape or Slice's starts, are specialized on
// their values) into a temporary artifact that is removed afterwards. Training flags (--data, --steps, ...) select
// the training mode (runtime/train/Trainer.h, flags in TrainFlags.h);
// --export-onnx belongs to it alone.
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Artifact.h"
#include "runtime/artifact/Evaluation.h"
#include "runtime/backends/Backend.h"
#include "runtime/comm/RankThreads.h"
#include "runtime/formats/FileOps.h"
#include "runtime/formats/Npy.h"
#include "runtime/support/Names.h"
#include "runtime/train/ProfileSummary.h"
#include "runtime/train/Trainer.h"

#include "Calibrate.h"
#include "RunHelpers.h"
#include "TrainFlags.h"
#ifdef TRC_RUN_WITH_COMPILER
#include "AutoPlan.h"
#include "CalibrateKernels.h"
#include "CompileInProcess.h"
#include <map>
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

using namespace trc::rt;

namespace {

const char *kUsage =
    "usage: trc-run ARTIFACT_DIR [--device cpu|cuda|auto] --input NAME=FILE.npy ...\n"
    "               --output-dir DIR\n"
    "\n"
    "Runs a compiled trc artifact (a folder written by\n"
    "`trc-opt MODEL --trc-compile=\"target=cpu\" -o ARTIFACT_DIR`) once and\n"
    "writes DIR/<output>.npy for each of its outputs.\n"
    "\n"
    "  --device D          cpu, cuda, or auto (default: an artifact's own target;\n"
    "                      for an .onnx model the GPU when present, else the CPU)\n"
    "  --input NAME=FILE   bind input NAME to a NumPy .npy file (dtype and\n"
    "                      shape must match the artifact exactly)\n"
    "  --output-dir DIR    where the outputs are written (created if needed)\n"
    "  --repeat N          after the first run, time N more and print the\n"
    "                      mean and best time per run to stderr\n"
    "  --profile-summary   with --repeat: where the timed runs' time went, per\n"
    "                      compiled loop nest and BLAS call (CPU)\n"
    "  -h, --help          print this help\n"
    "\n"
    "Training (MODEL.onnx; see README):\n"
    "  trc-run MODEL.onnx --data FILE --batch-size B --seq-len T --steps N\n"
    "  trc-run MODEL.onnx --data ROWS.npz --batch-size B --steps N  (labelled rows:\n"
    "                      arrays named after the model's inputs, one row per\n"
    "                      example; or a folder of NAME.npy files)\n"
    "      [--epochs E]  (E passes over --data; with --steps N, at most N steps)\n"
    "      [--eval-data ROWS.npz|TEXT [--eval-every K]]  (held-out loss, and\n"
    "                      accuracy for a model with logits, every K steps and\n"
    "                      at the end; token data: per token, and perplexity)\n"
    "  trc-run MODEL.onnx --eval-data ROWS.npz|TEXT --batch-size B [--seq-len T]\n"
    "      [--from-checkpoint D]  (evaluation alone: the model's parameters or a\n"
    "                      checkpoint's, a step-<N> folder or D/latest)\n"
    "      [--log-every N]  (when stderr is not a terminal: a step line every N\n"
    "                      steps, default 10)\n"
    "      [--optimizer adamw|adam|sgd] [--lr R] [--lr-schedule SPEC] [--momentum M]\n"
    "      [--nesterov] [--weight-decay W] [--clip-grad-norm C] [--seed S] [--shuffle]\n"
    "      [--feed NAME=inputs|targets|labels] [--metrics FILE.jsonl]\n"
    "      [--tensorboard DIR]  (the step metrics as TensorBoard scalars: train/loss,\n"
    "                      train/learning_rate, ..., eval/loss; rank 0)\n"
    "      [--loss cross_entropy [--ignore-index I]]  (for models that output logits)\n"
    "      [--precision auto|fp32|bf16|fp16 [--loss-scale S]] [--grad-accum K]\n"
    "                      (bf16/fp16: 16-bit compute, fp32 master weights;\n"
    "                      auto, the default: bf16 on cuda, fp32 on cpu)\n"
    "      [--attention auto|fused|unfused]  (fused: attention is one op whose\n"
    "                      backward recomputes the probabilities instead of\n"
    "                      keeping them; auto, the default: fused on cuda)\n"
    "      [--recompute none|selective|full|auto] [--memory-budget BYTES]\n"
    "                      (activations recomputed in the backward instead of\n"
    "                      kept: selective, the attention core; full, every\n"
    "                      layer from its input; auto, the least recomputation\n"
    "                      whose arena fits --memory-budget, or the device)\n"
    "      [--checkpoint-dir D --checkpoint-every K] [--resume [auto] | --overwrite-checkpoints]\n"
    "      [--checkpoint-sync]  (checkpoints are written in the background while\n"
    "                      training goes on; this waits for each instead)\n"
    "      [--signal-grace S]  (SIGTERM, SIGINT or SIGUSR1 stop the run after the\n"
    "                      step in flight, with a checkpoint of it in\n"
    "                      --checkpoint-dir, exit 1; the process ends anyway S\n"
    "                      seconds after the signal, default 25, 0: no bound)\n"
    "      [--keep-last K]  (keep the K newest checkpoints in D, removing older\n"
    "                      ones after each save; default: keep all)\n"
    "      [--keep-best eval_loss|eval_perplexity|eval_accuracy]  (D/best names the\n"
    "                      checkpoint evaluated best, kept whatever --keep-last\n"
    "                      says; needs --eval-data and --eval-every)\n"
    "      [--detect-anomaly]  (every value of the step is checked for NaN/inf,\n"
    "                      a non-finite step's error names the op that first\n"
    "                      made one; same results, slower steps and compile)\n"
    "      [--on-nonfinite stop|skip]  (a step whose loss or gradient norm is\n"
    "                      inf/NaN: stop with an error, the default, or discard\n"
    "                      its update and go on, at most 10 in a row; fp16\n"
    "                      overflows are the loss scaler's skips either way)\n"
    "      [--init-weights]  (start from fresh values drawn like the model's own:\n"
    "                         each trainable weight's constant, normal or uniform\n"
    "                         recipe, seeded by --seed; see docs/ARTIFACT.md)\n"
    "      [--freeze REGEX] [--trainable REGEX]  (repeatable; which float\n"
    "                      initializers train: --trainable matches train,\n"
    "                      then --freeze matches are frozen, then the\n"
    "                      exporter's tags decide (torch 2.x: PARAMETER\n"
    "                      trains); see README \"Bring your own model\")\n"
    "      [--config JSON|FILE.json|auto]  (the parallel plan: ddp, zero_stage,\n"
    "                      shard_optimizer_state, sharded_data_parallel_degree,\n"
    "                      hybrid_shard_degree, bucket_cap_mb, communicator,\n"
    "                      tensor_parallel_degree, sequence_parallel run today;\n"
    "                      pipeline_parallel_degree, microbatches,\n"
    "                      pipeline_schedule, recompute,\n"
    "                      offload_activations, activation_loading_horizon run\n"
    "                      today; auto_partition is refused; launch with\n"
    "                      mpirun)\n"
    "      [--export-onnx OUT.onnx]  (after training: MODEL.onnx with the trained\n"
    "                                 weights, for onnxruntime and other runtimes)\n"
    "      [--save-model DIR]  (after training: the trained parameters under the\n"
    "                      model's own names, DIR/model.safetensors, and for a\n"
    "                      Hugging Face export config.json: from_pretrained(DIR))\n"
    "      [--save-artifact DIR]  (compile the step for --device cpu|cuda, keep it\n"
    "                              in DIR and stop; --data and --steps optional)\n"
    "      [--profile FILE.json]  (each rank's timeline: steps, phases, program\n"
    "                      runs, collectives; rank 0 writes one Chrome-trace\n"
    "                      file for ui.perfetto.dev or chrome://tracing)\n"
    "      [--profile-summary]  (rank 0 prints, per rank, the top consumers and\n"
    "                      the compute / communication / host / idle shares)\n"
    "      [--profile-steps N]  (record the last N steps only; default: every\n"
    "                      step, the first (warm-up) one included)\n"
    "  trc-run DIR --data FILE --batch-size B --seq-len T --steps N [...]\n"
    "      trains a saved step without compiling (the runtime-only build too);\n"
    "      its batch shape, plan and compile-time flags are the step's\n"
    "      [--device-profile PROFILE.json]  (what --config auto plans with,\n"
    "                      from --calibrate; default: the cpu spec sheet)\n"
    "\n"
    "Calibration (the planner's device profile; see README \"Planning\"):\n"
    "  [mpirun -np N] trc-run --calibrate [--calibrate-out PROFILE.json] [--device cpu]\n"
    "      times matrix products, compiled kernels and (N > 1) MPI collectives\n"
    "      with N ranks at once; writes or updates the N-rank entry of\n"
    "      PROFILE.json (stdout without --calibrate-out)\n";

// Flags of the training mode (TrainFlags.h): valued, boolean, and
// those recognised to say they are not available yet rather than "unknown".
const char *kTrainingFlags[] = {
    "--data",       "--batch-size",     "--seq-len",          "--steps",
    "--optimizer",  "--lr",             "--seed",             "--metrics",
    "--lr-schedule", "--momentum",      "--weight-decay",     "--clip-grad-norm",
    "--checkpoint-dir", "--checkpoint-every", "--feed", "--loss", "--ignore-index",
    "--precision", "--grad-accum", "--loss-scale", "--config", "--attention",
    "--save-artifact", "--profile", "--profile-steps", "--recompute", "--memory-budget",
    "--eval-data", "--eval-every", "--log-every", "--device-profile", "--on-nonfinite",
    "--freeze", "--trainable", "--keep-last", "--epochs", "--from-checkpoint", "--save-model",
    "--keep-best", "--tensorboard", "--signal-grace",
};
const char *kTrainingSwitches[] = {"--shuffle", "--resume", "--nesterov", "--init-weights",
                                   "--profile-summary", "--overwrite-checkpoints",
                                   "--detect-anomaly", "--checkpoint-sync"};

struct Options {
  std::string model;
  std::string device = "auto";
  std::vector<std::pair<std::string, std::string>> inputs; // name, file
  std::string outputDir;
  int repeat = 0; // --repeat N: time N more runs after the first
  bool help = false;
  bool training = false;
  bool calibrate = false;      // --calibrate
  std::string calibrateOut;    // --calibrate-out
  trc::TrainArgs train;
};

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

/// One of trc-run's own options (with or without =value).
bool isOption(const std::string &arg) {
  std::string name = arg.substr(0, arg.find('='));
  for (const char *f : kTrainingFlags)
    if (name == f)
      return true;
  for (const char *f : kTrainingSwitches)
    if (name == f)
      return true;
  for (const char *f : {"--device", "--input", "--output-dir", "--repeat", "--export-onnx",
                        "--help", "--calibrate", "--calibrate-out"})
    if (name == f)
      return true;
  return false;
}

/// The value after `flag` (argv[i + 1]); an option there means the value
/// was forgotten (`--metrics --steps 5` would write a file named --steps).
Status takeSeparateValue(const std::string &flag, int argc, char **argv, int &i,
                         std::string &value) {
  if (i + 1 >= argc)
    return Status::error("option '" + flag + "' needs a value");
  if (isOption(argv[i + 1]))
    return Status::error("option '" + flag + "' needs a value, but the next argument is the option '" +
                         std::string(argv[i + 1]) + "' (write " + flag + "=" + argv[i + 1] +
                         " for a value that looks like an option)");
  value = argv[++i];
  return Status();
}

Status parseArgs(int argc, char **argv, Options &opt) {
  bool sawDevice = false, sawOutputDir = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      opt.help = true;
      return Status::success();
    }
    if (arg == "--calibrate") {
      opt.calibrate = true;
      continue;
    }
    if (arg == "--calibrate-out" || arg.rfind("--calibrate-out=", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos)
        opt.calibrateOut = arg.substr(eq + 1);
      else if (i + 1 < argc)
        opt.calibrateOut = argv[++i];
      if (opt.calibrateOut.empty())
        return Status::error("option '--calibrate-out' needs a file name");
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-' || arg == "-") {
      if (!opt.model.empty())
        return Status::error("unexpected argument '" + arg + "' (the model is '" +
                             opt.model + "')");
      opt.model = arg;
      continue;
    }
    if (arg == "--") {
      for (++i; i < argc; ++i) {
        if (!opt.model.empty())
          return Status::error(std::string("unexpected argument '") + argv[i] +
                               "' (the model is '" + opt.model + "')");
        opt.model = argv[i];
      }
      break;
    }
    // --flag=value or --flag value.
    std::string flag = arg, value;
    bool inlineValue = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    bool isSwitch = false;
    for (const char *sw : kTrainingSwitches)
      isSwitch |= flag == sw;
    // --resume auto (or --resume=auto): resume when there is a checkpoint.
    if (flag == "--resume" && ((inlineValue && value == "auto") ||
                               (!inlineValue && i + 1 < argc && std::string(argv[i + 1]) == "auto"))) {
      if (!inlineValue)
        ++i;
      opt.training = true;
      opt.train.resumeAuto = true;
      continue;
    }
    if (isSwitch) {
      if (inlineValue)
        return Status::error("option '" + flag + "' takes no value" +
                             (flag == "--resume" ? " but auto" : ""));
      // --profile-summary alone profiles an evaluation's --repeat runs.
      opt.training |= flag != "--profile-summary";
      (flag == "--shuffle"           ? opt.train.shuffle
       : flag == "--resume"          ? opt.train.resume
       : flag == "--init-weights"    ? opt.train.initWeights
       : flag == "--profile-summary" ? opt.train.profileSummary
       : flag == "--overwrite-checkpoints" ? opt.train.overwriteCheckpoints
       : flag == "--detect-anomaly"  ? opt.train.detectAnomaly
       : flag == "--checkpoint-sync" ? opt.train.checkpointSync
                                     : opt.train.nesterov) = true;
      continue;
    }
    bool isTraining = false;
    for (const char *training : kTrainingFlags)
      isTraining |= flag == training;
    if (isTraining || flag == "--export-onnx") {
      if (!inlineValue) {
        if (Status s = takeSeparateValue(flag, argc, argv, i, value); !s.ok())
          return s;
      }
      // --export-onnx alone does not make a training run (checked below).
      opt.training |= isTraining;
      if (flag == "--feed")
        opt.train.feeds.push_back(value);
      else if (flag == "--freeze")
        opt.train.freeze.push_back(value);
      else if (flag == "--trainable")
        opt.train.trainable.push_back(value);
      else if (!opt.train.values.emplace(flag, value).second)
        return Status::error("option '" + flag + "' given twice");
      continue;
    }
    if (flag != "--device" && flag != "--input" && flag != "--output-dir" &&
        flag != "--repeat")
      return Status::error("unknown option '" + flag + "' (see trc-run --help)");
    if (!inlineValue) {
      if (Status s = takeSeparateValue(flag, argc, argv, i, value); !s.ok())
        return s;
    }
    if (value.empty())
      return Status::error("option '" + flag + "' needs a non-empty value");
    if (flag == "--repeat") {
      int64_t n;
      if (!trc::parseInt(value, 1, n, 1000000))
        return Status::error("option '--repeat' expects a count from 1 to 1000000, got '" +
                             value + "'");
      opt.repeat = static_cast<int>(n);
    } else if (flag == "--device") {
      if (sawDevice)
        return Status::error("option '--device' given twice");
      sawDevice = true;
      if (value != "cpu" && value != "cuda" && value != "auto")
        return Status::error("option '--device' expects cpu, cuda or auto, got '" + value + "'");
      opt.device = value;
    } else if (flag == "--output-dir") {
      if (sawOutputDir)
        return Status::error("option '--output-dir' given twice");
      sawOutputDir = true;
      opt.outputDir = value;
    } else {
      size_t sep = value.find('=');
      if (sep == std::string::npos || sep == 0 || sep + 1 == value.size())
        return Status::error("option '--input' expects NAME=FILE.npy, got '" +
                             value + "'");
      std::string name = value.substr(0, sep);
      for (const auto &[seen, file] : opt.inputs)
        if (seen == name)
          return Status::error("input '" + percentEncode(name) + "' given twice");
      opt.inputs.emplace_back(name, value.substr(sep + 1));
    }
  }
  if (!opt.calibrateOut.empty() && !opt.calibrate)
    return Status::error("option '--calibrate-out' names where --calibrate writes its profile");
  if (opt.calibrate) {
    if (!opt.model.empty() || opt.training || !opt.inputs.empty() || !opt.outputDir.empty() ||
        opt.repeat)
      return Status::error("--calibrate measures this machine and takes only --calibrate-out "
                           "and --device (no model, training or evaluation options)");
    return Status::success();
  }
  if (opt.model.empty())
    return Status::error("no model given (usage: trc-run ARTIFACT_DIR --input "
                         "NAME=FILE.npy ... --output-dir DIR)");
  if (!opt.training && opt.train.values.count("--export-onnx"))
    return Status::error("option '--export-onnx' writes the weights a training run ends "
                         "with; evaluation does not change them (train with --data, "
                         "--batch-size, --seq-len, --steps)");
  if (opt.train.profileSummary && !opt.training && !opt.repeat)
    return Status::error("option '--profile-summary' profiles training steps or an "
                         "evaluation's --repeat runs; give --repeat N to time a model");
  if (opt.training) {
    if (!opt.inputs.empty() || !opt.outputDir.empty() || opt.repeat)
      return Status::error("training (--data, --steps, ...) takes no --input, "
                           "--output-dir or --repeat");
    return Status::success();
  }
  if (opt.outputDir.empty())
    return Status::error("missing --output-dir DIR (where the outputs are "
                         "written)");
  return Status::success();
}

/// The paths the flags name, checked before anything is read or written:
/// a file to read must be a regular file (a folder where one is allowed),
/// never a FIFO or a device that would block or misbehave; an output must
/// not be an input (the memory-mapped data truncated under the run, the
/// model overwritten).
Status checkPaths(const Options &opt) {
  auto value = [&](const char *flag) {
    auto it = opt.train.values.find(flag);
    return it == opt.train.values.end() ? std::string() : it->second;
  };
  std::vector<NamedPath> inputs, outputs;
  auto input = [&](const std::string &flag, const std::string &path, bool folderToo,
                   const std::string &what) -> Status {
    if (path.empty())
      return Status::success();
    inputs.push_back({flag, path, what});
    return checkRegularFile(flag, path, folderToo);
  };
  if (Status s = input("model", opt.model, true, "the model"); !s)
    return s;
  for (const auto &[name, file] : opt.inputs)
    if (Status s = input("--input " + percentEncode(name) + "=", file, false,
                         "the --input file of '" + percentEncode(name) + "'");
        !s)
      return s;
  for (const char *flag : {"--data", "--eval-data"})
    if (Status s = input(flag, value(flag), true, std::string("the ") + flag + " file"); !s)
      return s;
  // --config is inline JSON, auto, or the path of a JSON file.
  std::string config = value("--config");
  size_t first = config.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && config[first] != '{' && config != "auto")
    if (Status s = input("--config", config, false, "the --config file"); !s)
      return s;
  if (Status s = input("--device-profile", value("--device-profile"), false,
                       "the --device-profile file");
      !s)
    return s;
  for (const char *flag :
       {"--metrics", "--tensorboard", "--profile", "--export-onnx", "--save-artifact",
        "--checkpoint-dir", "--save-model"})
    outputs.push_back({flag, value(flag), ""});
  if (!value("--export-onnx").empty()) // its initializers' side file
    outputs.push_back({"--export-onnx", value("--export-onnx") + ".data", ""});
  outputs.push_back({"--output-dir", opt.outputDir, ""});
  return checkOutputsAreNotInputs(outputs, inputs);
}

int runEvaluation(const Options &opt) {
  // --device auto runs an artifact on the device it was compiled for.
  std::string device = opt.device;
  if (device == "auto" && !endsWith(opt.model, ".onnx"))
    device = Artifact::targetOf(opt.model);
  StatusOr<std::unique_ptr<Backend>> created = createBackend(device);
  if (!created.ok())
    return fail(std::string(created.status().message()));
  std::unique_ptr<Backend> backend = *std::move(created);

  std::string artifactDir = opt.model;
  // The inputs fed at run time: all of them, less those compiled in.
  std::vector<std::pair<std::string, std::string>> fed;
  bool compiled = false;
  struct stat st;
  if (::stat(opt.model.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) &&
      endsWith(opt.model, ".onnx")) {
#ifdef TRC_RUN_WITH_COMPILER
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto &[name, file] : opt.inputs) {
      StatusOr<HostTensor> value = readNpyFile(file);
      if (!value.ok())
        return fail("input '" + percentEncode(name) + "': " +
                    std::string(value.status().message()));
      shapes[name] = value->shape;
    }
    std::string error;
    std::map<std::string, std::string> valueFiles(opt.inputs.begin(), opt.inputs.end());
    std::vector<std::string> specialized;
    if (!trc::compileOnnxInProcess(opt.model, shapes, backend->target(), artifactDir, error,
                                   &valueFiles, &specialized)) {
      std::fputs(error.c_str(), stderr);
      return 1;
    }
    // Inputs the model was specialized on are constants now, not fed.
    compiled = true;
    for (const auto &input : opt.inputs)
      if (std::find(specialized.begin(), specialized.end(), input.first) == specialized.end())
        fed.push_back(input);
#else
    return fail(opt.model +
                ": compiling .onnx in trc-run is not available in this build; "
                "compile with trc-opt --trc-compile");
#endif
  }
  // A temporary artifact compiled above is removed when this run ends.
  TemporaryArtifact removeTemporary{artifactDir != opt.model ? artifactDir : ""};

  EvaluationOptions evaluation;
  evaluation.inputs = compiled ? fed : opt.inputs;
  evaluation.outputDir = opt.outputDir;
  evaluation.repeat = opt.repeat;
  std::vector<Span> spans;
  if (opt.train.profileSummary)
    evaluation.profileSpans = &spans;
  if (Status s = evaluateArtifact(artifactDir, *backend, evaluation); !s)
    return fail(s.message());
  if (opt.train.profileSummary) {
    RankTimeline timeline;
    timeline.label = "evaluation";
    timeline.spans = std::move(spans);
    std::string text = "trc-run: profile of the " + std::to_string(opt.repeat) +
                       " timed runs (each a step below)\n" +
                       formatProfileSummary({summarizeTimeline(timeline, 12)});
    std::fputs(text.c_str(), stderr);
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    Options opt;
    if (Status s = parseArgs(argc, argv, opt); !s)
      return fail(s.message());
    if (opt.help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    // The environment is checked (RankThreads.h: checkEnvironment) and
    // ranks sharing a node split its cores, before the thread pool or any
    // program's OpenMP runtime starts.
    if (StatusOr<int> threads = applyRankThreads(); !threads.ok())
      return fail(std::string(threads.status().message()));
    if (!opt.calibrate)
      if (Status s = checkPaths(opt); !s)
        return fail(s.message());
    if (opt.calibrate) {
      trc::CalibrateOptions calibration;
      calibration.outPath = opt.calibrateOut;
      calibration.device = opt.device == "auto" ? "cpu" : opt.device;
      trc::KernelProbe probe;
#ifdef TRC_RUN_WITH_COMPILER
      double window = calibration.windowSeconds;
      probe = [window](int64_t rows, Communicator &world) {
        return trc::runKernelProbe(rows, world, window);
      };
#endif
      Status s = trc::runCalibration(calibration, probe);
      return s ? 0 : fail(s.message());
    }
    if (opt.training) {
      opt.train.model = opt.model;
      opt.train.device = opt.device;
      StatusOr<TrainerOptions> parsed = trc::trainerOptionsFromFlags(opt.train);
      if (!parsed.ok())
        return fail(std::string(parsed.status().message()));
      TrainerOptions &options = *parsed;
      // An .onnx model is compiled first (not in the runtime-only build); a
      // folder is a training step saved with --save-artifact.
#ifdef TRC_RUN_WITH_COMPILER
      if (Status s = trc::resolveAutoPlan(options, opt.train.values.count("--device-profile")
                                                       ? opt.train.values.at("--device-profile")
                                                       : "");
          !s)
        return fail(s.message());
      trc::InProcessStepCompiler compiler;
      StepCompiler *stepCompiler = &compiler;
#else
      if (opt.train.values.count("--device-profile"))
        return fail("--device-profile: the planner (--config auto) needs trc-run built with the "
                    "compiler; this build trains saved steps, whose plan is compiled in");
      StepCompiler *stepCompiler = nullptr;
#endif
      Status s = runTrainer(options, stepCompiler);
      return s ? 0 : s.isReported() ? 1 : fail(s.message());
    }
    return runEvaluation(opt);
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &e) {
    return fail(std::string("internal error: ") + e.what());
  }
}
