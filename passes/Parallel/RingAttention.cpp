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
// Here the gathers go: at step j = 0..C-1 rank r holds the key/value block
// of rank (r - j) mod C, computes that block's scores, and merges them
// into running row statistics (max m, sum l) and output accumulator in f32
// (FlashAttention's online softmax); between steps the blocks move one rank
// on (collective_permute). The mask's columns of the held block are read
// from the rank's mask rows through a rank-dependent gather (a table of
// block indices sliced by rank). The backward passes the blocks round again
// with dK and dV accumulators beside them: each rank adds its queries'
// contribution to the block it holds, and after C moves each accumulator
// is back at the rank whose keys it belongs to, summed over every rank's
// queries, so the reduce-scatters go too. The backward needs the forward's
// row logsumexp: the forward's own when the gradient is of that forward
// (same q, k, v, mask), else recomputed by a forward ring of its own.
// Preconditions: after trc-partition with a context axis; static shapes;
// attention fused (trc-fuse-attention) so that it is one op.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Dialect/CoreBuilder.h"
#include "trc/Parallel/Sharding.h"
#include "trc/Passes.h"

#include <limits>

namespace trc {
#define GEN_PASS_DEF_RINGATTENTION
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;
using trc::parallel::tensorType;

namespace {

/// The permutation moving dim `d` of a rank-`rank` tensor to the front
/// (Reshard.cpp's layout for a dim collective).
SmallVector<int64_t> toFront(int64_t d, int64_t rank) {
  SmallVector<int64_t> perm{d};
  for (int64_t i = 0; i < rank; ++i)
    if (i != d)
      perm.push_back(i);
  return perm;
}

/// `full` all-gathered over the context group along dim `d` from the
/// rank's block: the block and the gather, or nothing.
struct Gathered {
  Value block;
  AllGatherOp gather;
};
std::optional<Gathered> gatheredOverContext(Value full, int64_t d) {
  int64_t rank = tensorType(full).getRank();
  Value v = full;
  if (auto t = v.getDefiningOp<TransposeOp>())
    v = t.getOperand();
  while (auto r = v.getDefiningOp<ReshapeOp>())
    v = r.getOperand();
  auto gather = v.getDefiningOp<AllGatherOp>();
  if (!gather || gather.getGroup() != CollectiveGroup::Context)
    return std::nullopt;
  auto flat = gather.getOperand().getDefiningOp<ReshapeOp>();
  auto front = flat ? flat.getOperand().getDefiningOp<TransposeOp>() : TransposeOp();
  if (!front || front.getPermutation() != ArrayRef(toFront(d, rank)))
    return std::nullopt;
  Value block = front.getOperand();
  SmallVector<int64_t> shape(tensorType(full).getShape());
  shape[d] /= int64_t(gather.getShards());
  if (tensorType(block).getShape() != ArrayRef(shape))
    return std::nullopt;
  return Gathered{block, gather};
}

/// The chain reduce-scattering `full` (a partial sum over the context
/// group) along dim `d` to this rank's block, first op to last; its last
/// op's result is the block. Empty when `full` is used otherwise.
SmallVector<Operation *> scatterChain(Value full, int64_t d) {
  int64_t rank = tensorType(full).getRank();
  SmallVector<Operation *> chain;
  auto onlyUser = [](Value v) -> Operation * {
    return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
  };
  auto front = dyn_cast_or_null<TransposeOp>(onlyUser(full));
  if (!front || front.getPermutation() != ArrayRef(toFront(d, rank)))
    return {};
  chain.push_back(front);
  Operation *op = onlyUser(front.getResult());
  while (auto r = dyn_cast_or_null<ReshapeOp>(op)) {
    chain.push_back(r);
    op = onlyUser(r.getResult());
  }
  auto scatter = dyn_cast_or_null<ReduceScatterOp>(op);
  if (!scatter || scatter.getGroup() != CollectiveGroup::Context ||
      scatter.getReduction() != CollectiveReduction::Sum)
    return {};
  chain.push_back(scatter);
  op = onlyUser(scatter.getResult());
  while (auto r = dyn_cast_or_null<ReshapeOp>(op)) {
    chain.push_back(r);
    op = onlyUser(r.getResult());
  }
  if (auto back = dyn_cast_or_null<TransposeOp>(op))
    chain.push_back(back);
  SmallVector<int64_t> shape(tensorType(full).getShape());
  shape[d] /= int64_t(scatter.getShards());
  if (tensorType(chain.back()->getResult(0)).getShape() != ArrayRef(shape))
    return {};
  return chain;
}

/// What the forward ring leaves for the backward.
struct RingForward {
  Value result; // the attention's output, the operands' type
  Value lse;    // each query row's logsumexp, f32 [b..., Tq]
};

/// The ring of one attention (either direction): its operands, the
/// group's size and the mask's column block of each step.
class Ring {
public:
  Ring(OpBuilder &b, Location loc, Value q, Value k, Value v, Value mask, int64_t shards,
       double scale, double fill, bool fillWhereTrue)
      : c{b, loc}, q(q), k(k), v(v), shards(shards), scale(scale), fill(fill),
        fillWhereTrue(fillWhereTrue), rank(c.type(q).getRank()),
        element(c.type(q).getElementType()), f32(b.getF32Type()) {
    if (mask)
      masks = maskBlocks(mask);
  }

  RingForward forward() {
    Value kj = k, vj = v, m, l, acc;
    for (int64_t j = 0; j < shards; ++j) {
      Value s = c.convert(scores(kj, j), f32);
      Value blockMax = c.reduce(ReduceKind::Max, s, {rank - 1});
      // The running max starts at the lowest finite value, not -inf, so a
      // row masked in every block so far gives exp(0) factors, never NaN.
      Value mNew = c.max(m ? m : lowest(blockMax), blockMax);
      Value p = c.exp(c.sub(s, c.expand(mNew, c.type(s), {rank - 1})));
      Value pv = c.convert(c.product(c.convert(p, element), vj, rank - 1, rank - 2), f32);
      Value rowSum = c.reduce(ReduceKind::Sum, p, {rank - 1});
      if (!m) {
        l = rowSum;
        acc = pv;
      } else {
        Value correction = c.exp(c.sub(m, mNew));
        l = c.add(c.mul(l, correction), rowSum);
        acc = c.add(c.mul(acc, c.expand(correction, c.type(acc), {rank - 1})), pv);
      }
      m = mNew;
      if (j + 1 < shards) {
        kj = permute(kj);
        vj = permute(vj);
      }
    }
    Value out = c.convert(c.div(acc, c.expand(l, c.type(acc), {rank - 1})), element);
    return {out, c.add(m, c.log(l))};
  }

  /// dq and this rank's dk, dv blocks (summed over every rank's queries).
  std::tuple<Value, Value, Value> backward(const RingForward &fwd, Value resultGrad) {
    Value g = resultGrad;
    // sum_k dp p = g . o per query row (softmax's VJP term), in f32.
    Value rowDot = c.reduce(ReduceKind::Sum,
                            c.mul(c.convert(g, f32), c.convert(fwd.result, f32)), {rank - 1});
    Value kj = k, vj = v, dq, dk, dv;
    for (int64_t j = 0; j < shards; ++j) {
      Value s = c.convert(scores(kj, j), f32);
      Value p = c.exp(c.sub(s, c.expand(fwd.lse, c.type(s), {rank - 1})));
      Value dvj = c.product(c.convert(p, element), g, rank - 2, rank - 2);
      Value dp = c.convert(c.product(g, vj, rank - 1, rank - 1), f32);
      Value ds = c.convert(c.mul(p, c.sub(dp, c.expand(rowDot, c.type(dp), {rank - 1}))),
                           element);
      if (!masks.empty()) {
        Value mask = stretch(masks[j], c.type(ds));
        Value zero = c.like(ds, 0.0);
        ds = fillWhereTrue ? c.b.create<SelectOp>(c.loc, mask, zero, ds).getResult()
                           : c.b.create<SelectOp>(c.loc, mask, ds, zero).getResult();
      }
      if (scale != 1.0)
        ds = c.mul(ds, c.like(ds, scale));
      Value dqj = c.product(ds, kj, rank - 1, rank - 2);
      Value dkj = c.product(ds, q, rank - 2, rank - 2);
      dq = dq ? c.add(dq, dqj) : dqj;
      dk = dk ? c.add(dk, dkj) : dkj;
      dv = dv ? c.add(dv, dvj) : dvj;
      // The accumulators travel with their block; after the last step one
      // more move brings each home.
      if (j + 1 < shards) {
        kj = permute(kj);
        vj = permute(vj);
      }
      dk = permute(dk);
      dv = permute(dv);
    }
    return {dq, dk, dv};
  }

private:
  Value permute(Value x) {
    return c.b.create<CollectivePermuteOp>(c.loc, x.getType(), x, 1, CollectiveGroup::Context,
                                           shards);
  }

  Value lowest(Value like) {
    return c.splat(c.type(like), double(std::numeric_limits<float>::lowest()));
  }

  /// scale * q kj^T with step j's mask block applied, the operands' type.
  Value scores(Value kj, int64_t j) {
    Value s = c.product(q, kj, rank - 1, rank - 1);
    if (scale != 1.0)
      s = c.mul(s, c.like(s, scale));
    if (masks.empty())
      return s;
    Value mask = stretch(masks[j], c.type(s));
    Value filled = c.like(s, fill);
    return fillWhereTrue ? c.b.create<SelectOp>(c.loc, mask, filled, s).getResult()
                         : c.b.create<SelectOp>(c.loc, mask, s, filled).getResult();
  }

  /// A mask block broadcast to the scores' shape (it may be 1 in dims it
  /// is the same along).
  Value stretch(Value mask, RankedTensorType scores) {
    if (c.type(mask).getShape() == scores.getShape())
      return mask;
    return c.b.create<BroadcastInDimOp>(c.loc, c.type(mask).clone(scores.getShape()), mask,
                                        llvm::to_vector(llvm::seq<int64_t>(0, rank)));
  }

  /// The mask's columns of the block each step holds: step j's are block
  /// (r - j) mod C of rank r's mask rows. A mask the same for every key
  /// (last dim 1) serves every step as it is; one the same for every query
  /// (a padding mask, its rows dim 1) gathered over the group travels with
  /// the keys instead of being gathered.
  SmallVector<Value> maskBlocks(Value mask) {
    auto type = c.type(mask);
    int64_t keys = type.getShape().back();
    if (keys == 1)
      return SmallVector<Value>(shards, mask);
    if (type.getShape()[rank - 2] == 1)
      if (std::optional<Gathered> g = gatheredOverContext(mask, rank - 1)) {
        SmallVector<Value> out{g->block};
        for (int64_t j = 1; j < shards; ++j)
          out.push_back(permute(out.back()));
        return out;
      }
    int64_t blockKeys = keys / shards;
    SmallVector<int64_t> split(type.getShape().drop_back());
    split.append({shards, blockKeys});
    Value blocks = c.b.create<ReshapeOp>(c.loc, type.clone(split), mask);
    // Row r of the table: the block index rank r holds at each step.
    SmallVector<int64_t> table;
    for (int64_t r = 0; r < shards; ++r)
      for (int64_t j = 0; j < shards; ++j)
        table.push_back(((r - j) % shards + shards) % shards);
    auto i64 = c.b.getI64Type();
    Value all = c.b.create<ConstantOp>(
        c.loc, DenseElementsAttr::get(RankedTensorType::get({shards * shards}, i64),
                                      ArrayRef(table)));
    Value mine = c.b.create<ShardSliceOp>(c.loc, RankedTensorType::get({shards}, i64), all,
                                          CollectiveGroup::Context, shards);
    int64_t axis = int64_t(split.size()) - 2;
    Value ordered = c.b.create<GatherOp>(c.loc, type.clone(split), blocks, mine, axis);
    SmallVector<Value> out;
    SmallVector<int64_t> start(split.size(), 0), limit(split), strides(split.size(), 1);
    SmallVector<int64_t> sliced(split);
    sliced[axis] = 1;
    SmallVector<int64_t> blockShape(type.getShape().drop_back());
    blockShape.push_back(blockKeys);
    for (int64_t j = 0; j < shards; ++j) {
      start[axis] = j;
      limit[axis] = j + 1;
      Value one = c.b.create<SliceOp>(c.loc, type.clone(sliced), ordered, start, limit, strides);
      out.push_back(c.b.create<ReshapeOp>(c.loc, type.clone(blockShape), one));
    }
    return out;
  }

  CoreBuilder c;
  Value q, k, v;
  SmallVector<Value> masks; // per step; empty without a mask
  int64_t shards;
  double scale, fill;
  bool fillWhereTrue;
  int64_t rank;
  Type element, f32;
};

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

  /// A step of a gather's chain (Reshard.cpp).
  static bool isLayoutStep(Operation *op) {
    return isa<TransposeOp, ReshapeOp, AllGatherOp>(op);
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

  /// The blocks `k` and `v` were gathered from, with the group's size.
  static std::optional<std::tuple<Value, Value, int64_t>> blocks(Value k, Value v) {
    int64_t d = tensorType(k).getRank() - 2;
    std::optional<Gathered> gk = gatheredOverContext(k, d), gv = gatheredOverContext(v, d);
    if (!gk || !gv || gk->gather.getShards() != gv->gather.getShards())
      return std::nullopt;
    return std::make_tuple(gk->block, gv->block, int64_t(gk->gather.getShards()));
  }

  LogicalResult rewriteForward(AttentionOp a,
                               SmallVector<std::pair<ForwardKey, RingForward>> &forwards) {
    auto found = blocks(a.getK(), a.getV());
    if (!found)
      return success(); // not context-parallel: left as it is
    auto [k, v, shards] = *found;
    OpBuilder b(a);
    Operation *before = a->getPrevNode();
    Ring ring(b, a.getLoc(), a.getQ(), k, v, a.getMask(), shards,
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
    auto found = blocks(g.getK(), g.getV());
    if (!found)
      return success();
    auto [k, v, shards] = *found;
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
    Ring ring(b, g.getLoc(), g.getQ(), k, v, g.getMask(), shards,
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
