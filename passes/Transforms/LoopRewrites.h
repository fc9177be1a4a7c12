//===- LoopRewrites.h - helpers of the CPU loop-nest passes ------*- C++ -*-===//
//
// Shared by trc-hoist-parallel-loops, trc-vectorizable-loops and
// trc-fuse-row-loops: comparing parallel loops' iteration spaces, whether a
// value is defined outside a loop, and copying a loop body into another
// loop. Header-only; no state.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_TRANSFORMS_LOOPREWRITES_H
#define TRC_PASSES_TRANSFORMS_LOOPREWRITES_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"

namespace trc {

/// True when `value` is defined outside `op` (so it may be used above it).
inline bool definedOutside(mlir::Value value, mlir::Operation *op) {
  return !op->isAncestor(value.getParentRegion()->getParentOp());
}

/// Clones `body`'s ops but its terminator before `before`, through `map`
/// (which maps the old loop's induction variables to the new ones).
inline void cloneBodyBefore(mlir::Block *body, mlir::Operation *before, mlir::IRMapping &map) {
  mlir::OpBuilder b(before);
  for (mlir::Operation &op : body->without_terminator())
    b.clone(op, map);
}

/// Whether two parallel loops run over the same rows (equal bounds and
/// steps, compared as SSA values or as constants).
inline bool sameIterationSpace(mlir::scf::ParallelOp a, mlir::scf::ParallelOp b) {
  if (a.getNumLoops() != b.getNumLoops())
    return false;
  auto equal = [](mlir::ValueRange x, mlir::ValueRange y) {
    for (auto [u, v] : llvm::zip_equal(x, y)) {
      std::optional<int64_t> cu = mlir::getConstantIntValue(u), cv = mlir::getConstantIntValue(v);
      if (u != v && (!cu || !cv || *cu != *cv))
        return false;
    }
    return true;
  };
  return equal(a.getLowerBound(), b.getLowerBound()) &&
         equal(a.getUpperBound(), b.getUpperBound()) && equal(a.getStep(), b.getStep());
}

} // namespace trc

#endif // TRC_PASSES_TRANSFORMS_LOOPREWRITES_H
