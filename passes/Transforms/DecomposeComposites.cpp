//===- DecomposeComposites.cpp - trc-decompose-composites -----------------===//
//
// Rewrites softmax, log_softmax, layer_norm, gelu and cross_entropy into core
// trc ops (see Passes.td). Preconditions: verified trc IR with static shapes.
// The rewrites keep element types: reductions accumulate in the operand's type.
//
//===----------------------------------------------------------------------===//
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

/// Small builder of core ops at one location.
struct Core {
  PatternRewriter &rw;
  Location loc;

  RankedTensorType type(Value v) { return cast<RankedTensorType>(v.getType()); }

  Value splat(RankedTensorType t, double v) {
    Attribute a = isa<FloatType>(t.getElementType())
                      ? Attribute(rw.getFloatAttr(t.getElementType(), v))
                      : Attribute(rw.getIntegerAttr(t.getElementType(),
                                                    static_cast<int64_t>(v)));
    return rw.create<ConstantOp>(loc, SplatElementsAttr::get(t, a));
  }
  Value like(Value v, double c) { return splat(type(v), c); }

  /// Reduces `dims` away.
  Value reduce(ReduceKind kind, Value x, ArrayRef<int64_t> dims) {
    SmallVector<int64_t> kept;
    for (int64_t i = 0; i < type(x).getRank(); ++i)
      if (!llvm::is_contained(dims, i))
        kept.push_back(type(x).getDimSize(i));
    return rw.create<ReduceOp>(
        loc, RankedTensorType::get(kept, type(x).getElementType()), kind, x, dims);
  }
  /// Broadcasts a reduction result back over the reduced `dims` of `shape`.
  Value expand(Value r, RankedTensorType shape, ArrayRef<int64_t> dims) {
    SmallVector<int64_t> map;
    for (int64_t i = 0; i < shape.getRank(); ++i)
      if (!llvm::is_contained(dims, i))
        map.push_back(i);
    return rw.create<BroadcastInDimOp>(
        loc, RankedTensorType::get(shape.getShape(), type(r).getElementType()), r,
        map);
  }
  /// reduce then broadcast back: the shape of `x`.
  Value reduceKeep(ReduceKind kind, Value x, ArrayRef<int64_t> dims) {
    return expand(reduce(kind, x, dims), type(x), dims);
  }

  Value add(Value a, Value b) { return rw.create<AddOp>(loc, a, b); }
  Value sub(Value a, Value b) { return rw.create<SubOp>(loc, a, b); }
  Value mul(Value a, Value b) { return rw.create<MulOp>(loc, a, b); }
  Value div(Value a, Value b) { return rw.create<DivOp>(loc, a, b); }
};

SmallVector<int64_t> dimsFrom(int64_t first, int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(first, rank));
}

/// x - max(x) along `axis`, and log(sum(exp(that))): the two halves of a
/// stable (log-)softmax.
std::pair<Value, Value> shiftedAndLogSum(Core &c, Value x, int64_t axis) {
  Value shifted = c.sub(x, c.reduceKeep(ReduceKind::Max, x, {axis}));
  Value sum = c.reduceKeep(ReduceKind::Sum, c.rw.create<ExpOp>(c.loc, shifted), {axis});
  return {shifted, c.rw.create<LogOp>(c.loc, sum)};
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
    Value logProbs = logits;
    if (!op.getLogProbs()) {
      auto [shifted, logSum] = shiftedAndLogSum(c, logits, 1);
      logProbs = c.sub(shifted, logSum);
    }
    // picked[n, d...] = logProbs[n, labels[n, d...], d...] through a one-hot
    // mask over the class dimension (labels outside [0, C) pick nothing).
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
                            rw.create<SelectOp>(c.loc, hit, logProbs, c.like(logProbs, 0)),
                            {1});
    Value loss = rw.create<NegOp>(c.loc, picked);
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

struct DecomposeComposites
    : trc::impl::DecomposeCompositesBase<DecomposeComposites> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeSoftmax, DecomposeLogSoftmax, DecomposeLayerNorm,
                 DecomposeGelu, DecomposeCrossEntropy>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
