//===- ParallelLoopSpace.h - comparing scf.parallel iteration spaces -*- C++ -*-===//
//
// Shared by trc-vectorizable-loops and trc-fuse-row-loops: whether two
// parallel loops run over the same rows (equal bounds and steps, compared
// as SSA values or as constants).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_TRANSFORMS_PARALLELLOOPSPACE_H
#define TRC_PASSES_TRANSFORMS_PARALLELLOOPSPACE_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

namespace trc {

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

#endif // TRC_PASSES_TRANSFORMS_PARALLELLOOPSPACE_H
