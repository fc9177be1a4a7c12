//===- ValueFacts.h - small facts about values and ops ----------*- C++ -*-===//
//
// What several analyses and passes ask of a function's values: a tensor's
// bytes, the values an op reads (its regions' captures included), and the
// top-level op of a block that a nested user belongs to. One definition
// each, shared by the layer, pipeline, recomputation and printing code.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ANALYSIS_VALUEFACTS_H
#define TRC_ANALYSIS_VALUEFACTS_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"

namespace trc::analysis {

/// The bytes of a statically shaped ranked tensor (i1 elements take one
/// byte, as stored); 0 for anything else.
int64_t tensorBytes(mlir::Type type);

/// The values `op` reads: its operands and, for an op with regions, the
/// values its regions capture from above.
llvm::SmallVector<mlir::Value> inputsOf(mlir::Operation &op);

/// The op of `body` that `user` is or is nested in (null if none).
mlir::Operation *topLevelIn(mlir::Operation *user, mlir::Block &body);

} // namespace trc::analysis

#endif // TRC_ANALYSIS_VALUEFACTS_H
