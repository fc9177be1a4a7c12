//===- CompileInProcess.cpp - trc-run MODEL.onnx: compile, then run ---------===//
#include "trc/Driver/CompileInProcess.h"
#include "RecomputeAuto.h"
#include "trc/Export/ExportOnnx.h"

#include "runtime/formats/Npy.h"
#include "trc/Abi/AttrNames.h"
#include "trc/Abi/SlotNames.h"
#include "trc/Dialect/Trc.h"
#include "trc/Analysis/ElementBytes.h"
#include "trc/Import/OnnxDTypes.h"
#include "trc/Import/OnnxImporter.h"
#include "trc/InitAllDialects.h"
#include "trc/InitAllPasses.h"
#include "trc/Passes.h"
#include "trc/Pipelines/Pipelines.h"
#include "trc/Pipelines/TrainingPipeline.h"
#include "trc/Training/Recompute.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "onnx/onnx_pb.h"

namespace trc {

namespace {

/// The typed training pipeline (trc/Pipelines/TrainingPipeline.h) of a
/// Trainer's build: the same struct trc-opt --trc-training-pipeline fills.
bool trainingPipeline(const rt::TrainingBuild &build, TrainingPipelineOptions &o,
                      std::string &problem) {
  if (!setLossAndPrecision(o, build.loss.empty() ? "none" : build.loss, build.ignoreIndex,
                           build.precision, problem))
    return false;
  o.fuseAttention = build.fuseAttention;
  o.autodiff.recomputeStatistics = build.recomputeStatistics;
  if (build.offload) {
    OffloadActivationsOptions offload;
    offload.horizon = build.horizon;
    o.offload = offload;
  }
  if (build.tensorParallel && build.tensorParallel->degree > 1) {
    ShardTensorParallelOptions tp;
    tp.degree = build.tensorParallel->degree;
    tp.sequenceParallel = build.tensorParallel->sequenceParallel;
    o.tensorParallel = tp;
  }
  if (build.contextDegree > 1) {
    ShardContextParallelOptions cp;
    cp.degree = build.contextDegree;
    cp.balance = build.contextBalance;
    o.contextParallel = cp;
    o.ringAttention = build.contextRing;
  }
  if (build.pipeline) {
    PipelineStagesOptions pp;
    pp.stages = build.pipeline->stages;
    pp.virtualStages = build.pipeline->chunks;
    o.pipeline = pp;
    o.pipelineSplit.shardDegree = build.pipeline->shardDegree;
    if (build.pipeline->shardDegree > 1)
      o.pipelineSplit.zeroStage = build.pipeline->zeroStage;
  }
  if (build.dataParallel) {
    DataParallelOptions dp;
    dp.zeroStage = build.dataParallel->zeroStage;
    dp.shardDegree = build.dataParallel->shardDegree;
    dp.bucketMb = build.dataParallel->bucketMb;
    dp.hybrid = build.dataParallel->hybrid;
    o.dataParallel = dp;
  }
  const rt::OptimizerSettings &opt = build.optimizer;
  o.trainStep.optimizer = opt.name;
  o.trainStep.weightDecay = opt.weightDecay.value_or(o.trainStep.weightDecay);
  o.trainStep.momentum = opt.momentum.value_or(o.trainStep.momentum);
  o.trainStep.clipNorm = opt.clipGradNorm.value_or(o.trainStep.clipNorm);
  o.trainStep.nesterov = opt.nesterov;
  o.trainStep.accumulate = build.accumulate;
  o.detectAnomaly = build.detectAnomaly;
  return true;
}

/// The rows of the table that token input `name` indexes (an embedding
/// lookup reading the argument directly or through reshapes), or 0.
int64_t vocabularyOf(mlir::func::FuncOp main, const std::string &name) {
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto input = main.getArgAttrOfType<mlir::StringAttr>(i, trc::abi::kInputAttr);
    if (!input || input.getValue() != name)
      continue;
    llvm::SmallVector<mlir::Value> worklist{main.getArgument(i)};
    while (!worklist.empty()) {
      mlir::Value v = worklist.pop_back_val();
      for (mlir::Operation *user : v.getUsers()) {
        if (auto gather = llvm::dyn_cast<GatherOp>(user);
            gather && gather.getIndices() == v) {
          auto table = llvm::cast<mlir::RankedTensorType>(gather.getOperand().getType());
          return table.getDimSize(gather.getAxis());
        }
        if (llvm::isa<ReshapeOp>(user))
          worklist.push_back(user->getResult(0));
      }
    }
  }
  return 0;
}

/// The bytes of a function's arguments and results: the step's
/// parameters, optimizer state, inputs and outputs (slots, not the arena).
int64_t boundaryBytes(mlir::func::FuncOp fn) {
  int64_t bytes = 0;
  auto add = [&](mlir::Type type) {
    auto t = llvm::dyn_cast<mlir::RankedTensorType>(type);
    if (t && t.hasStaticShape())
      bytes += storageBytes(t);
  };
  for (mlir::Type t : fn.getArgumentTypes())
    add(t);
  for (mlir::Type t : fn.getResultTypes())
    add(t);
  return bytes;
}

/// trc-recompute's estimate and choices (module attribute trc.recompute_plan).
void readRecomputePlan(mlir::ModuleOp module, CompileOutcome &outcome) {
  auto plan = module->getAttrOfType<mlir::DictionaryAttr>(abi::kRecomputePlanAttr);
  if (!plan)
    return;
  if (auto peak = plan.getAs<mlir::IntegerAttr>("peak_after"))
    outcome.estimatedPeak = peak.getInt();
  outcome.recomputeChoices.clear();
  if (auto layers = plan.getAs<mlir::ArrayAttr>("layers"))
    for (mlir::Attribute layer : layers)
      if (auto choice = llvm::cast<mlir::DictionaryAttr>(layer).getAs<mlir::StringAttr>("choice"))
        outcome.recomputeChoices.push_back(choice.str());
}

/// The name of @main's argument `i` (its graph input) or result `i`.
std::string inputName(mlir::func::FuncOp main, unsigned i) {
  auto name = main.getArgAttrOfType<mlir::StringAttr>(i, trc::abi::kInputAttr);
  return name ? name.str() : "";
}
std::string outputName(mlir::func::FuncOp main, unsigned i) {
  auto name = main.getResultAttrOfType<mlir::StringAttr>(i, trc::abi::kOutputAttr);
  return name ? name.str() : "";
}

/// What the trainer checks row data against (TrainingModelInfo): the table
/// each integer input indexes, and a logits output [..., C] with the
/// integer input (not a token input) of its shape without C: the labels.
/// With an appended loss the logits are the first result and the labels
/// the loss's targets.
void describeModel(mlir::func::FuncOp main, const rt::TrainingBuild &build,
                   rt::TrainingModelInfo &info) {
  info.vocabSize = vocabularyOf(main, build.tokenInput);
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(main.getArgumentTypes()[i]);
    if (type && llvm::isa<mlir::IntegerType>(type.getElementType()))
      if (int64_t rows = vocabularyOf(main, inputName(main, i)))
        info.tableRows[inputName(main, i)] = rows;
  }
  if (main.getNumResults())
    info.firstOutput = outputName(main, 0);
  for (unsigned r = 0; r < main.getNumResults() && info.logitsOutput.empty(); ++r) {
    auto logits = llvm::dyn_cast<mlir::RankedTensorType>(main.getResultTypes()[r]);
    if (!logits || logits.getRank() < 1 || !llvm::isa<mlir::FloatType>(logits.getElementType()))
      continue;
    llvm::ArrayRef<int64_t> rows = logits.getShape().drop_back();
    if (!build.loss.empty()) { // the appended loss reads the first result
      if (r == 0 && logits.getRank() >= 2) {
        info.logitsOutput = outputName(main, 0);
        info.labelsInput = abi::kLossTargets;
        info.classes = logits.getShape().back();
      }
      continue;
    }
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      auto labels = llvm::dyn_cast<mlir::RankedTensorType>(main.getArgumentTypes()[i]);
      std::string name = inputName(main, i);
      if (labels && llvm::isa<mlir::IntegerType>(labels.getElementType()) &&
          labels.getShape() == rows && !info.tableRows.count(name)) {
        info.logitsOutput = outputName(main, r);
        info.labelsInput = name;
        info.classes = logits.getShape().back();
        break;
      }
    }
  }
}

/// An error unless @main's first result is a scalar loss (or a loss is added).
bool checkLoss(mlir::func::FuncOp main, const std::string &model, const rt::TrainingBuild &build,
               llvm::raw_ostream &diag) {
  if (!build.loss.empty() || main.getNumResults() == 0)
    return true;
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(main.getResultTypes()[0]);
  if (type && type.getRank() == 0)
    return true;
  auto name = main.getResultAttrOfType<mlir::StringAttr>(0, trc::abi::kOutputAttr);
  diag << "error: " << model << ": output '" << (name ? name.getValue() : "0") << "' ("
       << main.getResultTypes()[0]
       << ") is not a scalar loss; for a model that outputs logits pass "
          "--loss cross_entropy\n";
  return false;
}

/// Writes the .npy `file` as a serialized TensorProto `out` (what
/// ImportOptions::constantInputs reads); "" or the problem.
std::string npyAsTensorProto(const std::string &file, const std::string &out) {
  rt::StatusOr<rt::HostTensor> value = rt::readNpyFile(file);
  if (!value.ok())
    return std::string(value.status().message());
  const import::OnnxDType *type = import::findOnnxDType(value->dtype);
  onnx::TensorProto tensor;
  tensor.set_data_type(type ? type->onnxType : 0);
  for (int64_t d : value->shape)
    tensor.add_dims(d);
  tensor.set_raw_data(static_cast<const char *>(value->data()), value->byteSize());
  std::ofstream stream(out, std::ios::binary);
  if (!stream || !tensor.SerializeToOstream(&stream))
    return "cannot write " + out;
  return "";
}

/// Imports `model`. Inputs the import asks to be compile-time constants (a
/// Reshape's shape, Slice's starts, Tile's repeats...) that `valueFiles`
/// (name -> .npy) holds are bound to those values and the import repeats;
/// their names go to `specialized`.
mlir::OwningOpRef<mlir::ModuleOp>
importSpecialized(const std::string &model, mlir::MLIRContext &context, ImportOptions &options,
                  std::vector<InitializerChoice> &choices, ImportReport &report,
                  const std::map<std::string, std::string> *valueFiles,
                  std::vector<std::string> *specialized, llvm::raw_ostream &diag) {
  llvm::SmallString<128> dir;
  auto cleanup = llvm::make_scope_exit([&] {
    if (!dir.empty())
      llvm::sys::fs::remove_directories(dir);
  });
  while (true) {
    std::string diagnostics;
    llvm::raw_string_ostream attempt(diagnostics);
    choices.clear();
    auto module = importOnnxFile(model, &context, options, attempt, &choices, &report);
    bool bound = false;
    for (const std::string &name :
         module || !valueFiles ? std::vector<std::string>{} : report.neededConstants) {
      auto file = valueFiles->find(name);
      if (file == valueFiles->end() || options.constantInputs.count(name))
        continue;
      if (dir.empty())
        if (auto ec = llvm::sys::fs::createUniqueDirectory("trc-run-values", dir)) {
          diag << "error: cannot create a temporary folder: " << ec.message() << "\n";
          return nullptr;
        }
      std::string pb = (dir + "/" + std::to_string(options.constantInputs.size()) + ".pb").str();
      if (std::string problem = npyAsTensorProto(file->second, pb); !problem.empty()) {
        diag << "error: input '" << name << "': " << problem << "\n";
        return nullptr;
      }
      options.constantInputs[name] = pb;
      options.inputShapes.erase(name);
      specialized->push_back(name);
      bound = true;
    }
    if (!bound) {
      diag << diagnostics;
      return module;
    }
  }
}

/// Compiles `model` once (for training when `training` is set, with
/// `recompute` when given) into a fresh temporary folder. `evaluation`: a
/// forward program read as module.eval() reads the model
/// (ImportOptions::evaluation; --eval-data's), not as the graph says.
bool compile(const std::string &model,
             const std::map<std::string, std::vector<int64_t>> &inputShapes,
             const rt::TrainingBuild *training, const RecomputeOptions *recompute,
             const std::string &target, CompileOutcome &outcome, std::string &error,
             const std::map<std::string, std::string> *valueFiles = nullptr,
             std::vector<std::string> *specialized = nullptr, bool evaluation = false) {
  registerAllPasses();
  mlir::MLIRContext context;
  trc::loadAllDialects(context);

  llvm::raw_string_ostream diag(error);
  ImportOptions options;
  options.inputShapes = inputShapes;
  options.refuseFoldedParameters = training != nullptr; // nothing trains otherwise
  options.evaluation = evaluation;
  if (training) {
    options.frozenPatterns = training->freeze;
    options.trainablePatterns = training->trainable;
  }
  std::vector<InitializerChoice> choices;
  ImportReport imported;
  auto module = importSpecialized(model, context, options, choices, imported, valueFiles,
                                  specialized, diag);
  if (!module)
    return false;
  const RespecializeReport &respecialized = imported.respecialized;
  outcome.info.respecializedInputs = respecialized.inputs;
  outcome.info.rederivedConstants = static_cast<int64_t>(respecialized.constants.size());
  outcome.info.tracedShapes = respecialized.tracedShapes;
  outcome.info.trainingTensors.clear();
  outcome.info.frozenTensors.clear();
  for (const InitializerChoice &c : choices)
    ++(c.trains ? outcome.info.trainingTensors
                : outcome.info.frozenTensors)[describeInitializerReason(c.reason)];

  llvm::SmallString<128> dir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("trc-run", dir)) {
    diag << "error: cannot create a temporary folder: " << ec.message() << "\n";
    return false;
  }
  if (training) {
    auto main = module->lookupSymbol<mlir::func::FuncOp>("main");
    if (!main || !checkLoss(main, model, *training, diag)) {
      llvm::sys::fs::remove_directories(dir);
      return false;
    }
    describeModel(main, *training, outcome.info);
    mlir::PassManager pm(&context);
    TrainingPipelineOptions pipeline;
    std::string problem;
    if (!trainingPipeline(*training, pipeline, problem)) {
      diag << "error: " << problem << "\n";
      llvm::sys::fs::remove_directories(dir);
      return false;
    }
    if (recompute)
      pipeline.recompute = *recompute;
    buildTrainingPipeline(pm, pipeline);
    if (mlir::failed(pm.run(*module))) {
      llvm::sys::fs::remove_directories(dir);
      return false;
    }
    readRecomputePlan(*module, outcome);
    if (auto step = module->lookupSymbol<mlir::func::FuncOp>("train_step"))
      outcome.stateBytes = boundaryBytes(step);
  }
  CompileOptions compile;
  compile.target = target;
  if (training) {
    // A pipeline-split step compiles into a folder of stage programs.
    compile.entry = training->pipeline ? "main" : "train_step";
    if (training->initWeights) {
      compile.weights = "init";
      compile.seed = training->initSeed;
    }
  }
  std::string log;
  llvm::raw_string_ostream logStream(log);
  std::string out = (dir + "/artifact").str();
  CompileReport compiled;
  if (mlir::failed(compileToArtifact(*module, compile, out, logStream, nullptr, &compiled))) {
    llvm::sys::fs::remove_directories(dir);
    diag << log;
    return false;
  }
  outcome.artifactDir = out;
  outcome.memory = compiled.programs;
  for (const MemoryPlanSummary &program : compiled.programs) // the largest is the step's
    outcome.arenaBytes = std::max(outcome.arenaBytes, program.arenaBytes);
  return true;
}
} // namespace

bool compileOnnxInProcess(const std::string &model,
                          const std::map<std::string, std::vector<int64_t>> &inputShapes,
                          const std::string &target, std::string &artifactDir,
                          std::string &error, const std::map<std::string, std::string> *valueFiles,
                          std::vector<std::string> *specialized) {
  CompileOutcome outcome;
  if (!compile(model, inputShapes, nullptr, nullptr, target, outcome, error, valueFiles,
               specialized))
    return false;
  artifactDir = outcome.artifactDir;
  return true;
}

bool compileOnnxForTraining(const std::string &model,
                            const std::map<std::string, std::vector<int64_t>> &inputShapes,
                            const rt::TrainingBuild &build, const std::string &target,
                            std::string &artifactDir, rt::TrainingModelInfo &info,
                            std::string &error) {
  CompileOutcome outcome;
  auto once = [&](const RecomputeOptions *recompute, CompileOutcome &out, std::string &err) {
    return compile(model, inputShapes, &build, recompute, target, out, err);
  };
  bool ok;
  if (build.recompute == "auto") {
    ok = compileWithRecomputeAuto(build, once, outcome, error);
  } else {
    RecomputeOptions fixed;
    fixed.policy = build.recompute.empty() ? "none" : build.recompute;
    ok = once(&fixed, outcome, error); // none too: the same passes as trc-opt's pipeline
  }
  if (!ok)
    return false;
  // What the step's memory costs (trc-opt prints the same lines).
  for (const MemoryPlanSummary &program : outcome.memory)
    std::fprintf(stderr, "trc-run: %s\n", describeMemoryPlan(program).c_str());
  artifactDir = outcome.artifactDir;
  info = outcome.info;
  return true;
}

rt::StatusOr<std::vector<rt::GraphInput>>
InProcessStepCompiler::listGraphInputs(const std::string &model) {
  std::vector<GraphInputInfo> inputs;
  std::string error;
  if (!trc::listGraphInputs(model, inputs, error))
    return rt::Status::error(error);
  std::vector<rt::GraphInput> out;
  for (const GraphInputInfo &in : inputs)
    out.push_back({in.name, in.isInteger, in.dtype, in.dims, in.shiftedBy});
  return out;
}

rt::StatusOr<rt::CompiledStep> InProcessStepCompiler::compileTrainingStep(
    const std::string &model, const std::map<std::string, std::vector<int64_t>> &shapes,
    const rt::TrainingBuild &build, const std::string &target) {
  std::string error;
  rt::CompiledStep step;
  if (compileOnnxForTraining(model, shapes, build, target, step.artifactDir, step.info, error))
    return step;
  std::fputs(error.c_str(), stderr);
  return rt::Status::reported();
}

rt::StatusOr<std::string> InProcessStepCompiler::compileForward(
    const std::string &model, const std::map<std::string, std::vector<int64_t>> &shapes,
    const std::string &target) {
  std::string error;
  CompileOutcome outcome;
  if (compile(model, shapes, nullptr, nullptr, target, outcome, error, nullptr, nullptr,
              /*evaluation=*/true))
    return outcome.artifactDir;
  std::fputs(error.c_str(), stderr);
  return rt::Status::reported();
}

rt::Status InProcessStepCompiler::checkExportTarget(const std::string &model,
                                                    const std::string &outPath) {
  return trc::checkExportTarget(model, outPath);
}

rt::Status InProcessStepCompiler::exportOnnx(const std::string &model, const std::string &outPath,
                                             const rt::TrainedWeights &weights) {
  return exportTrainedOnnx(model, outPath, weights);
}

rt::StatusOr<std::map<std::string, std::string>>
InProcessStepCompiler::modelMetadata(const std::string &model) {
  return readModelMetadata(model);
}

} // namespace trc
