//===- StageHomes.h - the stage and phase of every op of @main_grad -*- C++ -*-===//
//
// Where each op of a staged training step runs (trc-pipeline-split outlines
// by it; summarizeStageWork prices by it). trc-pipeline-stages tags the
// forward ops with their stage and trc-autodiff the backward ops it makes
// for them (trc.stage, trc.backward); an untagged op a later pass added
// (trc-partition's collectives and masked gathers) runs with the latest op
// it reads; an untagged op that reads nothing staged (masks, positions,
// constants) has no home: every program that needs it computes it.
// A stage's backward op is B (input-gradient work) when another stage reads
// a result, or a B op of its stage does; the others only lead to the
// stage's parameter gradients and are W (zero-bubble schedules defer them).
// Preconditions: `grad` has one block; trc-pipeline-stages and trc-autodiff
// have run.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PARALLEL_STAGEHOMES_H
#define TRC_PARALLEL_STAGEHOMES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <cstdint>

namespace trc::parallel {

enum class StagePhase { Forward = 0, Backward = 1, Weights = 2 };
constexpr int64_t kStagePhases = 3;

struct StageHome {
  int64_t stage = -1; // -1: no home (computed where used)
  StagePhase phase = StagePhase::Forward;
};

struct StageHomes {
  llvm::DenseMap<mlir::Operation *, StageHome> of;
  // Forward ops that read only parameters and constants (weight
  // transposes): a later program of the stage computes them again.
  llvm::DenseSet<mlir::Operation *> parameterOnly;
  StageHome lookup(mlir::Operation *op) const { return op ? of.lookup(op) : StageHome(); }
};

/// The homes of `grad`'s ops. An op whose stage is `stages` or more is an
/// error on that op (failure).
mlir::FailureOr<StageHomes> findStageHomes(mlir::func::FuncOp grad, int64_t stages);

} // namespace trc::parallel

#endif // TRC_PARALLEL_STAGEHOMES_H
