//===- DecomposeComposites.cpp - trc-decompose-composites -----------------===//
//
// Rewrites softmax, log_softmax, layer_norm, gelu, cross_entropy, attention
// and attention_grad into core trc ops (see Passes.td). Preconditions:
// verified trc IR with static shapes. The rewrites keep element types:
// reductions accumulate in the operand's type, except attention's softmax,
// which is computed in f32 for bf16/f16 operands (as trc-mixed-precision
// keeps an unfused softmax).
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Dialect/CoreBuilder.h"
#include "trc/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace trc {
#define GEN_PASS_DEF_DECOMPOSECOMPOSITES
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;

namespace {

using Core = CoreBuilder;

SmallVector<int64_t> dimsFrom(int64_t first, int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(first, rank));
}

/// x - max(x) along `axis`, and log(sum(exp(that))): the two halves of a
/// stable (log-)softmax.
std::pair<Value, Value> shiftedAndLogSum(Core &c, Value x, int64_t axis) {
  Value shifted = c.sub(x, c.reduceKeep(ReduceKind::Max, x, {axis}));
  Value sum = c.reduceKeep(ReduceKind::Sum, c.b.create<ExpOp>(c.loc, shifted), {axis});
  return {shifted, c.b.create<LogOp>(c.loc, sum)};
}

struct DecomposeSoftmax : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op, PatternRewriter &rw) const override {
    Core c{rw, op.getLoc()};
    int64_t axis = op.getAxis();
    Value x = op.getOperand();
    Value e = rw.create<ExpOp>(c.loc, c.sub(x, c.reduceKeep(ReduceKind::Max, x, {axis})));
    rw.replaceOp(op, c.div(e, c.reduceKeep(ReduceKind::Sum, e, {axis})));
    return success();
  }
};

struct DecomposeLogSoftmax : OpRewritePattern<LogSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LogSoftmaxOp op, PatternRewriter &rw) const override {
    Core c{rw, op.getLoc()};
    auto [shifted, logSum] = shiftedAndLogSum(c, op.getOperand(), op.getAxis());
    rw.replaceOp(op, c.sub(shifted, logSum));
    return success();
  }
};

struct DecomposeLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op, PatternRewriter &rw) const override {
    Core c{rw, op.getLoc()};
    Value x = op.getOperand();
    auto t = c.type(x);
    auto dims = dimsFrom(op.getAxis(), t.getRank());
    double count = 1;
    for (int64_t d : dims)
      count *= static_cast<double>(t.getDimSize(d));
    Value invCount = c.like(x, 1.0 / count);
    Value centered = c.sub(x, c.mul(c.reduceKeep(ReduceKind::Sum, x, dims), invCount));
    Value variance =
        c.mul(c.reduceKeep(ReduceKind::Sum, c.mul(centered, centered), dims), invCount);
    Value eps = c.like(x, op.getEpsilon().convertToDouble());
    Value y = c.mul(centered, rw.create<RsqrtOp>(c.loc, c.add(variance, eps)));
    // scale and bias have the normalized shape: broadcast over leading dims.
    auto leading = [&](Value v) {
      return rw.create<BroadcastInDimOp>(c.loc, t, v, dims).getResult();
    };
    if (op.getScale())
      y = c.mul(y, leading(op.getScale()));
    if (op.getBias())
      y = c.add(y, leading(op.getBias()));
    rw.replaceOp(op, y);
    return success();
  }
};

struct DecomposeGelu : OpRewritePattern<GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluOp op, PatternRewriter &rw) const override {
    Core c{rw, op.getLoc()};
    Value x = op.getOperand();
    Value inner;
    if (op.getTanhApproximation()) {
      // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
      Value cube = c.mul(c.mul(x, x), x);
      Value poly = c.add(x, c.mul(cube, c.like(x, 0.044715)));
      inner = rw.create<TanhOp>(c.loc, c.mul(poly, c.like(x, std::sqrt(2.0 / M_PI))));
    } else {
      inner = rw.create<ErfOp>(c.loc, c.mul(x, c.like(x, M_SQRT1_2)));
    }
    Value half = c.mul(x, c.like(x, 0.5));
    rw.replaceOp(op, c.mul(half, c.add(inner, c.like(x, 1.0))));
    return success();
  }
};

struct DecomposeCrossEntropy : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op, PatternRewriter &rw) const override {
    Core c{rw, op.getLoc()};
    Value logits = op.getLogits(), labels = op.getLabels();
    auto t = c.type(logits);
    auto labelType = c.type(labels);
    // picked[n, d...] = x[n, labels[n, d...], d...] through a one-hot mask
    // over the class dimension (labels outside [0, C) pick nothing).
    auto wide = RankedTensorType::get(t.getShape(), labelType.getElementType());
    SmallVector<int64_t> labelDims{0};
    for (int64_t i = 2; i < t.getRank(); ++i)
      labelDims.push_back(i);
    Value classIndex = rw.create<IotaOp>(c.loc, wide, 1);
    Value labelsWide = rw.create<BroadcastInDimOp>(c.loc, wide, labels, labelDims);
    auto predWide = RankedTensorType::get(t.getShape(), rw.getI1Type());
    Value hit = rw.create<CompareOp>(c.loc, predWide, CompareDirection::EQ, classIndex,
                                     labelsWide);
    Value picked = c.reduce(ReduceKind::Sum,
                            rw.create<SelectOp>(c.loc, hit, logits, c.like(logits, 0)), {1});
    // From logits: loss = logsumexp(x) - x[label], as reductions of x (the
    // log-probabilities are never formed: each [N, C] temporary feeds one
    // reduction and dies, so the LM head's peak holds the logits and one).
    Value loss;
    if (op.getLogProbs()) {
      loss = rw.create<NegOp>(c.loc, picked);
    } else {
      Value max = c.reduce(ReduceKind::Max, logits, {1});
      Value shifted = c.sub(logits, c.expand(max, t, {1}));
      Value sum = c.reduce(ReduceKind::Sum, rw.create<ExpOp>(c.loc, shifted), {1});
      loss = c.sub(c.add(max, rw.create<LogOp>(c.loc, sum)), picked);
    }
    auto lossType = c.type(loss);
    Value weight = c.splat(lossType, 1.0);
    if (auto ignore = op.getIgnoreIndexAttr()) {
      auto predType = RankedTensorType::get(labelType.getShape(), rw.getI1Type());
      Value keep = rw.create<CompareOp>(c.loc, predType, CompareDirection::NE, labels,
                                        c.splat(labelType, static_cast<double>(ignore.getInt())));
      weight = rw.create<SelectOp>(c.loc, keep, weight, c.splat(lossType, 0.0));
      loss = c.mul(loss, weight);
    }
    SmallVector<int64_t> all = dimsFrom(0, lossType.getRank());
    switch (op.getReduction()) {
    case LossReduction::None:
      break;
    case LossReduction::Sum:
      loss = c.reduce(ReduceKind::Sum, loss, all);
      break;
    case LossReduction::Mean:
      loss = c.div(c.reduce(ReduceKind::Sum, loss, all),
                   c.reduce(ReduceKind::Sum, weight, all));
      break;
    }
    rw.replaceOp(op, loss);
    return success();
  }
};

/// The mask stretched to the scores' shape (null without one); in the
/// gradient the stretch is marked recomputed like the scores (see below),
/// so that each use fuses its own and only the small mask is kept.
template <typename OpT> Value maskOf(Core &c, OpT op, bool recomputed) {
  Value mask = op.getMask();
  if (!mask)
    return mask;
  auto q = c.type(op.getQ());
  SmallVector<int64_t> scores(q.getShape().drop_back(1));
  scores.push_back(c.type(op.getK()).getShape().drop_back(1).back());
  if (c.type(mask).getShape() == ArrayRef(scores))
    return mask;
  auto stretched = c.b.create<BroadcastInDimOp>(
      c.loc, c.type(mask).clone(scores), mask, llvm::to_vector(llvm::seq<int64_t>(0, q.getRank())));
  if (recomputed)
    stretched->setAttr(trc::abi::kRecomputedAttr, c.b.getUnitAttr());
  return stretched;
}

/// Attention's probabilities softmax(mask(scale q k^T)) along the last dim,
/// computed in f32 (returned as f32) and the scale/mask steps in the
/// operands' type; shared by the forward and the gradient, which recomputes
/// them the same way.
template <typename OpT> Value attentionProbabilities(Core &c, OpT op, bool recomputed) {
  Value q = op.getQ(), k = op.getK();
  int64_t rank = c.type(q).getRank();
  Value s = c.product(q, k, rank - 1, rank - 1);
  // The gradient's recomputation must not be merged (CSE) with the
  // forward's: that would keep the probabilities from the forward to the
  // backward, which is what the fused op exists to avoid.
  if (recomputed)
    s.getDefiningOp()->setAttr(trc::abi::kRecomputedAttr, c.b.getUnitAttr());
  if (op.getScale().convertToDouble() != 1.0)
    s = c.mul(s, c.like(s, op.getScale().convertToDouble()));
  if (Value mask = maskOf(c, op, recomputed)) {
    Value fill = c.like(s, op.getMaskFill().convertToDouble());
    s = op.getFillWhereTrue() ? c.b.create<SelectOp>(c.loc, mask, fill, s).getResult()
                              : c.b.create<SelectOp>(c.loc, mask, s, fill).getResult();
  }
  Value wide = c.convert(s, c.b.getF32Type());
  return c.b.create<SoftmaxOp>(c.loc, wide, rank - 1);
}

struct DecomposeAttention : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionOp op, PatternRewriter &rw) const override {
    Core c{rw, op.getLoc()};
    int64_t rank = c.type(op.getQ()).getRank();
    Type element = c.type(op.getQ()).getElementType();
    Value p = c.convert(attentionProbabilities(c, op, /*recomputed=*/false), element);
    rw.replaceOp(op, c.product(p, op.getV(), rank - 1, rank - 2));
    return success();
  }
};

/// The VJPs of the decomposed forward, in the order trc-autodiff would
/// emit them for the unfused chain (so both give the same numbers).
struct DecomposeAttentionGrad : OpRewritePattern<AttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AttentionGradOp op, PatternRewriter &rw) const override {
    Core c{rw, op.getLoc()};
    Value q = op.getQ(), k = op.getK(), v = op.getV(), g = op.getResultGrad();
    int64_t rank = c.type(q).getRank();
    Type element = c.type(q).getElementType(), f32 = rw.getF32Type();
    Value wideP = attentionProbabilities(c, op, /*recomputed=*/true);
    Value p = c.convert(wideP, element);
    Value dv = c.product(p, g, rank - 2, rank - 2);
    // softmax's VJP in f32: dx = p (dp - sum(dp p))
    Value dp = c.convert(c.product(g, v, rank - 1, rank - 1), f32);
    Value dx = c.mul(wideP, c.sub(dp, c.reduceKeep(ReduceKind::Sum, c.mul(dp, wideP), {rank - 1})));
    Value ds = c.convert(dx, element);
    if (Value mask = maskOf(c, op, /*recomputed=*/true)) {
      Value zero = c.like(ds, 0.0);
      ds = op.getFillWhereTrue() ? rw.create<SelectOp>(c.loc, mask, zero, ds).getResult()
                                 : rw.create<SelectOp>(c.loc, mask, ds, zero).getResult();
    }
    if (op.getScale().convertToDouble() != 1.0)
      ds = c.mul(ds, c.like(ds, op.getScale().convertToDouble()));
    Value dq = c.product(ds, k, rank - 1, rank - 2);
    Value dk = c.product(ds, q, rank - 2, rank - 2);
    rw.replaceOp(op, {dq, dk, dv});
    return success();
  }
};

struct DecomposeComposites
    : trc::impl::DecomposeCompositesBase<DecomposeComposites> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    trc::populateDecomposeCompositePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void trc::populateDecomposeCompositePatterns(RewritePatternSet &patterns) {
  patterns.add<DecomposeSoftmax, DecomposeLogSoftmax, DecomposeLayerNorm, DecomposeGelu,
               DecomposeCrossEntropy, DecomposeAttention, DecomposeAttentionGrad>(
      patterns.getContext());
}
