//===- CompileInProcess.cpp - trc-run MODEL.onnx: compile, then run ---------===//
#include "CompileInProcess.h"

#include "trc/Dialect/Trc.h"
#include "trc/Import/OnnxImporter.h"
#include "trc/Passes.h"
#include "trc/Pipelines/Pipelines.h"

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
bool compile(const std::string &model,
             const std::map<std::string, std::vector<int64_t>> &inputShapes,
             const std::string &trainingPipeline, const std::string &target,
             std::string &artifactDir, std::string &error) {
  static bool registered = [] {
    mlir::registerAllPasses();
    registerTrcPasses();
    return true;
  }();
  (void)registered;
  mlir::DialectRegistry registry;
  registry.insert<TrcDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
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
  if (!trainingPipeline.empty()) {
    mlir::PassManager pm(&context);
    if (mlir::failed(mlir::parsePassPipeline(trainingPipeline, pm, diag)) ||
        mlir::failed(pm.run(*module)))
      return false;
  }
  CompileOptions compile;
  compile.target = target;
  if (!trainingPipeline.empty())
    compile.entry = "train_step";
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
  return compile(model, inputShapes, "", target, artifactDir, error);
}

bool compileOnnxForTraining(const std::string &model,
                            const std::map<std::string, std::vector<int64_t>> &inputShapes,
                            const std::string &trainStepOptions, const std::string &target,
                            std::string &artifactDir, std::string &error) {
  std::string pipeline = "trc-parameters-to-arguments, trc-autodiff, "
                         "trc-build-train-step{" +
                         trainStepOptions + "}";
  return compile(model, inputShapes, pipeline, target, artifactDir, error);
}

} // namespace trc
