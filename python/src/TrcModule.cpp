//===- TrcModule.cpp - trc._trc: trc-run's training path for Python -------===//
//
// The extension under the Python package `trc` (python/trc). It binds the
// path trc-run takes, not a second trainer: Python turns keyword arguments
// into trc-run arguments (python/trc/_flags.py, with the flag table bound
// here as `flags()`), and `train(args, on_step)` reads them with
// parseRunCommand, checks their paths (checkRunPaths) and runs them with
// runTrainCommand (lib/Driver: --config auto, the in-process compiler, the
// Trainer library). Every step's results reach `on_step` as a dict.
//
// Errors come back as trc._trc.Error (the message trc-run would print
// after "error: "); the compiler prints its own diagnostics to stderr.
// The GIL is released while training and taken for each callback. A
// callback that raises stops the run after the step in flight (as SIGUSR1
// would: a checkpoint when the run keeps them) and its exception is raised
// from train(). Precondition: the extension is loaded RTLD_GLOBAL
// (python/trc/_native.py), because compiled programs call the runtime's
// trc_rt_* functions.
//
//===----------------------------------------------------------------------===//
#include "trc/Driver/TrainJob.h"

#include "runtime/comm/RankThreads.h"
#include "runtime/comm/mpi/MpiCommunicator.h"
#include "runtime/support/StopSignals.h"
#include "runtime/train/RunCommand.h"
#include "runtime/train/RunFlags.h"

#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <csignal>
#include <optional>

namespace py = pybind11;
using namespace trc::rt;

namespace {

const char *arityName(FlagArity arity) {
  switch (arity) {
  case FlagArity::Switch:
    return "switch";
  case FlagArity::Value:
    return "value";
  case FlagArity::SwitchOrAuto:
    return "switch_or_auto";
  }
  return "value";
}

const char *modeName(RunMode mode) {
  switch (mode) {
  case RunMode::Evaluation:
    return "evaluation";
  case RunMode::Training:
    return "training";
  case RunMode::Calibration:
    return "calibration";
  case RunMode::Shared:
    return "shared";
  }
  return "shared";
}

/// trc-run's flag table, one dict per flag.
py::list flagTable() {
  py::list table;
  for (const RunFlag &flag : runFlags()) {
    py::dict row;
    row["name"] = std::string(flag.name);
    row["value_name"] = std::string(flag.valueName);
    row["arity"] = arityName(flag.arity);
    row["mode"] = modeName(flag.mode);
    row["repeatable"] = flag.repeatable;
    row["help"] = std::string(flag.help);
    table.append(row);
  }
  return table;
}

py::dict stepDict(const StepResult &r) {
  py::dict d;
  d["step"] = r.step;
  d["loss"] = r.loss;
  d["learning_rate"] = r.learningRate;
  d["grad_norm"] = r.gradNorm;
  d["step_time_ms"] = r.stepTimeMs;
  d["tokens_per_second"] = r.tokensPerSecond;
  d["samples_per_second"] = r.samplesPerSecond;
  d["applied"] = r.applied;
  d["non_finite"] = r.nonFinite;
  if (!r.anomaly.empty())
    d["anomaly"] = r.anomaly;
  if (r.evalLoss)
    d["eval_loss"] = *r.evalLoss;
  if (r.evalAccuracy)
    d["eval_accuracy"] = *r.evalAccuracy;
  if (r.evalPerplexity)
    d["eval_perplexity"] = *r.evalPerplexity;
  return d;
}

/// Trains (or evaluates alone) as `trc-run ARGS...` would; returns None.
void train(const std::vector<std::string> &args, const py::object &onStep,
           const py::object &errorType) {
  RunCommand command;
  Status status = parseRunCommand(args, command);
  if (status && (command.help || command.calibrate || !command.training))
    status = Status::error("trc.Trainer runs training (or evaluation of --eval-data alone); "
                           "these arguments ask for another of trc-run's modes");
  if (status)
    status = checkRunPaths(command);
  if (status)
    if (StatusOr<int> threads = applyRankThreads(); !threads.ok())
      status = threads.status();
  std::optional<py::error_already_set> raised;
  if (status) {
    std::function<void(const StepResult &)> callback;
    if (!onStep.is_none())
      callback = [&](const StepResult &result) {
        py::gil_scoped_acquire gil;
        if (raised)
          return;
        try {
          onStep(stepDict(result));
        } catch (py::error_already_set &e) {
          raised.emplace(std::move(e));
          StopSignals::request(SIGUSR1); // stop after this step
        }
      };
    py::gil_scoped_release released;
    status = trc::runTrainCommand(command, callback);
  }
  if (raised) {
    raised->restore();
    throw py::error_already_set();
  }
  if (!status) {
    // reported(): the compiler printed its diagnostics, or (under mpirun)
    // rank 0 printed the job's error.
    std::string message = status.isReported()
                              ? "the error was printed above (by the compiler, or by rank 0 of "
                                "the job)"
                              : std::string(status.message());
    PyErr_SetString(errorType.ptr(), message.c_str());
    throw py::error_already_set();
  }
}

} // namespace

PYBIND11_MODULE(_trc, m) {
  m.doc() = "trc's compiler and trainer (the engine under the trc package)";
  static py::exception<std::runtime_error> error(m, "Error");
  // MPI is finalized when Python exits, after an error's traceback is
  // printed (rank 0's would otherwise race the other ranks' exit; see
  // MpiCommunicator.h), and a second train() in the process finds it
  // still initialized.
  trc::rt::deferMpiFinalize();
  py::module_::import("atexit").attr("register")(py::cpp_function([] { trc::rt::finishMpi(); }));
  m.def("flags", &flagTable, "trc-run's flags: name, value_name, arity, mode, repeatable, help");
  m.def("usage", &runUsage, "trc-run --help");
  m.def(
      "train",
      [](const std::vector<std::string> &args, const py::object &onStep) {
        train(args, onStep, error);
      },
      py::arg("args"), py::arg("on_step") = py::none(),
      "Runs `trc-run ARGS...` (training, or evaluation of --eval-data alone); on_step(dict) "
      "sees each step's results.");
}
