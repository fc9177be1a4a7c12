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
// the training mode (runtime/train/Trainer.h; every flag is declared once in
// runtime/train/RunFlags.h, the table this parser and --help read);
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
#include "runtime/train/RunFlags.h"
#include "runtime/train/Trainer.h"

#include "trc/Plan/Calibrate.h"
#include "RunHelpers.h"
#include "TrainFlags.h"
#ifdef TRC_RUN_WITH_COMPILER
#include "trc/Driver/AutoPlan.h"
#include "trc/Driver/CalibrateKernels.h"
#include "trc/Driver/CompileInProcess.h"
#include <map>
#endif

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <set>
#include <string>
#include <sys/stat.h>
#include <utility>
#include <vector>

using namespace trc::rt;

namespace {

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
  return arg == "-h" || findRunFlag(arg.substr(0, arg.find('='))) != nullptr;
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

/// The model (the one positional argument).
Status takeModel(const std::string &arg, Options &opt) {
  if (!opt.model.empty())
    return Status::error("unexpected argument '" + arg + "' (the model is '" + opt.model + "')");
  opt.model = arg;
  return Status::success();
}

/// Records `flag` (with `value` unless a switch) where its mode keeps it.
/// The training flags are kept as given (TrainFlags.cpp reads them); the
/// evaluation and calibration flags are checked here.
Status applyFlag(const RunFlag &flag, const std::string &value, Options &opt) {
  std::string name(flag.name);
  if (name == "--help") {
    opt.help = true;
  } else if (name == "--calibrate") {
    opt.calibrate = true;
  } else if (name == "--calibrate-out") {
    if (value.empty())
      return Status::error("option '--calibrate-out' needs a file name");
    opt.calibrateOut = value;
  } else if (flag.mode == RunMode::Evaluation || name == "--device") {
    if (value.empty())
      return Status::error("option '" + name + "' needs a non-empty value");
    if (name == "--repeat") {
      int64_t n;
      if (!trc::parseInt(value, 1, n, 1000000))
        return Status::error("option '--repeat' expects a count from 1 to 1000000, got '" +
                             value + "'");
      opt.repeat = static_cast<int>(n);
    } else if (name == "--device") {
      if (value != "cpu" && value != "cuda" && value != "auto")
        return Status::error("option '--device' expects cpu, cuda or auto, got '" + value + "'");
      opt.device = value;
    } else if (name == "--output-dir") {
      opt.outputDir = value;
    } else { // --input NAME=FILE
      size_t sep = value.find('=');
      if (sep == std::string::npos || sep == 0 || sep + 1 == value.size())
        return Status::error("option '--input' expects NAME=FILE.npy, got '" + value + "'");
      std::string input = value.substr(0, sep);
      for (const auto &[seen, file] : opt.inputs)
        if (seen == input)
          return Status::error("input '" + percentEncode(input) + "' given twice");
      opt.inputs.emplace_back(input, value.substr(sep + 1));
    }
  } else if (flag.arity == FlagArity::Switch ||
             (flag.arity == FlagArity::SwitchOrAuto && value.empty())) {
    opt.train.switches.insert(name);
  } else if (flag.repeatable) {
    opt.train.lists[name].push_back(value);
  } else {
    opt.train.values[name] = value;
  }
  if (flag.mode == RunMode::Training && flag.selectsMode)
    opt.training = true;
  return Status::success();
}

Status parseArgs(int argc, char **argv, Options &opt) {
  std::set<std::string_view> given;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") { // everything after it is the model
      for (++i; i < argc; ++i)
        if (Status s = takeModel(argv[i], opt); !s)
          return s;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-' || arg == "-") {
      if (Status s = takeModel(arg, opt); !s)
        return s;
      continue;
    }
    // --flag=value or --flag value.
    std::string name = arg == "-h" ? "--help" : arg, value;
    bool inlineValue = false;
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    const RunFlag *flag = findRunFlag(name);
    if (!flag)
      return Status::error("unknown option '" + name + "' (see trc-run --help)");
    if (!flag->repeatable && !given.insert(flag->name).second)
      return Status::error("option '" + name + "' given twice");
    switch (flag->arity) {
    case FlagArity::Switch:
      if (inlineValue)
        return Status::error("option '" + name + "' takes no value");
      break;
    case FlagArity::SwitchOrAuto: // --resume, --resume auto, --resume=auto
      if (inlineValue && value != flag->valueName)
        return Status::error("option '" + name + "' takes no value but " +
                             std::string(flag->valueName));
      if (!inlineValue && i + 1 < argc && argv[i + 1] == flag->valueName)
        value = argv[++i];
      break;
    case FlagArity::Value:
      if (!inlineValue)
        if (Status s = takeSeparateValue(name, argc, argv, i, value); !s)
          return s;
      break;
    }
    if (Status s = applyFlag(*flag, value, opt); !s)
      return s;
    if (opt.help)
      return Status::success();
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
  if (opt.train.on("--profile-summary") && !opt.training && !opt.repeat)
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
  if (opt.train.on("--profile-summary"))
    evaluation.profileSpans = &spans;
  if (Status s = evaluateArtifact(artifactDir, *backend, evaluation); !s)
    return fail(s.message());
  if (opt.train.on("--profile-summary")) {
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
      std::fputs(runUsage().c_str(), stdout);
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
