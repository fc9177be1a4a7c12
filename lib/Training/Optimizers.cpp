//===- Optimizers.cpp - optimizer update rules as trc IR --------------------===//
#include "trc/Training/Optimizers.h"

using namespace mlir;

namespace trc::training {

Value UpdateBuilder::constant(double v) {
  return b_.create<ConstantOp>(
      loc_, SplatElementsAttr::get(type_, b_.getFloatAttr(type_.getElementType(), v)));
}

Value UpdateBuilder::scalarConstant(double v) {
  auto t = RankedTensorType::get({}, type_.getElementType());
  return b_.create<ConstantOp>(loc_,
                               SplatElementsAttr::get(t, b_.getFloatAttr(t.getElementType(), v)));
}

Value UpdateBuilder::toElement(Value scalar) {
  auto t = cast<RankedTensorType>(scalar.getType());
  if (t.getElementType() == type_.getElementType())
    return scalar;
  return b_.create<ConvertOp>(loc_, RankedTensorType::get({}, type_.getElementType()),
                              scalar);
}

Value UpdateBuilder::expand(Value scalar) {
  scalar = toElement(scalar);
  if (type_.getRank() == 0)
    return scalar;
  return b_.create<BroadcastInDimOp>(loc_, type_, scalar, ArrayRef<int64_t>{});
}

Value UpdateBuilder::add(Value a, Value c) { return b_.create<AddOp>(loc_, a, c); }
Value UpdateBuilder::sub(Value a, Value c) { return b_.create<SubOp>(loc_, a, c); }
Value UpdateBuilder::mul(Value a, Value c) { return b_.create<MulOp>(loc_, a, c); }
Value UpdateBuilder::div(Value a, Value c) { return b_.create<DivOp>(loc_, a, c); }
Value UpdateBuilder::sqrt(Value a) { return b_.create<SqrtOp>(loc_, a); }
Value UpdateBuilder::pow(Value a, Value e) { return b_.create<PowOp>(loc_, a, e); }
Value UpdateBuilder::select(Value pred, Value a, Value c) {
  return b_.create<SelectOp>(loc_, pred, a, c);
}
Value UpdateBuilder::greaterThanZero(Value a) {
  auto t = cast<RankedTensorType>(a.getType());
  Value zero = b_.create<ConstantOp>(
      loc_, SplatElementsAttr::get(t, b_.getFloatAttr(t.getElementType(), 0.0)));
  return b_.create<CompareOp>(loc_, RankedTensorType::get(t.getShape(), b_.getI1Type()),
                              CompareDirection::GT, a, zero);
}

Update adam(UpdateBuilder &u, Value x, Value g, Value m, Value v, Value lr, Value step,
            const AdamOptions &o, Value stepIsZero) {
  Value rate = u.toElement(lr);
  if (o.decoupledDecay != 0.0) // AdamW: decay the weights by lr * wd first
    x = u.mul(x, u.expand(u.sub(u.scalarConstant(1.0),
                                u.mul(rate, u.scalarConstant(o.decoupledDecay)))));
  if (o.weightDecay != 0.0)
    g = u.add(g, u.mul(x, u.constant(o.weightDecay)));
  Value m2 = u.add(u.mul(m, u.constant(o.beta1)), u.mul(g, u.constant(1.0 - o.beta1)));
  Value v2 =
      u.add(u.mul(v, u.constant(o.beta2)), u.mul(u.mul(g, g), u.constant(1.0 - o.beta2)));
  Value t = u.toElement(step);
  Value one = u.scalarConstant(1.0);
  // Bias corrections 1 - beta^t as scalars.
  Value c1 = o.biasCorrection ? u.sub(one, u.pow(u.scalarConstant(o.beta1), t)) : one;
  Value c2 = o.biasCorrection ? u.sub(one, u.pow(u.scalarConstant(o.beta2), t)) : one;
  if (stepIsZero) { // ONNX applies no correction at T == 0
    c1 = u.select(stepIsZero, one, c1);
    c2 = u.select(stepIsZero, one, c2);
  }
  Value update;
  if (o.epsilonMode == AdamEpsilon::Torch) {
    // lr * (m / c1) / (sqrt(v / c2) + eps)
    Value denom = u.add(u.sqrt(u.div(v2, u.expand(c2))), u.constant(o.epsilon));
    update = u.div(u.mul(u.expand(u.div(rate, c1)), m2), denom);
  } else {
    // lr * sqrt(c2) / c1 * m / (sqrt(v) + eps)
    Value scale = u.div(u.mul(rate, u.sqrt(c2)), c1);
    update = u.div(u.mul(u.expand(scale), m2), u.add(u.sqrt(v2), u.constant(o.epsilon)));
  }
  Value x2 = u.sub(x, update);
  if (o.postDecay != 0.0)
    x2 = u.mul(x2, u.constant(1.0 - o.postDecay));
  return {x2, {m2, v2}};
}

Update momentum(UpdateBuilder &u, Value x, Value g, Value velocity, Value lr, Value first,
                const MomentumOptions &o) {
  if (o.weightDecay != 0.0)
    g = u.add(g, u.mul(x, u.constant(o.weightDecay)));
  Value scale = u.scalarConstant(o.gradScale);
  if (first)
    scale = u.select(first, u.scalarConstant(1.0), scale);
  Value v2 = u.add(u.mul(velocity, u.constant(o.momentum)), u.mul(g, u.expand(scale)));
  Value direction = o.nesterov ? u.add(g, u.mul(v2, u.constant(o.momentum))) : v2;
  return {u.sub(x, u.mul(u.expand(lr), direction)), {v2}};
}

Update adagrad(UpdateBuilder &u, Value x, Value g, Value h, Value lr,
               const AdagradOptions &o) {
  if (o.weightDecay != 0.0)
    g = u.add(g, u.mul(x, u.constant(o.weightDecay)));
  Value h2 = u.add(h, u.mul(g, g));
  Value step = u.div(u.mul(u.expand(lr), g), u.add(u.sqrt(h2), u.constant(o.epsilon)));
  return {u.sub(x, step), {h2}};
}

} // namespace trc::training
