//===- RunCommand.cpp - a trc-run command line, read ----------------------===//
#include "runtime/train/RunCommand.h"

#include "runtime/formats/FileOps.h"
#include "runtime/support/Names.h"
#include "runtime/train/FlagValues.h"
#include "runtime/train/RunFlags.h"

#include <set>
#include <string_view>

namespace trc::rt {
namespace {

/// One of trc-run's own options (with or without =value).
bool isOption(const std::string &arg) {
  return arg == "-h" || findRunFlag(arg.substr(0, arg.find('='))) != nullptr;
}

/// The value after `flag` (args[i + 1]); an option there means the value
/// was forgotten (`--metrics --steps 5` would write a file named --steps).
Status takeSeparateValue(const std::string &flag, const std::vector<std::string> &args,
                         size_t &i, std::string &value) {
  if (i + 1 >= args.size())
    return Status::error("option '" + flag + "' needs a value");
  if (isOption(args[i + 1]))
    return Status::error("option '" + flag + "' needs a value, but the next argument is the option '" +
                         args[i + 1] + "' (write " + flag + "=" + args[i + 1] +
                         " for a value that looks like an option)");
  value = args[++i];
  return Status();
}

/// The model (the one positional argument).
Status takeModel(const std::string &arg, RunCommand &opt) {
  if (!opt.model.empty())
    return Status::error("unexpected argument '" + arg + "' (the model is '" + opt.model + "')");
  opt.model = arg;
  return Status::success();
}

/// Records `flag` (with `value` unless a switch) where its mode keeps it.
/// The training flags are kept as given (TrainFlags.cpp reads them); the
/// evaluation and calibration flags are checked here.
Status applyFlag(const RunFlag &flag, const std::string &value, RunCommand &opt) {
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
      if (!parseIntFlag(value, 1, n, 1000000))
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

} // namespace

Status parseRunCommand(const std::vector<std::string> &args, RunCommand &opt) {
  std::set<std::string_view> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "--") { // everything after it is the model
      for (++i; i < args.size(); ++i)
        if (Status s = takeModel(args[i], opt); !s)
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
      if (!inlineValue && i + 1 < args.size() && args[i + 1] == flag->valueName)
        value = args[++i];
      break;
    case FlagArity::Value:
      if (!inlineValue)
        if (Status s = takeSeparateValue(name, args, i, value); !s)
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

StatusOr<TrainerOptions> trainerOptions(const RunCommand &command) {
  TrainArgs args = command.train;
  args.model = command.model;
  args.device = command.device;
  return trainerOptionsFromFlags(args);
}

Status checkRunPaths(const RunCommand &opt) {
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
        "--checkpoint-dir", "--save-model", "--predictions"})
    outputs.push_back({flag, value(flag), ""});
  if (!value("--export-onnx").empty()) // its initializers' side file
    outputs.push_back({"--export-onnx", value("--export-onnx") + ".data", ""});
  outputs.push_back({"--output-dir", opt.outputDir, ""});
  return checkOutputsAreNotInputs(outputs, inputs);
}

} // namespace trc::rt
