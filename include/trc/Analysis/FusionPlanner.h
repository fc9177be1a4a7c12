//===- FusionPlanner.h - which ops of a function run as one kernel -*- C++ -*-===//
//
// The decisions of trc-fuse, separate from the rewriting: given the body of a
// function, groups its ops into kernels (see FuseOps.cpp for the phases).
// The plan only reads the IR.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ANALYSIS_FUSIONPLANNER_H
#define TRC_ANALYSIS_FUSIONPLANNER_H

#include "trc/Analysis/FusionCostModel.h"

#include "trc/Dialect/Trc.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>
#include <vector>

namespace trc::fusion {

struct FusionOptions {
  CostParameters cost;
  /// Merge groups that read the same large input and are otherwise unrelated.
  bool siblings = true;
  /// Give matrix products their cuBLASLt epilogue (alpha, bias, residual, gelu).
  bool matmulEpilogues = true;
  /// Recompute cheap producers in consumer groups when that saves bytes.
  bool duplicate = true;
  /// The longest producer chain one duplication copies.
  unsigned maxDuplicateOps = 8;
};

/// One kernel of a plan that fuses several ops.
struct PlannedFusion {
  FusionKind kind = FusionKind::Elementwise;
  /// The ops of the body in block order: the group's own ops, producers it
  /// recomputes, and the broadcasts, iotas and splat constants it copies.
  llvm::SmallVector<mlir::Operation *> bodyOps;
  /// Values of bodyOps used outside the group, in block order.
  llvm::SmallVector<mlir::Value> outputs;
  /// matmul_epilogue only.
  std::string epilogue = "none";
  std::optional<double> alpha;
  bool accumulate = false;
  bool geluAux = false;
};

struct FusionPlan {
  std::vector<PlannedFusion> fusions;
  /// Ops that go away: the own ops of every fusion, and ops no one reads any
  /// more because every reader recomputes them.
  llvm::SmallVector<mlir::Operation *> erased;
};

/// Plans the fusion of the top-level ops of `block`. Ops with regions
/// (including existing trc.fusion ops) are left alone.
FusionPlan planFusion(mlir::Block &block, const FusionOptions &options);

/// The ops of a decomposed or composite GELU applied to `x` (the ops between
/// x and the result, in block order; the last one computes it), recognized
/// by evaluating candidate subgraphs at sample points against both GELU
/// definitions. Intermediates must have no uses outside the ops, except the
/// uses `ignoreUse` accepts; `x` itself may have other uses.
struct GeluMatch {
  llvm::SmallVector<mlir::Operation *> ops;
  bool tanhApproximation = false;
};
std::optional<GeluMatch> matchGelu(mlir::Value x,
                                   llvm::function_ref<bool(mlir::OpOperand &)> ignoreUse);

} // namespace trc::fusion

#endif // TRC_ANALYSIS_FUSIONPLANNER_H
