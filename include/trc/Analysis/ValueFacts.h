//===- ValueFacts.h - small facts about values and ops ----------*- C++ -*-===//
//
// What several analyses and passes ask of a function's values: a tensor's
// bytes, the values an op reads (its regions' captures included), the
// top-level op of a block that a nested user belongs to, and the ONNX node
// an op came from. One definition each, shared by the layer, pipeline,
// recomputation, profiling, anomaly and printing code.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ANALYSIS_VALUEFACTS_H
#define TRC_ANALYSIS_VALUEFACTS_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"

namespace trc::analysis {

/// The first name a location carries: the ONNX node's (the importer names
/// each op's location after its node; VJPs keep their op's); "" if none.
std::string nodeOf(mlir::Location loc);

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
