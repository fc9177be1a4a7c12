//===- CompileInProcess.cpp - trc-run MODEL.onnx: compile, then run ---------===//
#include "CompileInProcess.h"

#include "trc/Dialect/Trc.h"
#include "trc/Import/OnnxImporter.h"
#include "trc/InitAllDialects.h"
#include "trc/Passes.h"
#include "trc/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace trc {

namespace {

/// The passes that turn the imported forward graph into @train_step.
std::string trainingPipeline(const TrainingBuild &build) {
  std::string p;
  if (build.loss == "cross_entropy")
    p += "trc-append-loss{ignore-index=" + std::to_string(build.ignoreIndex) + "}, ";
  p += "trc-parameters-to-arguments, trc-lower-dropout, ";
  if (build.fuseAttention)
    p += "func.func(trc-fuse-attention), ";
  if (build.precision == "bf16")
    p += "trc-mixed-precision{type=bf16}, ";
  else if (build.precision == "fp16")
    p += "trc-mixed-precision{type=f16 loss-scale=true}, ";
  p += "trc-autodiff, ";
  if (!build.dataParallelOptions.empty())
    p += "trc-data-parallel{" + build.dataParallelOptions + "}, ";
  return p + "trc-build-train-step{" + build.trainStepOptions + "}";
}

/// The rows of the table that token input `name` indexes (an embedding
/// lookup reading the argument directly or through reshapes), or 0.
int64_t vocabularyOf(mlir::func::FuncOp main, const std::string &name) {
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto input = main.getArgAttrOfType<mlir::StringAttr>(i, "trc.input");
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

/// An error unless @main's first result is a scalar loss (or a loss is added).
bool checkLoss(mlir::func::FuncOp main, const std::string &model, const TrainingBuild &build,
               llvm::raw_ostream &diag) {
  if (!build.loss.empty() || main.getNumResults() == 0)
    return true;
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(main.getResultTypes()[0]);
  if (type && type.getRank() == 0)
    return true;
  auto name = main.getResultAttrOfType<mlir::StringAttr>(0, "trc.output");
  diag << "error: " << model << ": output '" << (name ? name.getValue() : "0") << "' ("
       << main.getResultTypes()[0]
       << ") is not a scalar loss; for a model that outputs logits pass "
          "--loss cross_entropy\n";
  return false;
}

bool compile(const std::string &model,
             const std::map<std::string, std::vector<int64_t>> &inputShapes,
             const TrainingBuild *training, const std::string &target,
             std::string &artifactDir, TrainingModelInfo *info, std::string &error) {
  static bool registered = [] {
    mlir::registerAllPasses();
    registerTrcPasses();
    return true;
  }();
  (void)registered;
  mlir::DialectRegistry registry;
  trc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::raw_string_ostream diag(error);
  ImportOptions options;
  options.inputShapes = inputShapes;
  auto module = importOnnxFile(model, &context, options, diag);
  if (!module)
    return false;

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
    info->vocabSize = vocabularyOf(main, training->tokenInput);
    mlir::PassManager pm(&context);
    if (mlir::failed(mlir::parsePassPipeline(trainingPipeline(*training), pm, diag)) ||
        mlir::failed(pm.run(*module))) {
      llvm::sys::fs::remove_directories(dir);
      return false;
    }
  }
  CompileOptions compile;
  compile.target = target;
  if (training) {
    compile.entry = "train_step";
    if (training->initWeights) {
      compile.weights = "init";
      compile.seed = training->initSeed;
    }
  }
  std::string log;
  llvm::raw_string_ostream logStream(log);
  std::string out = (dir + "/artifact").str();
  if (mlir::failed(compileToArtifact(*module, compile, out, logStream))) {
    llvm::sys::fs::remove_directories(dir);
    diag << log;
    return false;
  }
  artifactDir = out;
  return true;
}
} // namespace

bool compileOnnxInProcess(const std::string &model,
                          const std::map<std::string, std::vector<int64_t>> &inputShapes,
                          const std::string &target, std::string &artifactDir,
                          std::string &error) {
  return compile(model, inputShapes, nullptr, target, artifactDir, nullptr, error);
}

bool compileOnnxForTraining(const std::string &model,
                            const std::map<std::string, std::vector<int64_t>> &inputShapes,
                            const TrainingBuild &build, const std::string &target,
                            std::string &artifactDir, TrainingModelInfo &info,
                            std::string &error) {
  return compile(model, inputShapes, &build, target, artifactDir, &info, error);
}

} // namespace trc
