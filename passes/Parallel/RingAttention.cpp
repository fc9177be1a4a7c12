//===- RingAttention.cpp - trc-ring-attention ------------------------------===//
//
// Context parallelism's ring (see Passes.td). trc-partition leaves each
// attention of a context-parallel step as
//
//   K = all_gather(k)  V = all_gather(v)        (over `context`, on positions)
//   o = attention(q, K, V, mask)                (q, mask: this rank's rows)
//   dq, dK, dV = attention_grad(q, K, V, do, mask)
//   dk = reduce_scatter(dK)  dv = reduce_scatter(dV)
//
// (each collective wrapped in the transposes and reshapes of Reshard.cpp).
// Here the gathers go (AttentionRing.h computes the ring): at step
// j = 0..C-1 rank r holds the key/value block of rank (r - j) mod C,
// computes that block's scores, and merges them into running row
// statistics (max m, sum l) and output accumulator in f32 (FlashAttention's
// online softmax); between steps the blocks move one rank on
// (collective_permute). The mask's columns of the held block are read from
// the rank's mask rows through a rank-dependent gather (a table of chunk
// indices sliced by rank). The backward passes the blocks round again
// with dK and dV accumulators beside them: each rank adds its queries'
// contribution to the block it holds, and after C moves each accumulator
// is back at the rank whose keys it belongs to, summed over every rank's
// queries, so the reduce-scatters go too. With the head-tail layout and a
// mask proven causal (trc.causal_chunk) the first step computes three
// quarters of the rank's own block and each later one half a block
// (AttentionRing.h). The backward needs the forward's
// row logsumexp: the forward's own when the gradient is of that forward
// (same q, k, v, mask), else recomputed by a forward ring of its own.
// Preconditions: after trc-partition with a context axis; static shapes;
// attention fused (trc-fuse-attention) so that it is one op.
//
//===----------------------------------------------------------------------===//
#include "AttentionRing.h"
#include "trc/Abi/AttrNames.h"
#include "trc/Parallel/Sharding.h"
#include "trc/Passes.h"

namespace trc {
#define GEN_PASS_DEF_RINGATTENTION
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;
using namespace trc::parallel;

namespace {

/// The ops built just before `op` since `before` (its previous op then,
/// null: the block's start) take `op`'s pipeline stage and phase
/// (StageHomes.h): the ring runs where the attention it replaces ran, not
/// with whatever it reads last (a backward block's scores read only
/// forward values).
void tagLikeReplaced(Operation *op, Operation *before) {
  Operation *first = before ? before->getNextNode() : &op->getBlock()->front();
  for (Operation *built = first; built != op; built = built->getNextNode())
    for (const char *name : {trc::abi::kStageAttr, trc::abi::kBackwardAttr})
      if (Attribute a = op->getAttr(name))
        built->setAttr(name, a);
}

/// A forward attention's ring inputs, to find the forward of a gradient.
struct ForwardKey {
  Value q, k, v, mask;
  bool operator==(const ForwardKey &o) const {
    return q == o.q && k == o.k && v == o.v && mask == o.mask;
  }
};

struct RingAttention : trc::impl::RingAttentionBase<RingAttention> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> attentions;
    // The last steps of the gathers the ring replaces (keys, values, masks):
    // erased, with what leads to them, once nothing reads them.
    llvm::SetVector<Operation *> gatherSteps;
    module.walk([&](Operation *op) {
      if (!isa<AttentionOp, AttentionGradOp>(op))
        return;
      attentions.push_back(op);
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp(); def && isLayoutStep(def))
          gatherSteps.insert(def);
    });
    SmallVector<std::pair<ForwardKey, RingForward>> forwards;
    SmallVector<Operation *> dead;
    for (Operation *op : attentions) {
      if (auto a = dyn_cast<AttentionOp>(op)) {
        if (failed(rewriteForward(a, forwards)))
          return signalPassFailure();
      } else if (failed(rewriteGrad(cast<AttentionGradOp>(op), forwards, dead))) {
        return signalPassFailure();
      }
    }
    for (Operation *op : llvm::reverse(dead))
      op->erase();
    for (Operation *op : attentions)
      if (op->use_empty())
        op->erase();
    eraseUnused(gatherSteps);
    // Activations still gathered: attention the ring did not take (or
    // another op mixing positions). Integer gathers (labels shifted by a
    // position, masks) are small and stay.
    WalkResult left = module.walk([&](AllGatherOp g) {
      if (g.getGroup() != CollectiveGroup::Context ||
          !isa<FloatType>(tensorType(g.getResult()).getElementType()))
        return WalkResult::advance();
      g.emitError("trc-ring-attention: activations are still all-gathered over the context "
                  "group here: the ring covers fused attention only (run trc-fuse-attention; "
                  "attention it cannot fuse, such as one with dropout on its probabilities, "
                  "or another op mixing positions gathers them: use cp_comm_type all_gather)");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }

  /// A step of a gather's chain (Reshard.cpp; a gather is a mirrored
  /// split's reorder).
  static bool isLayoutStep(Operation *op) {
    return isa<TransposeOp, ReshapeOp, AllGatherOp, GatherOp>(op);
  }

  /// Erases the unused ops of `steps`, then the layout steps that feed
  /// them and became unused (an op leaves the set when erased, so none is
  /// visited after).
  static void eraseUnused(llvm::SetVector<Operation *> &steps) {
    while (!steps.empty()) {
      Operation *op = steps.pop_back_val();
      if (!op->use_empty())
        continue;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp(); def && isLayoutStep(def))
          steps.insert(def);
      op->erase();
    }
  }

  /// The blocks `k` and `v` of `op` (an attention or its gradient) were
  /// gathered from, with the ring's layout: the group's size, whether the
  /// blocks are head-tail pairs, and whether the hidden sub-blocks may be
  /// skipped (the op's mask hides the keys of later chunks of at most a
  /// half block, trc.causal_chunk).
  static std::optional<std::tuple<Value, Value, RingLayout>> blocks(Operation *op, Value k,
                                                                    Value v) {
    int64_t d = tensorType(k).getRank() - 2;
    std::optional<Gathered> gk = gatheredOverContext(k, d), gv = gatheredOverContext(v, d);
    if (!gk || !gv || gk->gather.getShards() != gv->gather.getShards() ||
        gk->mirrored != gv->mirrored)
      return std::nullopt;
    RingLayout layout{int64_t(gk->gather.getShards()), gk->mirrored, false};
    auto chunk = op->getAttrOfType<IntegerAttr>(trc::abi::kCausalChunkAttr);
    int64_t halfBlock = tensorType(gk->block).getDimSize(d) / 2;
    layout.skipHidden = layout.mirrored && chunk && chunk.getInt() > 0 &&
                        halfBlock % chunk.getInt() == 0;
    return std::make_tuple(gk->block, gv->block, layout);
  }

  LogicalResult rewriteForward(AttentionOp a,
                               SmallVector<std::pair<ForwardKey, RingForward>> &forwards) {
    auto found = blocks(a, a.getK(), a.getV());
    if (!found)
      return success(); // not context-parallel: left as it is
    auto [k, v, layout] = *found;
    OpBuilder b(a);
    Operation *before = a->getPrevNode();
    AttentionRing ring(b, a.getLoc(), a.getQ(), k, v, a.getMask(), layout,
              a.getScale().convertToDouble(), a.getMaskFill().convertToDouble(),
              a.getFillWhereTrue());
    RingForward fwd = ring.forward();
    tagLikeReplaced(a, before);
    a.getResult().replaceAllUsesWith(fwd.result);
    forwards.push_back({ForwardKey{a.getQ(), k, v, a.getMask()}, fwd});
    return success();
  }

  LogicalResult rewriteGrad(AttentionGradOp g,
                            ArrayRef<std::pair<ForwardKey, RingForward>> forwards,
                            SmallVector<Operation *> &dead) {
    auto found = blocks(g, g.getK(), g.getV());
    if (!found)
      return success();
    auto [k, v, layout] = *found;
    int64_t d = tensorType(g.getK()).getRank() - 2;
    SmallVector<Operation *> dkChain = scatterChain(g.getKGrad(), d),
                             dvChain = scatterChain(g.getVGrad(), d);
    if (dkChain.empty() || dvChain.empty())
      return g.emitError("trc-ring-attention: the key and value gradients of this attention are "
                         "not reduce-scattered over the context group as trc-partition leaves "
                         "them");
    // Built where the gradient was: its results dominate dq's users and
    // the scatter chains' (which follow it).
    OpBuilder b(g);
    Operation *before = g->getPrevNode();
    AttentionRing ring(b, g.getLoc(), g.getQ(), k, v, g.getMask(), layout,
              g.getScale().convertToDouble(), g.getMaskFill().convertToDouble(),
              g.getFillWhereTrue());
    ForwardKey key{g.getQ(), k, v, g.getMask()};
    const RingForward *fwd = nullptr;
    for (auto &[fk, f] : forwards)
      if (fk == key)
        fwd = &f;
    RingForward own;
    if (!fwd) {
      own = ring.forward();
      fwd = &own;
    }
    auto [dq, dk, dv] = ring.backward(*fwd, g.getResultGrad());
    tagLikeReplaced(g, before);
    g.getQGrad().replaceAllUsesWith(dq);
    dkChain.back()->getResult(0).replaceAllUsesWith(dk);
    dvChain.back()->getResult(0).replaceAllUsesWith(dv);
    dead.append(dkChain);
    dead.append(dvChain);
    return success();
  }
};

} // namespace
