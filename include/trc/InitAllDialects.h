//===- InitAllDialects.h - every dialect a trc tool works with --*- C++ -*-===//
//
// One registration for every tool and test that builds an MLIRContext for
// trc IR (trc-opt, trc-run's in-process compiler, trc-onnx-conformance, the
// unit tests): the trc dialect, the op interface models that carry its rules
// (VJP rules: trc::autodiff::registerVjpRules), and MLIR's dialects and
// extensions (lowered trc IR is linalg, memref, gpu, llvm...).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_INITALLDIALECTS_H
#define TRC_INITALLDIALECTS_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

namespace trc {

/// Adds the trc dialect with its rule models, and every upstream dialect and
/// extension, to `registry`.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers them with `context` and loads them all (a context that
/// imports, compiles and prints trc IR: the in-process compiler's, the
/// planner's).
void loadAllDialects(mlir::MLIRContext &context);

} // namespace trc

#endif // TRC_INITALLDIALECTS_H
