//===- trc-run.cpp - run a compiled trc artifact ----------------------------===//
//
// A thin front end: the command line is read by runtime/train/RunCommand.h
// (every flag is declared once in runtime/train/RunFlags.h, the table the
// parser and --help read) and handed to the libraries. Evaluation mode:
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
// their values) into a temporary artifact that is removed afterwards.
// Training flags (--data, --steps, ...) select the training mode, run by
// lib/Driver's runTrainCommand (the path Python's trc.Trainer takes too; a
// runtime-only build trains saved steps); --export-onnx belongs to it alone.
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Artifact.h"
#include "runtime/artifact/Evaluation.h"
#include "runtime/backends/Backend.h"
#include "runtime/comm/RankThreads.h"
#include "runtime/comm/mpi/MpiCommunicator.h"
#include "runtime/formats/FileOps.h"
#include "runtime/formats/Npy.h"
#include "runtime/support/Names.h"
#include "runtime/train/DistributedRun.h"
#include "runtime/train/ProfileSummary.h"
#include "runtime/train/RunCommand.h"
#include "runtime/train/RunFlags.h"
#include "runtime/train/Trainer.h"

#include "trc/Plan/Calibrate.h"
#ifdef TRC_RUN_WITH_COMPILER
#include "trc/Driver/CalibrateKernels.h"
#include "trc/Driver/CompileInProcess.h"
#include "trc/Driver/TrainJob.h"
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

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}


int runEvaluation(const RunCommand &opt) {
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

#ifndef TRC_RUN_WITH_COMPILER
/// Training in a runtime-only build: saved steps only, their plan compiled in.
Status trainSavedStep(const RunCommand &opt) {
  StatusOr<TrainerOptions> options = trainerOptions(opt);
  if (!options.ok())
    return options.status();
  if (!options->deviceProfile.empty())
    return Status::error("--device-profile: the planner (--config auto) needs trc-run built with "
                         "the compiler; this build trains saved steps, whose plan is compiled in");
  return runTrainer(*options, nullptr);
}
#endif

} // namespace

static int runTool(int argc, char **argv) {
  try {
    RunCommand opt;
    // A command line every rank of a job shares: a bad one is said once.
    if (Status s = onceForTheJob(
            parseRunCommand(std::vector<std::string>(argv + 1, argv + argc), opt));
        !s)
      return s.isReported() ? 1 : fail(s.message());
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
      if (Status s = checkRunPaths(opt); !s)
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
#ifdef TRC_RUN_WITH_COMPILER
      Status s = trc::runTrainCommand(opt);
#else
      Status s = trainSavedStep(opt);
#endif
      return s ? 0 : s.isReported() ? 1 : fail(s.message());
    }
    return runEvaluation(opt);
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &e) {
    return fail(std::string("internal error: ") + e.what());
  }
}

int main(int argc, char **argv) {
  // Under mpirun rank 0 prints the job's error before any rank can pass
  // MPI's finalize and exit (MpiCommunicator.h: deferMpiFinalize).
  deferMpiFinalize();
  int status = runTool(argc, argv);
  finishMpi();
  return status;
}
