//===- StageWork.h - count a staged training step's work --------*- C++ -*-===//
//
// summarizeStageWork counts what each stage of a training step does in each
// phase (trc/Plan/CompiledWork.h), with the ops placed as
// trc-pipeline-split would place them (StageHomes.h). Tagging every layer
// as its own stage (trc-pipeline-stages with as many stages as layers,
// balanced by layers) and running no split gives the per-layer work of a
// model; the planner prices that instead of a formula.
// Products: trc.dot_general by its dimensions (batch x m x k by k x n);
// trc.attention as its two products and trc.attention_grad as five
// (scores and probabilities again, dP, dV, dQ, dK). Collectives: their
// kind, group and the larger of operand and result bytes. Other kernels:
// trc/Analysis/FusionCostModel.h's unfused bytes.
// Preconditions: as findStageHomes; shapes are static.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PARALLEL_STAGEWORK_H
#define TRC_PARALLEL_STAGEWORK_H

#include "trc/Parallel/StageHomes.h"
#include "trc/Plan/CompiledWork.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace trc::parallel {

plan::CompiledWork summarizeStageWork(mlir::func::FuncOp grad, const StageHomes &homes);

} // namespace trc::parallel

#endif // TRC_PARALLEL_STAGEWORK_H
