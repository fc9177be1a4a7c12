//===- ObjectEmitter.cpp - LLVM dialect -> shared object --------------------===//
#include "ObjectEmitter.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

namespace trc {

namespace {
std::unique_ptr<llvm::TargetMachine> hostTargetMachine(const CompileOptions &options,
                                                       std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  auto builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder) {
    error = llvm::toString(builder.takeError());
    return nullptr;
  }
  if (options.cpu != "native") {
    builder->setCPU(options.cpu);
    builder->getFeatures() = llvm::SubtargetFeatures();
  }
  builder->setRelocationModel(llvm::Reloc::PIC_);
  builder->setCodeGenOptLevel(options.optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive
                                                    : llvm::CodeGenOptLevel::Default);
  auto tm = builder->createTargetMachine();
  if (!tm) {
    error = llvm::toString(tm.takeError());
    return nullptr;
  }
  return std::move(*tm);
}
} // namespace

LogicalResult emitSharedObject(ModuleOp module, const CompileOptions &options,
                               llvm::StringRef soPath, std::string &error,
                               TimingScope &timing) {
  TimingScope translateTiming = timing.nest("translate to LLVM IR");
  registerBuiltinDialectTranslation(*module->getContext());
  registerLLVMDialectTranslation(*module->getContext());
  registerOpenMPDialectTranslation(*module->getContext());
  llvm::LLVMContext llvmContext;
  auto llvmModule = translateModuleToLLVMIR(module, llvmContext, "trc_program");
  if (!llvmModule) {
    error = "translation to LLVM IR failed";
    return failure();
  }
  auto tm = hostTargetMachine(options, error);
  if (!tm)
    return failure();
  llvmModule->setDataLayout(tm->createDataLayout());
  llvmModule->setTargetTriple(tm->getTargetTriple());
  translateTiming.stop();
  TimingScope optimizeTiming = timing.nest("optimize");
  if (auto err = makeOptimizingTransformer(options.optLevel, 0, tm.get())(llvmModule.get())) {
    error = "LLVM optimization failed: " + llvm::toString(std::move(err));
    return failure();
  }
  optimizeTiming.stop();

  TimingScope codegenTiming = timing.nest("codegen");
  llvm::SmallString<128> objectPath;
  if (auto ec = llvm::sys::fs::createTemporaryFile("trc-program", "o", objectPath)) {
    error = "cannot create a temporary object file: " + ec.message();
    return failure();
  }
  llvm::FileRemover removeObject(objectPath);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec);
    if (ec) {
      error = "cannot write " + objectPath.str().str() + ": " + ec.message();
      return failure();
    }
    llvm::legacy::PassManager codegen;
    if (tm->addPassesToEmitFile(codegen, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
      error = "the target cannot emit object files";
      return failure();
    }
    codegen.run(*llvmModule);
    // A full disk: an error, not the stream's fatal error at destruction.
    os.close();
    if (std::error_code written = os.error()) {
      os.clear_error();
      error = "cannot write the object file " + objectPath.str().str() + ": " + written.message();
      return failure();
    }
  }
  codegenTiming.stop();
  TimingScope linkTiming = timing.nest("link");

  auto cc = llvm::sys::findProgramByName("cc");
  if (!cc) {
    error = "no C compiler driver 'cc' on PATH to link the shared object";
    return failure();
  }
  std::string ccPath = *cc, out = soPath.str(), obj = objectPath.str().str();
  // libomp (LLVM's OpenMP runtime) runs the parallel loop nests.
  std::string ompDir = TRC_LIBOMP_DIR, rpath = "-Wl,-rpath," + ompDir, libDir = "-L" + ompDir;
  llvm::SmallVector<llvm::StringRef> args{ccPath, "-shared", "-o", out, obj,
                                          libDir, rpath, "-lomp", "-lm"};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(ccPath, args, std::nullopt, {}, 0, 0, &message);
  if (rc != 0) {
    error = "linking the shared object failed (" + ccPath + " exited with " +
            std::to_string(rc) + (message.empty() ? "" : ": " + message) + ")";
    return failure();
  }
  return success();
}

} // namespace trc
