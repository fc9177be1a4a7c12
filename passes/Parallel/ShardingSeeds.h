//===- ShardingSeeds.h - what the seeding passes share ---------------------===//
//
// The pieces trc-shard-tensor-parallel and trc-shard-context-parallel both
// need before they seed @main_grad: the grid's axis set, the forward part
// of the step (what the loss depends on), and composite ops decomposed so
// that a split dim reduces with collectives instead of being gathered.
// Preconditions: a module with @main_grad (after trc-autodiff) or @main.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_PARALLEL_SHARDINGSEEDS_H
#define TRC_PASSES_PARALLEL_SHARDINGSEEDS_H

#include "trc/Parallel/Sharding.h"

#include "llvm/ADT/SetVector.h"

namespace trc::parallel {

/// The module's grid with `axis` set to `size` (replacing it if present),
/// written back to the module.
Grid setGridAxis(mlir::ModuleOp module, llvm::StringRef axis, int64_t size);

/// The ops `v` depends on: with the loss, the forward part of @main_grad.
llvm::SetVector<mlir::Operation *> ancestors(mlir::Value v);

/// Replaces `ops` (composites: cross-entropy, softmax) by their primitive
/// decompositions (trc's DecomposeComposites patterns).
mlir::LogicalResult decomposeComposites(mlir::MLIRContext *context,
                                        llvm::ArrayRef<mlir::Operation *> ops);

} // namespace trc::parallel

#endif // TRC_PASSES_PARALLEL_SHARDINGSEEDS_H
