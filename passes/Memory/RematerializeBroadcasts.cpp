//===- RematerializeBroadcasts.cpp - trc-rematerialize-broadcasts ----------===//
//
// Gives each use of a cheap linalg producer (a broadcast of a smaller
// tensor, a tensor computed from indices alone such as an iota, or a fill
// of a fresh tensor such as a matrix product's zero init) its own copy, placed right before the user (see Passes.td). CSE merges
// the forward's and the backward's broadcasts of one parameter (a layer
// norm's scale, say), their iotas, and every product's zero init of one
// shape into one full-size tensor that then stays alive from the first use
// to the last (a fill shared by the layers' products: their outputs are
// written into it, or copied from it); one copy per use lets
// linalg-fuse-elementwise-ops fold each into its consumer, so the full-size
// tensor is never materialized (or, before a matrix product, only just
// before it). Preconditions: linalg on tensors; runs after cse and before
// linalg-fuse-elementwise-ops.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace trc {
#define GEN_PASS_DEF_REMATERIALIZEBROADCASTS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

// A payload this small is a copy, a cast or an index computation.
constexpr unsigned kCheapPayloadOps = 6;

/// A parallel generic with one result, written from scratch (its init is a
/// tensor.empty the payload does not read), whose every input is smaller
/// than the result (a broadcast) or which has none (indices alone).
bool isCheapProducer(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op->getNumResults() != 1 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return false;
  OpOperand *init = op.getDpsInitOperand(0);
  if (!init->get().getDefiningOp<tensor::EmptyOp>() || op.payloadUsesValueFromOperand(init))
    return false;
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!result || !result.hasStaticShape())
    return false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto type = dyn_cast<RankedTensorType>(input->get().getType());
    if (!type || !type.hasStaticShape() || type.getNumElements() >= result.getNumElements())
      return false;
  }
  return op.getBody()->getOperations().size() <= kCheapPayloadOps;
}

/// A fill of a fresh tensor (a matrix product's zero init, say).
bool isFreshFill(linalg::FillOp op) {
  return op->getNumResults() == 1 && op.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
}

struct RematerializeBroadcasts
    : trc::impl::RematerializeBroadcastsBase<RematerializeBroadcasts> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> producers;
    getOperation().walk([&](linalg::LinalgOp op) {
      auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
      auto fill = dyn_cast<linalg::FillOp>(op.getOperation());
      if (((generic && isCheapProducer(generic)) || (fill && isFreshFill(fill))) &&
          !op->getResult(0).hasOneUse())
        producers.push_back(op);
    });
    for (linalg::LinalgOp op : producers) {
      Value result = op->getResult(0);
      Value init = op.getDpsInitOperand(0)->get();
      bool isFill = isa<linalg::FillOp>(op.getOperation());
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : result.getUses())
        // A fill only for the matrix products it initializes: a reduction's
        // small init stays shared, so that the CUDA backend still finds a
        // softmax's reductions side by side (one row kernel).
        if (auto user = dyn_cast<linalg::LinalgOp>(use.getOwner());
            !isFill || (user && linalg::isaContractionOpInterface(user)))
          uses.push_back(&use);
      // Each use gets a copy right before it (the original, where CSE left
      // it, may be far from all of them); the original goes once unused.
      for (OpOperand *use : uses) {
        OpBuilder b(use->getOwner());
        IRMapping map;
        map.map(init, b.clone(*init.getDefiningOp())->getResult(0));
        use->set(b.clone(*op, map)->getResult(0));
      }
      if (!result.use_empty())
        continue;
      Operation *empty = init.getDefiningOp();
      op->erase();
      if (empty->use_empty())
        empty->erase();
    }
    // Likewise an empty tensor CSE made shared: one-shot-bufferize gives a
    // tensor.empty one buffer, and the ops writing into it in turn then
    // share it, from the first write to the last read (which hides their
    // separate lifetimes from the memory plan). One per use, right before.
    SmallVector<tensor::EmptyOp> empties;
    getOperation().walk([&](tensor::EmptyOp op) {
      if (!op->getResult(0).hasOneUse() && op->getNumOperands() == 0)
        empties.push_back(op);
    });
    for (tensor::EmptyOp op : empties) {
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : op->getResult(0).getUses())
        uses.push_back(&use);
      for (OpOperand *use : uses) {
        OpBuilder b(use->getOwner());
        use->set(b.clone(*op)->getResult(0));
      }
      op->erase();
    }
  }
};

} // namespace
