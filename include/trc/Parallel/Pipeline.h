//===- Pipeline.h - pipeline stages of a training step ----------*- C++ -*-===//
//
// The compiler half of pipeline parallelism (DESIGN.md "Pipeline schedules
// are data"): which forward op belongs to which stage (assignStages, run by
// trc-pipeline-stages before autodiff, which carries each op's stage to the
// backward ops its VJP creates), and the attribute names trc-pipeline-split
// reads to outline @main_grad into per-stage programs.
//
// Stages are cut only where the forward graph passes the fewest activations
// (one, the residual stream, between transformer layers): "layer
// boundaries". Values that depend on no parameter (masks, positions) and
// constants belong to no stage: every stage that uses one computes it.
// Preconditions: @main has one block and takes its parameters as arguments.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PARALLEL_PIPELINE_H
#define TRC_PARALLEL_PIPELINE_H

#include "trc/Abi/AttrNames.h"
#include "trc/Analysis/Layers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace trc::parallel {

// On ops of @main and @main_grad: the stage (i64) the op runs in; on ops
// trc-autodiff creates for a staged op: the op is backward work; module
// attribute: {stages = S, virtual = V} as trc-pipeline-stages chose
// (trc/Abi/AttrNames.h).
using abi::kBackwardAttr;
using abi::kPipelineAttr;
using abi::kStageAttr;

// Cost: the largest stage's cost is smallest; Layers: attention layers per
// stage, cost breaking ties; Pieces: every piece between layer boundaries
// is a stage of its own (the `stages` asked for are ignored; the planner's
// per-piece count, trc/Parallel/StageWork.h).
enum class StageBalance { Cost, Layers, Pieces };

/// The cost of one op in the balance (trc/Analysis/Layers.h).
using analysis::isLayerCore;
using analysis::opCost;

/// One stage's share of the forward graph.
struct StageSummary {
  int64_t ops = 0;
  double cost = 0;          // opCost summed
  int64_t layers = 0;       // attention cores (softmax or trc.attention)
  int64_t paramBytes = 0;   // parameters it reads
  int64_t sendBytes = 0;    // activations it passes to later stages
};

/// The stage of every op of `main` that depends on a trainable parameter
/// (others have none). The ops that also depend on a graph input form the
/// chain that is cut at layer boundaries into `stages` pieces minimizing
/// the largest stage's cost (`Cost`), or its attention layers, cost
/// breaking ties (`Layers`). The ops on parameters alone (weight
/// transposes), listed in `parameterOnly` in program order, take the lowest
/// stage of their users. Fails with `error` when there are fewer layer
/// boundaries than cuts.
mlir::LogicalResult assignStages(mlir::func::FuncOp main, int64_t stages, StageBalance balance,
                                 llvm::DenseMap<mlir::Operation *, int64_t> &stageOf,
                                 llvm::SmallVectorImpl<mlir::Operation *> &parameterOnly,
                                 std::string &error);

/// Per-stage summary of a function whose ops carry kStageAttr.
std::vector<StageSummary> summarizeStages(mlir::func::FuncOp fn);

} // namespace trc::parallel

#endif // TRC_PARALLEL_PIPELINE_H
