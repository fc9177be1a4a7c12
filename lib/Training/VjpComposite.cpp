//===- VjpComposite.cpp - VJP rules of the composite trc ops ---------------===//
//
// The closed forms, so that trc-autodiff works with or without
// trc-decompose-composites (and the backward of a composite stays a few
// fused-friendly ops instead of the VJP of its decomposition):
//   softmax      dx = r (g - sum(g r))
//   log_softmax  dx = g - e^r sum(g)
//   layer_norm   x^ = (x - mean) rstd; dscale = sum(g x^), dbias = sum(g)
//                over the leading dims; with h = g scale,
//                dx = rstd (h - mean(h) - x^ mean(h x^))  (x^ recomputed
//                from x behind a trc.optimization_barrier)
//   gelu         exact: Phi(x) + x phi(x); tanh form: its derivative
//   cross_entropy dlogits = (softmax(logits) - onehot) * w * s, where w is 0
//                for ignored labels and s the loss gradient (divided by the
//                count of kept labels for mean); log_probs: -onehot * w * s.
//                Labels outside [0, C) that are not ignore_index are invalid
//                input (PyTorch rejects them); they get softmax * w * s.
//   attention    trc.attention_grad (q, k, v and the mask kept, the
//                probabilities recomputed when it is lowered)
// dropout has no rule: its mask is not reproducible here yet.
//
//===----------------------------------------------------------------------===//
#include "VjpRules.h"

#include <cmath>

using namespace mlir;

namespace trc::autodiff {

LogicalResult vjp(SoftmaxOp op, VjpContext &c) {
  Value r = op.getResult();
  auto t = VjpBuilder::type(r);
  int64_t axis = op.getAxis();
  Value dot = c.expand(c.reduce(ReduceKind::Sum, c.mul(c.grad, r), {axis}), t, {axis});
  c.setGrad(0, c.mul(r, c.sub(c.grad, dot)));
  return success();
}

LogicalResult vjp(LogSoftmaxOp op, VjpContext &c) {
  Value r = op.getResult();
  auto t = VjpBuilder::type(r);
  int64_t axis = op.getAxis();
  Value sum = c.expand(c.reduce(ReduceKind::Sum, c.grad, {axis}), t, {axis});
  c.setGrad(0, c.sub(c.grad, c.mul(c.unary<ExpOp>(r), sum)));
  return success();
}

LogicalResult vjp(LayerNormOp op, VjpContext &c) {
  Value x = op.getOperand(), g = c.grad;
  auto t = VjpBuilder::type(x);
  int64_t axis = op.getAxis();
  auto normalized = llvm::to_vector(llvm::seq<int64_t>(axis, t.getRank()));
  auto leading = llvm::to_vector(llvm::seq<int64_t>(0, axis));
  double count = 1;
  for (int64_t d : normalized)
    count *= static_cast<double>(t.getDimSize(d));
  auto mean = [&](Value v) {
    return c.scale(c.expand(c.reduce(ReduceKind::Sum, v, normalized), t, normalized),
                   1.0 / count);
  };
  // Forward statistics, recomputed as trc-decompose-composites computes them,
  // from x read through a barrier: otherwise CSE merges them with the
  // forward's decomposition, keeping x^ and rstd (two tensors of x's size)
  // from the forward to the backward instead of a reduction's recompute.
  x = OptimizationBarrierOp::create(c.b, c.loc, x);
  Value centered = c.sub(x, mean(x));
  Value variance = mean(c.mul(centered, centered));
  Value rstd = c.unary<RsqrtOp>(c.add(variance, c.like(x, op.getEpsilon().convertToDouble())));
  Value xhat = c.mul(centered, rstd);

  unsigned scaleIndex = 1, biasIndex = op.getScale() ? 2 : 1;
  auto params = [&](Value v) { return c.broadcast(v, t.getShape(), normalized); };
  if (op.getScale() && c.wants(scaleIndex))
    c.setGrad(scaleIndex, c.reduce(ReduceKind::Sum, c.mul(g, xhat), leading));
  if (op.getBias() && c.wants(biasIndex))
    c.setGrad(biasIndex, c.reduce(ReduceKind::Sum, g, leading));
  if (c.wants(0)) {
    Value h = op.getScale() ? c.mul(g, params(op.getScale())) : g;
    Value inner = c.sub(c.sub(h, mean(h)), c.mul(xhat, mean(c.mul(h, xhat))));
    c.setGrad(0, c.mul(rstd, inner));
  }
  return success();
}

LogicalResult vjp(GeluOp op, VjpContext &c) {
  Value x = op.getOperand();
  Value derivative;
  if (op.getTanhApproximation()) {
    // y = x/2 (1 + t), t = tanh(u), u = k (x + a x^3):
    // dy = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3a x^2)
    const double k = std::sqrt(2.0 / M_PI), a = 0.044715;
    Value x2 = c.mul(x, x);
    Value u = c.scale(c.add(x, c.scale(c.mul(x2, x), a)), k);
    Value th = c.unary<TanhOp>(u);
    Value one = c.like(x, 1.0);
    Value du = c.scale(c.add(one, c.scale(x2, 3.0 * a)), k);
    Value dt = c.mul(c.sub(one, c.mul(th, th)), du);
    derivative = c.scale(c.add(c.add(one, th), c.mul(x, dt)), 0.5);
  } else {
    // Phi(x) + x phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2,
    // phi(x) = e^(-x^2/2) / sqrt(2 pi)
    Value cdf = c.scale(c.add(c.like(x, 1.0), c.unary<ErfOp>(c.scale(x, M_SQRT1_2))), 0.5);
    Value pdf = c.scale(c.unary<ExpOp>(c.scale(c.mul(x, x), -0.5)), 1.0 / std::sqrt(2.0 * M_PI));
    derivative = c.add(cdf, c.mul(x, pdf));
  }
  c.setGrad(0, c.mul(c.grad, derivative));
  return success();
}

LogicalResult vjp(CrossEntropyOp op, VjpContext &c) {
  Value logits = op.getLogits(), labels = op.getLabels();
  auto t = VjpBuilder::type(logits);
  auto labelType = VjpBuilder::type(labels);
  auto sampleType = t.clone(labelType.getShape());
  // Label dims in the logits: 0, 2, 3, ...
  SmallVector<int64_t> sampleDims{0};
  for (int64_t i = 2; i < t.getRank(); ++i)
    sampleDims.push_back(i);
  auto all = llvm::to_vector(llvm::seq<int64_t>(0, labelType.getRank()));

  // Per-sample weight: 0 for ignored labels (null: all ones).
  Value weight;
  if (auto ignore = op.getIgnoreIndexAttr()) {
    Value keep = c.compare(CompareDirection::NE, labels,
                           c.splat(labelType, static_cast<double>(ignore.getInt())));
    weight = c.select(keep, c.splat(sampleType, 1.0), c.splat(sampleType, 0.0));
  }
  // Per-sample scale s of the loss gradient.
  Value s;
  switch (op.getReduction()) {
  case LossReduction::None:
    s = weight ? c.mul(c.grad, weight) : c.grad;
    break;
  case LossReduction::Sum:
  case LossReduction::Mean: {
    Value g = c.grad;
    if (op.getReduction() == LossReduction::Mean)
      g = weight ? c.div(g, c.reduce(ReduceKind::Sum, weight, all))
                 : c.scale(g, 1.0 / static_cast<double>(sampleType.getNumElements()));
    s = c.broadcast(g, sampleType.getShape(), {});
    if (weight)
      s = c.mul(s, weight);
    break;
  }
  }
  auto wide = t.clone(labelType.getElementType());
  Value hit = c.compare(CompareDirection::EQ, c.b.create<IotaOp>(c.loc, wide, 1),
                        c.broadcast(labels, t.getShape(), sampleDims));
  Value sWide = c.broadcast(s, t.getShape(), sampleDims);
  Value grad;
  if (op.getLogProbs()) {
    grad = c.select(hit, c.neg(sWide), c.like(logits, 0.0));
  } else {
    Value probs = c.b.create<SoftmaxOp>(c.loc, logits, 1);
    grad = c.mul(c.select(hit, c.sub(probs, c.like(logits, 1.0)), probs), sWide);
  }
  c.setGrad(0, grad);
  return success();
}

LogicalResult vjp(AttentionOp op, VjpContext &c) {
  auto grads = AttentionGradOp::create(c.b, c.loc, op.getQ().getType(), op.getK().getType(),
                                       op.getV().getType(), op.getQ(), op.getK(), op.getV(),
                                       c.grad, op.getMask(), op.getScaleAttr(),
                                       op.getMaskFillAttr(), op.getFillWhereTrueAttr());
  c.setGrad(0, grads.getQGrad());
  c.setGrad(1, grads.getKGrad());
  c.setGrad(2, grads.getVGrad());
  return success();
}

} // namespace trc::autodiff
