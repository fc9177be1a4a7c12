//===- Layers.h - the layer structure of a forward graph --------*- C++ -*-===//
//
// Where a model's forward graph can be cut into layers, for the passes that
// work layer by layer: pipeline stages (trc-pipeline-stages) and activation
// recomputation (trc-recompute).
//
// The chain is the ops that depend on both a trainable float parameter and
// a graph input, in program order. A cut before chain op i passes the values
// defined before i and used at or after it; cuts are allowed only where that
// count is the smallest anywhere (between transformer layers: the residual
// stream alone). The pieces between allowed cuts are half-layers in a
// pre-norm transformer (attention block, MLP block), plus the embedding and
// the head. Ops on trainable parameters alone (weight transposes) are listed
// apart; ops on neither (masks, positions, constants) are in neither list.
// Preconditions: `fn` has one block and takes its parameters as arguments
// (`trc.param` argument attributes; the module declares each parameter).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ANALYSIS_LAYERS_H
#define TRC_ANALYSIS_LAYERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace trc::analysis {

/// The cost of one op: multiply-adds x 2 for matrix products and attention
/// (forward or backward), one per result element for everything else.
double opCost(mlir::Operation *op);

/// The op every layer has one of: an attention core (softmax or
/// trc.attention).
bool isLayerCore(mlir::Operation *op);

/// The chain and its pieces.
struct LayerChain {
  llvm::SmallVector<mlir::Operation *> chain;
  llvm::SmallVector<mlir::Operation *> parameterOnly;
  // Piece p is chain[bounds[p], bounds[p + 1]).
  llvm::SmallVector<int64_t> bounds;
  int64_t pieces() const { return int64_t(bounds.size()) - 1; }
  llvm::ArrayRef<mlir::Operation *> piece(int64_t p) const {
    return llvm::ArrayRef<mlir::Operation *>(chain).slice(
        size_t(bounds[size_t(p)]), size_t(bounds[size_t(p) + 1] - bounds[size_t(p)]));
  }
};

/// The chain of `fn`'s ops for which `consider` is true (all by default; a
/// training step passes its forward ops). Fails with `error` when no op
/// reads a trainable parameter argument, or none reads both kinds.
mlir::FailureOr<LayerChain>
findLayerChain(mlir::func::FuncOp fn, std::string &error,
               llvm::function_ref<bool(mlir::Operation *)> consider = nullptr);

} // namespace trc::analysis

#endif // TRC_ANALYSIS_LAYERS_H
