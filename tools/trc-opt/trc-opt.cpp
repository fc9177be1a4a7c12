//===- trc-opt.cpp - the trc pass driver ------------------------------------===//
//
// mlir-opt with the trc dialects and passes, that also reads .onnx models:
//   trc-opt model.onnx [--dim batch=8] [pass flags] [-o out.mlir]
// imports the model and runs the passes on it; any other input is MLIR text
// or bytecode handled exactly as mlir-opt does (split-input-file,
// verify-diagnostics, ...). Output is written only when everything succeeds.
//
//===----------------------------------------------------------------------===//
#include "trc/AnalysisPasses.h"
#include "trc/Import/OnnxImporter.h"
#include "trc/InitAllDialects.h"
#include "trc/InitAllPasses.h"
#include "trc/Passes.h"
#include "trc/Pipelines/Pipelines.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cstdlib>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory importCategory("ONNX import options (for .onnx inputs)");
static cl::list<std::string> dimSpecs(
    "dim", cl::desc("size of a symbolic dimension: --dim batch=8[,seq=256]"),
    cl::value_desc("NAME=N"), cl::cat(importCategory));
static cl::list<std::string> inputShapeSpecs(
    "input-shape", cl::desc("whole shape of a graph input: --input-shape ids=8x256"),
    cl::value_desc("NAME=AxB"), cl::cat(importCategory));
static cl::list<std::string> constantInputSpecs(
    "constant-input",
    cl::desc("bind a graph input to a compile-time value (a serialized TensorProto)"),
    cl::value_desc("NAME=FILE.pb"), cl::cat(importCategory));
static cl::list<std::string> freezePatterns(
    "freeze", cl::desc("freeze the initializers whose whole names match this regex"),
    cl::value_desc("REGEX"), cl::cat(importCategory));
static cl::list<std::string> trainablePatterns(
    "trainable",
    cl::desc("train the float initializers whose whole names match this regex (before --freeze)"),
    cl::value_desc("REGEX"), cl::cat(importCategory));
static cl::opt<bool> importEvaluation(
    "import-evaluation",
    cl::desc("import as module.eval(): Dropout is the identity, BatchNormalization uses its "
             "running statistics, whatever training_mode says"),
    cl::cat(importCategory));
static cl::opt<bool> noOnnxShapeInference(
    "no-onnx-shape-inference",
    cl::desc("skip the cross-check against ONNX's shape inference"),
    cl::cat(importCategory));

static cl::opt<std::string> trcCompile(
    "trc-compile",
    cl::desc("after the passes, compile into an artifact folder at -o: "
             "\"target=cpu|cuda [cpu=NAME] [opt=0..3] [entry=FUNCTION] "
             "[emulate=cuda] [weights=values|init] [seed=N]\" (emulate=cuda with "
             "target=cpu runs the CUDA pipeline's kernels as CPU loops)"),
    cl::value_desc("OPTIONS"));

static bool isOnnxFile(llvm::StringRef path) {
  return path.ends_with(".onnx") || path.ends_with(".pb");
}

// Reads an .onnx model (imported) or MLIR text/bytecode (parsed).
static OwningOpRef<ModuleOp> loadInput(const std::string &inputFilename,
                                       const trc::ImportOptions &options,
                                       MLIRContext &context) {
  if (isOnnxFile(inputFilename))
    return trc::importOnnxFile(inputFilename, &context, options, llvm::errs());
  return parseSourceFile<ModuleOp>(inputFilename, &context);
}

static int importAndRun(const std::string &inputFilename,
                        const std::string &outputFilename, DialectRegistry &registry) {
  trc::ImportOptions options;
  std::string error;
  for (const auto &spec : dimSpecs)
    if (!trc::parseDimSpec(spec, options, error)) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
  for (const auto &spec : inputShapeSpecs)
    if (!trc::parseInputShapeSpec(spec, options, error)) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
  for (const auto &spec : constantInputSpecs)
    if (!trc::parseConstantInputSpec(spec, options, error)) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
  options.frozenPatterns.assign(freezePatterns.begin(), freezePatterns.end());
  options.trainablePatterns.assign(trainablePatterns.begin(), trainablePatterns.end());
  options.onnxShapeInference = !noOnnxShapeInference;
  options.evaluation = importEvaluation;

  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  MLIRContext context(registry);
  // Without a handler MLIR prints errors only: show warnings and remarks
  // too, in the same `LOC: warning: ...` form (errors keep the default).
  ScopedDiagnosticHandler warnings(&context, [](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      return failure();
    llvm::errs() << diag.getLocation() << ": "
                 << (diag.getSeverity() == DiagnosticSeverity::Warning ? "warning: " : "remark: ")
                 << diag << "\n";
    return success();
  });
  context.loadAllAvailableDialects();
  trc::CompileOptions compileOptions;
  if (!trcCompile.empty() &&
      !trc::parseCompileOptions(trcCompile, compileOptions, error)) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  if (!trcCompile.empty() && outputFilename == "-") {
    llvm::errs() << "error: --trc-compile writes an artifact folder: pass -o OUT\n";
    return 1;
  }
  // -mlir-timing: the import, the command line's passes and each stage of
  // --trc-compile, in one report.
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();
  TimingScope importTiming = timing.nest("import");
  auto module = loadInput(inputFilename, options, context);
  if (!module)
    return 1;
  importTiming.stop();

  PassManager pm(&context, ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  if (failed(applyPassManagerCLOptions(pm)) || failed(config.setupPassPipeline(pm)))
    return 1;
  pm.enableVerifier(config.shouldVerifyPasses());
  TimingScope passTiming = timing.nest("command-line passes");
  pm.enableTiming(passTiming);
  if (failed(pm.run(*module)))
    return 1;
  passTiming.stop();
  if (!trcCompile.empty()) {
    TimingScope compileTiming = timing.nest("trc-compile");
    return failed(trc::compileToArtifact(*module, compileOptions, outputFilename,
                                         llvm::errs(), &compileTiming));
  }

  auto output = openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  if (config.shouldEmitBytecode()) {
    if (failed(writeBytecodeToFile(*module, output->os())))
      return 1;
  } else {
    module->print(output->os(), OpPrintingFlags());
    output->os() << "\n";
  }
  output->os().flush();
  if (std::error_code ec = output->os().error()) {
    // A full disk: say so, and leave no partial file (not kept: removed).
    llvm::errs() << "error: " << outputFilename << ": cannot write the output: " << ec.message()
                 << "\n";
    output->os().clear_error();
    return 1;
  }
  output->keep();
  return 0;
}

// The output stream of the MLIR-input path (MlirOptMain) reports a write
// failure as a fatal error: make it an `error:` line naming the output.
static std::string fatalOutputName;
static void reportFatalAsError(void *, const char *reason, bool) {
  llvm::errs() << "error: " << fatalOutputName << ": " << reason << "\n";
  std::_Exit(1);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  DialectRegistry registry;
  // Upstream dialects and passes too: lowered trc IR is linalg, memref, llvm...
  trc::registerAllDialects(registry);
  trc::registerAllPasses();
  trc::registerTrcAnalysisPasses();

  auto [inputFilename, outputFilename] =
      registerAndParseCLIOptions(argc, argv, "trc-opt: the trc compiler driver", registry);
  if (isOnnxFile(inputFilename) || !trcCompile.empty())
    return importAndRun(inputFilename, outputFilename, registry);
  fatalOutputName = outputFilename == "-" ? "<stdout>" : outputFilename;
  llvm::install_fatal_error_handler(reportFatalAsError);
  return asMainReturnCode(MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
