//===- ActivationOps.cpp - ONNX activation functions -> trc ----------------===//
//
// Elu, Celu, Selu, LeakyRelu, PRelu, ThresholdedRelu, HardSigmoid,
// HardSwish, Softplus, Softsign, Shrink, Mish: each a composition of
// elementwise core ops (compare + select for the piecewise ones), so each
// differentiates through the rules of its parts. Attributes take the ONNX
// defaults.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "Common.h"

#include <cmath>

using namespace mlir;

namespace trc::import {
namespace {

Value times(ImportContext &ctx, Value x, double c) {
  return x ? ctx.build<MulOp>(x, splatLike(ctx, x, c)) : Value();
}
Value plus(ImportContext &ctx, Value x, double c) {
  return x ? ctx.build<AddOp>(x, splatLike(ctx, x, c)) : Value();
}
Value clamp01(ImportContext &ctx, Value x) {
  return x ? ctx.build<MinOp>(ctx.build<MaxOp>(x, splatLike(ctx, x, 0.0)),
                              splatLike(ctx, x, 1.0))
           : Value();
}
/// log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|)).
Value softplus(ImportContext &ctx, Value x) {
  Value positive = ctx.build<MaxOp>(x, splatLike(ctx, x, 0.0));
  Value tail = ctx.build<LogOp>(
      plus(ctx, ctx.build<ExpOp>(ctx.build<NegOp>(ctx.build<AbsOp>(x))), 1.0));
  return positive && tail ? ctx.build<AddOp>(positive, tail) : Value();
}

// alpha (exp(x) - 1) for x < 0, x otherwise.
LogicalResult importElu(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  double alpha = ctx.floatAttr("alpha", 1.0f);
  Value negative = times(ctx, plus(ctx, ctx.build<ExpOp>(x), -1.0), alpha);
  return ctx.setOutput(
      0, select(ctx, compareWith(ctx, CompareDirection::LT, x, 0.0), negative, x));
}

// max(0, x) + min(0, alpha (exp(x / alpha) - 1)).
LogicalResult importCelu(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  double alpha = ctx.floatAttr("alpha", 1.0f);
  if (alpha == 0)
    return ctx.fail("alpha must not be 0");
  Value zero = splatLike(ctx, x, 0.0);
  Value negative =
      times(ctx, plus(ctx, ctx.build<ExpOp>(times(ctx, x, 1.0 / alpha)), -1.0), alpha);
  return ctx.setOutput(0, ctx.build<AddOp>(ctx.build<MaxOp>(x, zero),
                                           ctx.build<MinOp>(negative, zero)));
}

// gamma (alpha exp(x) - alpha) for x <= 0, gamma x otherwise.
LogicalResult importSelu(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  double alpha = ctx.floatAttr("alpha", 1.67326319217681884765625f);
  double gamma = ctx.floatAttr("gamma", 1.05070102214813232421875f);
  Value negative = plus(ctx, times(ctx, ctx.build<ExpOp>(x), alpha), -alpha);
  return ctx.setOutput(
      0, times(ctx, select(ctx, compareWith(ctx, CompareDirection::LE, x, 0.0), negative, x),
               gamma));
}

LogicalResult importLeakyRelu(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  double alpha = ctx.floatAttr("alpha", 0.01f);
  return ctx.setOutput(0, select(ctx, compareWith(ctx, CompareDirection::LT, x, 0.0),
                                 times(ctx, x, alpha), x));
}

// slope x for x < 0 (slope broadcast to x), x otherwise.
LogicalResult importPRelu(ImportContext &ctx) {
  Value x = ctx.input(0), slope = ctx.input(1);
  if (!x || !slope)
    return failure();
  auto shape = ctx.broadcastShape(typeOf(x).getShape(), typeOf(slope).getShape());
  if (!shape)
    return failure();
  if (ArrayRef<int64_t>(*shape) != typeOf(x).getShape())
    return ctx.fail("slope ", shapeString(typeOf(slope).getShape()),
                    " does not broadcast to the input ", shapeString(typeOf(x).getShape()));
  slope = ctx.broadcastTo(slope, *shape);
  if (!slope)
    return failure();
  if (typeOf(slope).getElementType() != typeOf(x).getElementType())
    return ctx.fail("slope and input element types differ");
  return ctx.setOutput(0, select(ctx, compareWith(ctx, CompareDirection::LT, x, 0.0),
                                 ctx.build<MulOp>(slope, x), x));
}

LogicalResult importThresholdedRelu(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  double alpha = ctx.floatAttr("alpha", 1.0f);
  return ctx.setOutput(0, select(ctx, compareWith(ctx, CompareDirection::GT, x, alpha), x,
                                 splatLike(ctx, x, 0.0)));
}

// max(0, min(1, alpha x + beta)).
LogicalResult importHardSigmoid(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  double alpha = ctx.floatAttr("alpha", 0.2f), beta = ctx.floatAttr("beta", 0.5f);
  return ctx.setOutput(0, clamp01(ctx, plus(ctx, times(ctx, x, alpha), beta)));
}

// x max(0, min(1, x / 6 + 1 / 2)).
LogicalResult importHardSwish(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  Value gate = clamp01(ctx, plus(ctx, times(ctx, x, 1.0 / 6.0), 0.5));
  return ctx.setOutput(0, gate ? ctx.build<MulOp>(x, gate) : Value());
}

LogicalResult importSoftplus(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  return ctx.setOutput(0, softplus(ctx, x));
}

// x / (1 + |x|).
LogicalResult importSoftsign(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  return ctx.setOutput(0, ctx.build<DivOp>(x, plus(ctx, ctx.build<AbsOp>(x), 1.0)));
}

// x + bias below -lambd, x - bias above lambd, 0 between.
LogicalResult importShrink(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  double bias = ctx.floatAttr("bias", 0.0f), lambd = ctx.floatAttr("lambd", 0.5f);
  if (lambd < 0)
    return ctx.fail("lambd must not be negative, got ", lambd);
  Value below = compareWith(ctx, CompareDirection::LT, x, -lambd);
  Value above = compareWith(ctx, CompareDirection::GT, x, lambd);
  return ctx.setOutput(0, select(ctx, below, plus(ctx, x, bias),
                                 select(ctx, above, plus(ctx, x, -bias),
                                        splatLike(ctx, x, 0.0))));
}

// x tanh(softplus(x)).
LogicalResult importMish(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  Value sp = softplus(ctx, x);
  return ctx.setOutput(0, sp ? ctx.build<MulOp>(x, ctx.build<TanhOp>(sp)) : Value());
}

} // namespace

void registerActivationHandlers(HandlerRegistry &r) {
  r.add("Elu", 6, importElu);
  r.add("Celu", 12, importCelu);
  r.add("Selu", 6, importSelu);
  r.add("LeakyRelu", 6, importLeakyRelu);
  r.add("PRelu", 7, importPRelu);
  r.add("ThresholdedRelu", 10, importThresholdedRelu);
  r.add("HardSigmoid", 6, importHardSigmoid);
  r.add("HardSwish", 14, importHardSwish);
  r.add("Softplus", 1, importSoftplus);
  r.add("Softsign", 1, importSoftsign);
  r.add("Shrink", 9, importShrink);
  r.add("Mish", 18, importMish);
}

} // namespace trc::import
