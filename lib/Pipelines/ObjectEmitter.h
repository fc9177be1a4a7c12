//===- ObjectEmitter.h - LLVM dialect -> shared object ----------*- C++ -*-===//
//
// Translates an LLVM-dialect module to LLVM IR, optimizes it for the chosen
// CPU (loop vectorization included) and links it into a shared object with
// the system C compiler driver (`cc -shared`, libm for math functions).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_PIPELINES_OBJECTEMITTER_H
#define TRC_LIB_PIPELINES_OBJECTEMITTER_H

#include "trc/Pipelines/Pipelines.h"

namespace trc {

/// Stages (translate, optimize, codegen, link) are timed under `timing`.
mlir::LogicalResult emitSharedObject(mlir::ModuleOp module, const CompileOptions &options,
                                     llvm::StringRef soPath, std::string &error,
                                     mlir::TimingScope &timing);

} // namespace trc

#endif
