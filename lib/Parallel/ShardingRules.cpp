//===- ShardingRules.cpp - the sharding rule of every trc op ---------------===//
//
// One `rule(Op)` per op with a sharding rule (include/trc/Dialect/
// ShardingRule.h), attached as ShardingRuleOpInterface models. The
// compile-time check below fails for an op of the dialect's op list with
// neither a rule nor the NoSharding trait, as for VJP rules.
// Preconditions: verified ops with static shapes.
//
//===----------------------------------------------------------------------===//
#include "trc/Parallel/Sharding.h"

#include "mlir/IR/MLIRContext.h"


using namespace mlir;

namespace trc::parallel {
namespace {

using Dims = ShardingRule::Dims;

ArrayRef<int64_t> shapeOf(Value v) { return tensorType(v).getShape(); }

/// Each dim its own new factor of one kind.
Dims newFactors(ShardingRule &r, ArrayRef<int64_t> shape, FactorKind kind) {
  Dims dims;
  for (int64_t size : shape)
    dims.push_back({r.addFactor(size, kind)});
  return dims;
}

/// A one-operand rule whose operand and result have the same rank and
/// `kindOf(d)` says how dim d relates them: Parallel or Sliced share one
/// factor, Replicated gives each side its own whole dim.
template <typename KindOf>
ShardingRule dimByDim(ArrayRef<int64_t> in, ArrayRef<int64_t> out, KindOf kindOf) {
  ShardingRule r;
  Dims inDims, outDims;
  for (size_t d = 0; d < in.size(); ++d) {
    FactorKind kind = kindOf(d);
    if (kind == FactorKind::Replicated) {
      inDims.push_back({r.addFactor(in[d], kind)});
      outDims.push_back({r.addFactor(out[d], kind)});
    } else {
      inDims.push_back({r.addFactor(kind == FactorKind::Sliced ? 0 : in[d], kind)});
      outDims.push_back(inDims.back());
    }
  }
  r.operands = {inDims};
  r.results = {outDims};
  return r;
}

/// A rule whose operands and results all have the result's shape, dim by dim.
ShardingRule sameShape(Operation *op, FactorKind kind = FactorKind::Parallel) {
  ShardingRule r;
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  Dims dims = newFactors(r, shape, kind);
  for (Value operand : op->getOperands())
    r.operands.push_back(shapeOf(operand).size() == shape.size() ? dims : Dims{});
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    r.results.push_back(dims);
  return r;
}

ShardingRule elementwise(Operation *op, bool linear = false) {
  ShardingRule r = sameShape(op);
  r.linear = linear;
  return r;
}

ShardingRule rule(ConstantOp op) {
  // A splat is the same value on every rank's part; other constants are
  // made whole and sliced.
  bool splat = isa<SplatElementsAttr>(op.getValue()) ||
               (isa<DenseElementsAttr>(op.getValue()) &&
                cast<DenseElementsAttr>(op.getValue()).isSplat());
  return sameShape(op, splat ? FactorKind::Parallel : FactorKind::Replicated);
}
// Values that depend on the element's global index: made whole.
ShardingRule rule(IotaOp op) { return sameShape(op, FactorKind::Replicated); }
ShardingRule rule(RandomUniformOp op) { return sameShape(op, FactorKind::Replicated); }

#define TRC_ELEMENTWISE(OP) \
  ShardingRule rule(OP op) { return elementwise(op); }
#define TRC_LINEAR(OP) \
  ShardingRule rule(OP op) { return elementwise(op, /*linear=*/true); }
TRC_LINEAR(NegOp)
TRC_LINEAR(AddOp)
TRC_LINEAR(SubOp)

TRC_ELEMENTWISE(AbsOp)
TRC_ELEMENTWISE(ExpOp)
TRC_ELEMENTWISE(LogOp)
TRC_ELEMENTWISE(SqrtOp)
TRC_ELEMENTWISE(RsqrtOp)
TRC_ELEMENTWISE(TanhOp)
TRC_ELEMENTWISE(ErfOp)
TRC_ELEMENTWISE(SinOp)
TRC_ELEMENTWISE(CosOp)
TRC_ELEMENTWISE(LogisticOp)
TRC_ELEMENTWISE(FloorOp)
TRC_ELEMENTWISE(NotOp)
TRC_ELEMENTWISE(MulOp)
TRC_ELEMENTWISE(DivOp)
TRC_ELEMENTWISE(PowOp)
TRC_ELEMENTWISE(MaxOp)
TRC_ELEMENTWISE(MinOp)
TRC_ELEMENTWISE(AndOp)
TRC_ELEMENTWISE(OrOp)
TRC_ELEMENTWISE(CompareOp)
TRC_ELEMENTWISE(SelectOp)
TRC_ELEMENTWISE(ConvertOp)
TRC_ELEMENTWISE(GeluOp)
// Not linear: a pending partial sum is reduced before the barrier, so a
// barrier in the backward reads the forward's reduced copy (partitioning
// reuses it) instead of reducing the value again.
TRC_ELEMENTWISE(OptimizationBarrierOp)
// Offloading's copies: the host copy is split as its device value is (each
// rank moves its part); like the barrier, partial sums are reduced first.
TRC_ELEMENTWISE(OffloadOp)
TRC_ELEMENTWISE(PrefetchOp)
TRC_ELEMENTWISE(CopyWaitOp)
#undef TRC_ELEMENTWISE
#undef TRC_LINEAR

ShardingRule rule(DotGeneralOp op) {
  ShardingRule r;
  ArrayRef<int64_t> lhs = shapeOf(op.getLhs()), rhs = shapeOf(op.getRhs());
  Dims l(lhs.size()), rr(rhs.size()), out;
  for (auto [a, b] : llvm::zip(op.getLhsBatchingDims(), op.getRhsBatchingDims())) {
    int64_t f = r.addFactor(lhs[a], FactorKind::Parallel);
    l[a] = {f};
    rr[b] = {f};
    out.push_back({f});
  }
  for (auto [a, b] : llvm::zip(op.getLhsContractingDims(), op.getRhsContractingDims())) {
    int64_t f = r.addFactor(lhs[a], FactorKind::Sum);
    l[a] = {f};
    rr[b] = {f};
  }
  auto freeDims = [&](ArrayRef<int64_t> shape, Dims &dims, ArrayRef<int64_t> batch,
                      ArrayRef<int64_t> contract) {
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      if (!llvm::is_contained(batch, d) && !llvm::is_contained(contract, d)) {
        dims[d] = {r.addFactor(shape[d], FactorKind::Parallel)};
        out.push_back(dims[d]);
      }
  };
  freeDims(lhs, l, op.getLhsBatchingDims(), op.getLhsContractingDims());
  freeDims(rhs, rr, op.getRhsBatchingDims(), op.getRhsContractingDims());
  r.operands = {l, rr};
  r.results = {out};
  return r;
}

ShardingRule rule(ReduceOp op) {
  ShardingRule r;
  ArrayRef<int64_t> shape = shapeOf(op.getOperand());
  FactorKind reduced = op.getKind() == ReduceKind::Sum   ? FactorKind::Sum
                       : op.getKind() == ReduceKind::Max ? FactorKind::Max
                                                         : FactorKind::Replicated;
  Dims in, out;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    bool isReduced = llvm::is_contained(op.getDimensions(), d);
    int64_t f = r.addFactor(shape[d], isReduced ? reduced : FactorKind::Parallel);
    in.push_back({f});
    if (!isReduced)
      out.push_back({f});
  }
  r.operands = {in};
  r.results = {out};
  return r;
}

ShardingRule rule(BroadcastInDimOp op) {
  ShardingRule r;
  ArrayRef<int64_t> in = shapeOf(op.getOperand()), out = shapeOf(op.getResult());
  Dims inDims(in.size()), outDims(out.size());
  for (int64_t d = 0; d < int64_t(out.size()); ++d)
    outDims[d] = {r.addFactor(out[d], FactorKind::Parallel)};
  for (auto [i, d] : llvm::enumerate(op.getBroadcastDimensions()))
    if (in[i] == out[d])
      inDims[i] = outDims[d]; // else a size-1 dim that broadcasts: no factor
  r.operands = {inDims};
  r.results = {outDims};
  return r;
}

ShardingRule rule(TransposeOp op) {
  ShardingRule r;
  Dims inDims = newFactors(r, shapeOf(op.getOperand()), FactorKind::Parallel), outDims;
  for (int64_t p : op.getPermutation())
    outDims.push_back(inDims[p]);
  r.operands = {inDims};
  r.results = {outDims};
  return r;
}

ShardingRule rule(ReshapeOp op) {
  // The common refinement of the two shapes, walking both from the major
  // end: [2,16,64] -> [32,4,16] gives factors 2, 16, 4, 16. Size-1 dims
  // carry no factor. Shapes with no common refinement ([6,4] -> [4,6])
  // keep every dim whole.
  ShardingRule r;
  ArrayRef<int64_t> in = shapeOf(op.getOperand()), out = shapeOf(op.getResult());
  Dims inDims(in.size()), outDims(out.size());
  size_t i = 0, o = 0;
  int64_t inLeft = 1, outLeft = 1;
  bool regular = true;
  while (regular) {
    if (inLeft == 1)
      while (i < in.size() && in[i] == 1)
        ++i;
    if (outLeft == 1)
      while (o < out.size() && out[o] == 1)
        ++o;
    if (inLeft == 1 && i < in.size())
      inLeft = in[i];
    if (outLeft == 1 && o < out.size())
      outLeft = out[o];
    if (inLeft == 1 || outLeft == 1)
      break; // one side is done (the other, then, is too)
    int64_t size;
    if (inLeft % outLeft == 0)
      size = outLeft;
    else if (outLeft % inLeft == 0)
      size = inLeft;
    else {
      regular = false;
      break;
    }
    int64_t f = r.addFactor(size, FactorKind::Parallel);
    inDims[i].push_back(f);
    outDims[o].push_back(f);
    inLeft /= size;
    outLeft /= size;
    if (inLeft == 1)
      ++i;
    if (outLeft == 1)
      ++o;
  }
  if (!regular) {
    ShardingRule whole;
    whole.operands = {newFactors(whole, in, FactorKind::Replicated)};
    whole.results = {newFactors(whole, out, FactorKind::Replicated)};
    return whole;
  }
  r.operands = {inDims};
  r.results = {outDims};
  return r;
}

ShardingRule rule(SliceOp op) {
  ArrayRef<int64_t> in = shapeOf(op.getOperand()), out = shapeOf(op.getResult());
  return dimByDim(in, out, [&](size_t d) {
    return in[d] == out[d]              ? FactorKind::Parallel
           : op.getStrides()[d] == 1 ? FactorKind::Sliced
                                        : FactorKind::Replicated;
  });
}

ShardingRule rule(ConcatenateOp op) {
  ShardingRule r;
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  Dims dims;
  for (int64_t d = 0; d < int64_t(out.size()); ++d)
    dims.push_back({d == int64_t(op.getDimension())
                        ? r.addFactor(0, FactorKind::Sliced)
                        : r.addFactor(out[d], FactorKind::Parallel)});
  for (size_t i = 0; i < op.getInputs().size(); ++i)
    r.operands.push_back(dims);
  r.results = {dims};
  return r;
}

ShardingRule rule(PadOp op) {
  ArrayRef<int64_t> in = shapeOf(op.getOperand()), out = shapeOf(op.getResult());
  ShardingRule r = dimByDim(in, out, [&](size_t d) {
    return in[d] == out[d] ? FactorKind::Parallel : FactorKind::Replicated;
  });
  r.operands.push_back(Dims{}); // the padding value
  return r;
}

ShardingRule rule(ReverseOp op) {
  // A reversed dim stays whole: its halves trade places.
  ArrayRef<int64_t> shape = shapeOf(op.getOperand());
  return dimByDim(shape, shape, [&](size_t d) {
    return llvm::is_contained(op.getDimensions(), int64_t(d)) ? FactorKind::Replicated
                                                               : FactorKind::Parallel;
  });
}

/// Gather's and scatter_add's dims: the table's dims around `axis` and the
/// indices' dims, laid out as gather's result.
struct TableLookup {
  Dims table, indices, lookedUp;
};
TableLookup tableLookup(ShardingRule &r, ArrayRef<int64_t> table, ArrayRef<int64_t> indices,
                        int64_t axis) {
  TableLookup t;
  for (int64_t d = 0; d < int64_t(table.size()); ++d)
    t.table.push_back({r.addFactor(table[d], d == axis ? FactorKind::Gathered
                                                       : FactorKind::Parallel)});
  for (int64_t size : indices)
    t.indices.push_back({r.addFactor(size, FactorKind::Parallel)});
  for (int64_t d = 0; d < axis; ++d)
    t.lookedUp.push_back(t.table[d]);
  t.lookedUp.append(t.indices.begin(), t.indices.end());
  for (int64_t d = axis + 1; d < int64_t(table.size()); ++d)
    t.lookedUp.push_back(t.table[d]);
  return t;
}

ShardingRule rule(GatherOp op) {
  ShardingRule r;
  ArrayRef<int64_t> table = shapeOf(op.getOperand());
  TableLookup t = tableLookup(r, table, shapeOf(op.getIndices()),
                              axisFromFront(op.getAxis(), int64_t(table.size())));
  r.operands = {t.table, t.indices};
  r.results = {t.lookedUp};
  return r;
}

ShardingRule rule(ScatterAddOp op) {
  ShardingRule r;
  ArrayRef<int64_t> table = shapeOf(op.getOperand());
  TableLookup t = tableLookup(r, table, shapeOf(op.getIndices()),
                              axisFromFront(op.getAxis(), int64_t(table.size())));
  r.operands = {t.table, t.indices, t.lookedUp};
  r.results = {t.table};
  return r;
}

/// Dims [from, rank) whole, the others parallel.
ShardingRule wholeFrom(Operation *op, int64_t from, int64_t upTo = -1) {
  ShardingRule r;
  ArrayRef<int64_t> shape = shapeOf(op->getOperand(0));
  if (upTo < 0)
    upTo = int64_t(shape.size());
  Dims dims;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    dims.push_back({r.addFactor(shape[d], d >= from && d < upTo ? FactorKind::Replicated
                                                                : FactorKind::Parallel)});
  r.operands.push_back(dims);
  r.results.push_back(dims);
  return r;
}

ShardingRule rule(SoftmaxOp op) {
  int64_t axis = axisFromFront(op.getAxis(), int64_t(shapeOf(op.getOperand()).size()));
  return wholeFrom(op, axis, axis + 1);
}
ShardingRule rule(LogSoftmaxOp op) {
  int64_t axis = axisFromFront(op.getAxis(), int64_t(shapeOf(op.getOperand()).size()));
  return wholeFrom(op, axis, axis + 1);
}

ShardingRule rule(LayerNormOp op) {
  ArrayRef<int64_t> shape = shapeOf(op.getOperand());
  int64_t axis = axisFromFront(op.getAxis(), int64_t(shape.size()));
  ShardingRule r = wholeFrom(op, axis);
  // scale and bias broadcast to the normalized dims, aligned on the right.
  for (Value v : {op.getScale(), op.getBias()}) {
    if (!v)
      continue;
    ArrayRef<int64_t> s = shapeOf(v);
    Dims dims(s.size());
    for (size_t d = 0; d < s.size(); ++d) {
      size_t full = shape.size() - s.size() + d;
      if (s[d] == shape[full])
        dims[d] = r.operands[0][full];
    }
    r.operands.push_back(dims);
  }
  return r;
}

ShardingRule rule(CrossEntropyOp op) {
  // Logits [N, C, d...], labels [N, d...]: the class dim whole (a
  // vocabulary-parallel loss is decomposed first: trc-shard-tensor-parallel).
  // A mean over the non-ignored labels is not a sum of per-rank means: the
  // batch dims stay whole too unless the loss is a sum or per element.
  ShardingRule r;
  ArrayRef<int64_t> logits = shapeOf(op.getLogits());
  FactorKind batch = op.getReduction() == LossReduction::None  ? FactorKind::Parallel
                     : op.getReduction() == LossReduction::Sum ? FactorKind::Sum
                                                               : FactorKind::Replicated;
  Dims l, labels;
  for (int64_t d = 0; d < int64_t(logits.size()); ++d) {
    l.push_back({r.addFactor(logits[d], d == 1 ? FactorKind::Replicated : batch)});
    if (d != 1)
      labels.push_back(l.back());
  }
  r.operands = {l, labels};
  r.results = {op.getReduction() == LossReduction::None ? labels : Dims{}};
  return r;
}

/// Attention's factors: batch, heads, query positions (parallel), key
/// positions and the q.k contraction (whole: softmax and the product run
/// over them), value features (parallel). The mask broadcasts.
struct AttentionDims {
  Dims q, k, v, out, mask;
};
AttentionDims attentionDims(ShardingRule &r, Value q, Value k, Value v, Value mask) {
  ArrayRef<int64_t> qs = shapeOf(q), ks = shapeOf(k), vs = shapeOf(v);
  size_t rank = qs.size();
  AttentionDims a;
  Dims lead;
  for (size_t d = 0; d + 2 < rank; ++d)
    lead.push_back({r.addFactor(qs[d], FactorKind::Parallel)});
  int64_t sq = r.addFactor(qs[rank - 2], FactorKind::Parallel);
  int64_t sk = r.addFactor(ks[rank - 2], FactorKind::Replicated);
  int64_t dk = r.addFactor(qs[rank - 1], FactorKind::Replicated);
  int64_t dv = r.addFactor(vs[rank - 1], FactorKind::Parallel);
  auto with = [&](std::initializer_list<int64_t> last) {
    Dims dims = lead;
    for (int64_t f : last)
      dims.push_back({f});
    return dims;
  };
  a.q = with({sq, dk});
  a.k = with({sk, dk});
  a.v = with({sk, dv});
  a.out = with({sq, dv});
  if (mask) {
    ArrayRef<int64_t> ms = shapeOf(mask);
    Dims scores = with({sq, sk});
    ArrayRef<int64_t> full = qs; // scores' leading dims are q's
    a.mask.resize(ms.size());
    for (size_t d = 0; d < ms.size(); ++d) {
      size_t s = rank - ms.size() + d;
      int64_t size = s == rank - 1 ? ks[rank - 2] : full[s];
      if (ms[d] == size)
        a.mask[d] = scores[s];
    }
  }
  return a;
}

ShardingRule rule(AttentionOp op) {
  ShardingRule r;
  AttentionDims a = attentionDims(r, op.getQ(), op.getK(), op.getV(), op.getMask());
  r.operands = {a.q, a.k, a.v};
  if (op.getMask())
    r.operands.push_back(a.mask);
  r.results = {a.out};
  return r;
}

ShardingRule rule(AttentionGradOp op) {
  ShardingRule r;
  AttentionDims a = attentionDims(r, op.getQ(), op.getK(), op.getV(), op.getMask());
  r.operands = {a.q, a.k, a.v, a.out};
  if (op.getMask())
    r.operands.push_back(a.mask);
  r.results = {a.q, a.k, a.v};
  return r;
}

namespace detail {
template <typename OpT, typename = void>
struct HasRule : std::false_type {};
template <typename OpT>
struct HasRule<OpT, std::void_t<decltype(rule(std::declval<OpT>()))>> : std::true_type {};
} // namespace detail

template <typename OpT>
constexpr bool checkRule() {
  constexpr bool has = detail::HasRule<OpT>::value;
  constexpr bool none = OpT::template hasTrait<::trc::NoSharding>();
  static_assert(has || none, "this trc op has no sharding rule: define rule(Op) in "
                             "lib/Parallel/ShardingRules.cpp or give it Trc_NoSharding");
  static_assert(!(has && none), "this trc op has a sharding rule and Trc_NoSharding");
  return true;
}

template <typename OpT>
struct RuleModel : ShardingRuleOpInterface::ExternalModel<RuleModel<OpT>, OpT> {
  ShardingRule getShardingRule(Operation *op) const { return rule(cast<OpT>(op)); }
};

template <typename OpT>
void attach(MLIRContext *context) {
  if constexpr (detail::HasRule<OpT>::value)
    OpT::template attachInterface<RuleModel<OpT>>(*context);
}

template <typename... OpTs>
void attachAll(MLIRContext *context) {
  static_assert((checkRule<OpTs>() && ...));
  (attach<OpTs>(context), ...);
}

void attachAllRules(MLIRContext *context, TrcDialect *) {
  attachAll<
#define GET_OP_LIST
#include "TrcOps.cpp.inc"
      >(context);
}

} // namespace

void registerShardingRules(DialectRegistry &registry) {
  registry.addExtension(&attachAllRules);
}

} // namespace trc::parallel
