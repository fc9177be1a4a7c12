//===- FuseAttention.cpp - trc-fuse-attention -------------------------------===//
//
// Finds scaled dot-product attention in an imported forward graph and makes
// it one trc.attention (see Passes.td): dot_general(q, k) -> optional
// scale (mul or div by a splat) -> optional mask (select against a splat
// fill) -> softmax over the last dim -> dot_general(p, v). torch 2.x's
// decomposition of scaled_dot_product_attention is matched too: the scale
// split as sqrt(scale) on q and on k (computed from a constant), and the
// mask added as a bias select(mask, 0, -huge) (a bias so large that adding
// it is the same as filling with it). Whatever layouts
// the two products read, q, k and v are transposed to [batch..., T, D] (the
// exporters' transposes fold into them). Intermediate values used elsewhere
// (probabilities returned, dropout on them) leave the chain unfused.
// Preconditions: trc IR before trc-autodiff.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

namespace trc {
#define GEN_PASS_DEF_FUSEATTENTION
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;

namespace {
/// The value of a splat float constant.
std::optional<double> splatValue(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// A float scalar broadcast to `v`'s shape: a splat constant, a
/// broadcast of a scalar, or the square root of one (torch 2.x's split
/// scale, not folded at import).
std::optional<double> scalarValue(Value v) {
  if (std::optional<double> c = splatValue(v))
    return c;
  if (auto b = v.getDefiningOp<BroadcastInDimOp>();
      b && cast<RankedTensorType>(b.getOperand().getType()).getNumElements() == 1)
    return scalarValue(b.getOperand());
  if (auto s = v.getDefiningOp<SqrtOp>())
    if (std::optional<double> c = scalarValue(s.getOperand()); c && *c >= 0)
      return std::sqrt(*c);
  return std::nullopt;
}

bool onlyUse(Value v, Operation *user) { return v.hasOneUse() && *v.getUsers().begin() == user; }

/// `x` = y * scalar (either side), used by `user` alone: y and the scalar.
std::optional<std::pair<Value, double>> scaledBy(Value x, Operation *user) {
  auto mul = x.getDefiningOp<MulOp>();
  if (!mul || !onlyUse(x, user))
    return std::nullopt;
  if (std::optional<double> c = scalarValue(mul.getRhs()))
    return std::make_pair(mul.getLhs(), *c);
  if (std::optional<double> c = scalarValue(mul.getLhs()))
    return std::make_pair(mul.getRhs(), *c);
  return std::nullopt;
}

/// The ops of where(p != p, 0, p) on the probabilities `p` (compare, then
/// select), when they are p's only users; empty otherwise.
SmallVector<Operation *> safeSoftmaxGuard(Value p) {
  CompareOp isNan;
  SelectOp zeroed;
  for (Operation *user : p.getUsers()) {
    if (auto c = dyn_cast<CompareOp>(user); c && c.getLhs() == p && c.getRhs() == p &&
                                            c.getDirection() == CompareDirection::NE)
      isNan = c;
    else if (auto s = dyn_cast<SelectOp>(user); s && s.getOnFalse() == p)
      zeroed = s;
    else
      return {};
  }
  if (!isNan || !zeroed || zeroed.getPred() != isNan.getResult() ||
      !isNan.getResult().hasOneUse() || splatValue(zeroed.getOnTrue()) != 0.0)
    return {};
  return {isNan, zeroed};
}

/// A bias that masks: select(mask, a, b) of splats, one 0 and the other a
/// fill so large that s + fill rounds to fill for any score s (|fill| >=
/// 1e30 in f32, or infinite), possibly broadcast. The mask (before the
/// broadcast), the fill and whether it fills where the mask is true.
struct MaskBias {
  Value mask;
  double fill;
  bool fillWhereTrue;
};
std::optional<MaskBias> maskBias(Value bias, int64_t rank) {
  if (auto b = bias.getDefiningOp<BroadcastInDimOp>();
      b && cast<RankedTensorType>(b.getOperand().getType()).getRank() == rank &&
      llvm::equal(b.getBroadcastDimensions(), llvm::seq<int64_t>(0, rank)))
    bias = b.getOperand();
  auto select = bias.getDefiningOp<SelectOp>();
  if (!select)
    return std::nullopt;
  std::optional<double> onTrue = splatValue(select.getOnTrue()),
                        onFalse = splatValue(select.getOnFalse());
  auto huge = [](double v) { return std::isinf(v) || std::abs(v) >= 1e30; };
  if (onTrue && onFalse && *onTrue == 0 && huge(*onFalse))
    return MaskBias{select.getPred(), *onFalse, false};
  if (onTrue && onFalse && *onFalse == 0 && huge(*onTrue))
    return MaskBias{select.getPred(), *onTrue, true};
  return std::nullopt;
}

/// One dot_general side's dims: batch dims in order, the dim kept and the
/// dim contracted. Empty when the product is not attention-shaped (rank r,
/// r-2 batch dims, one contracting dim).
struct Side {
  SmallVector<int64_t> batch;
  int64_t free = -1, contract = -1;

  /// The permutation to [batch..., first, second].
  SmallVector<int64_t> order(int64_t first, int64_t second) const {
    SmallVector<int64_t> perm(batch);
    perm.push_back(first);
    perm.push_back(second);
    return perm;
  }
};

std::optional<Side> sideOf(int64_t rank, ArrayRef<int64_t> batch, ArrayRef<int64_t> contract) {
  if (rank < 3 || int64_t(batch.size()) != rank - 2 || contract.size() != 1)
    return std::nullopt;
  Side side;
  side.batch.assign(batch.begin(), batch.end());
  side.contract = contract[0];
  for (int64_t d = 0; d < rank; ++d)
    if (!llvm::is_contained(batch, d) && d != side.contract)
      side.free = d;
  return side;
}

std::optional<std::pair<Side, Side>> sidesOf(DotGeneralOp dot) {
  int64_t rank = dot.getType().getRank();
  if (dot.getLhs().getType().getRank() != rank || dot.getRhs().getType().getRank() != rank)
    return std::nullopt;
  auto lhs = sideOf(rank, dot.getLhsBatchingDims(), dot.getLhsContractingDims());
  auto rhs = sideOf(rank, dot.getRhsBatchingDims(), dot.getRhsContractingDims());
  if (!lhs || !rhs)
    return std::nullopt;
  return std::make_pair(*lhs, *rhs);
}

bool isIdentity(ArrayRef<int64_t> perm) {
  for (auto [i, p] : llvm::enumerate(perm))
    if (int64_t(i) != p)
      return false;
  return true;
}

Value transposed(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> perm) {
  if (isIdentity(perm))
    return x;
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(t.getDimSize(p));
  return b.createOrFold<TransposeOp>(loc, t.clone(shape), x, perm);
}

/// Fuses the chain ending in `softmax` if it is attention; true if it did.
bool fuse(SoftmaxOp softmax) {
  auto probsType = softmax.getType();
  int64_t rank = probsType.getRank();
  if (softmax.getAxis() != rank - 1)
    return false;
  // torch 2.x's safe softmax: where(p != p, 0, p) zeroes the rows a -inf
  // fill masked whole (NaN); with a finite fill there are none.
  Value probs = softmax.getResult();
  SmallVector<Operation *> nanGuard = safeSoftmaxGuard(probs);
  if (!nanGuard.empty())
    probs = nanGuard.back()->getResult(0);
  if (!probs.hasOneUse())
    return false;
  // p v: p's batch dims in order, p's last dim contracted.
  auto output = dyn_cast<DotGeneralOp>(*probs.getUsers().begin());
  if (!output || output.getLhs() != probs)
    return false;
  auto outputSides = sidesOf(output);
  if (!outputSides || outputSides->first.contract != rank - 1 ||
      !isIdentity(outputSides->first.batch))
    return false;

  // Walk up: optional select against a fill, optional scale, the scores;
  // `chain` collects the ops the fused op replaces, from the output up.
  SmallVector<Operation *> chain{output};
  chain.append(nanGuard.rbegin(), nanGuard.rend());
  chain.push_back(softmax);
  Value x = softmax.getOperand();
  Value mask;
  Operation *biasDef = nullptr; // a torch 2.x bias's producer, erased if left unused
  double fill = 0, scale = 1;
  bool fillWhereTrue = true;
  if (auto select = x.getDefiningOp<SelectOp>(); select && onlyUse(x, softmax)) {
    if (auto f = splatValue(select.getOnTrue())) {
      fill = *f;
      x = select.getOnFalse();
    } else if (auto f = splatValue(select.getOnFalse())) {
      fill = *f;
      fillWhereTrue = false;
      x = select.getOnTrue();
    } else {
      return false;
    }
    // A mask stretched over batch and heads is taken before the broadcast:
    // the backward then keeps the small one.
    mask = select.getPred();
    if (auto broadcast = mask.getDefiningOp<BroadcastInDimOp>();
        broadcast && broadcast.getOperand().getType().getRank() == rank &&
        isIdentity(broadcast.getBroadcastDimensions()))
      mask = broadcast.getOperand();
    if (!x.hasOneUse())
      return false;
    chain.push_back(select);
  } else if (auto add = x.getDefiningOp<AddOp>(); add && onlyUse(x, softmax)) {
    // torch 2.x: scores + bias, the bias either operand.
    std::optional<MaskBias> bias = maskBias(add.getRhs(), rank);
    x = add.getLhs();
    biasDef = add.getRhs().getDefiningOp();
    if (!bias) {
      bias = maskBias(add.getLhs(), rank);
      x = add.getRhs();
      biasDef = add.getLhs().getDefiningOp();
    }
    if (!bias || !x.hasOneUse())
      return false;
    mask = bias->mask;
    fill = bias->fill;
    fillWhereTrue = bias->fillWhereTrue;
    chain.push_back(add);
  }
  if (auto mul = x.getDefiningOp<MulOp>(); mul && x.hasOneUse()) {
    if (auto c = splatValue(mul.getRhs())) {
      scale = *c;
      x = mul.getLhs();
    } else if (auto c = splatValue(mul.getLhs())) {
      scale = *c;
      x = mul.getRhs();
    } else {
      return false;
    }
    chain.push_back(mul);
  } else if (auto div = x.getDefiningOp<DivOp>(); div && x.hasOneUse()) {
    auto c = splatValue(div.getRhs());
    if (!c || *c == 0)
      return false;
    scale = 1.0 / *c;
    x = div.getLhs();
    chain.push_back(div);
  }
  auto scores = x.getDefiningOp<DotGeneralOp>();
  if (!scores || !x.hasOneUse())
    return false;
  auto scoreSides = sidesOf(scores);
  if (!scoreSides)
    return false;
  // torch 2.x scales q and k by sqrt(scale) each before their product.
  Value qIn = scores.getLhs(), kIn = scores.getRhs();
  SmallVector<Operation *> operandScales;
  for (Value *side : {&qIn, &kIn})
    if (auto scaled = scaledBy(*side, scores)) {
      operandScales.push_back(side->getDefiningOp());
      *side = scaled->first;
      scale *= scaled->second;
    }
  // A row a -inf fill masks whole is NaN in the fused op, 0 after the guard.
  if (!nanGuard.empty() && mask && std::isinf(fill))
    return false;
  auto element = probsType.getElementType();
  if (scores.getLhs().getType().getElementType() != element ||
      output.getRhs().getType().getElementType() != element)
    return false;

  OpBuilder b(output);
  Location loc = output.getLoc();
  const Side &qs = scoreSides->first, &ks = scoreSides->second, &vs = outputSides->second;
  Value q = transposed(b, loc, qIn, qs.order(qs.free, qs.contract));
  Value k = transposed(b, loc, kIn, ks.order(ks.free, ks.contract));
  Value v = transposed(b, loc, output.getRhs(), vs.order(vs.contract, vs.free));
  auto fused = AttentionOp::create(b, loc, output.getType(), q, k, v, mask,
                                   b.getF64FloatAttr(scale), b.getF64FloatAttr(fill),
                                   b.getBoolAttr(fillWhereTrue));
  output.replaceAllUsesWith(fused.getResult());
  // The chain is dead now: erase it from the product up, then the bias's
  // broadcast and select if nothing else reads them (the bias is not in
  // the chain: its ops outlive the loop).
  chain.push_back(scores);
  chain.append(operandScales);
  for (Operation *op : chain)
    op->erase();
  if (auto broadcast = dyn_cast_or_null<BroadcastInDimOp>(biasDef);
      broadcast && broadcast->use_empty()) {
    biasDef = broadcast.getOperand().getDefiningOp();
    broadcast->erase();
  }
  if (auto select = dyn_cast_or_null<SelectOp>(biasDef); select && select->use_empty())
    select->erase();
  return true;
}

struct FuseAttention : trc::impl::FuseAttentionBase<FuseAttention> {
  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    for (SoftmaxOp softmax : softmaxes)
      fuse(softmax);
  }
};
} // namespace
