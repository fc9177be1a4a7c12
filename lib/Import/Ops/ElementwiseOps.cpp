//===- ElementwiseOps.cpp - ONNX elementwise ops -> trc ---------------------===//
//
// Add, Sub, Mul, Div, Pow, Max, Min, Sum, Mean, And, Or, Xor, Neg, Abs, Exp,
// Log, Sqrt, Reciprocal, Tanh, Erf, Sin, Cos, Tan, Sinh, Cosh, Asinh, Acosh,
// Atanh, Sigmoid, Relu, Floor, Ceil, Round, Sign, Mod, IsNaN, IsInf, Not,
// Equal, Less, LessOrEqual, Greater, GreaterOrEqual, Where, Clip, Gelu.
// ONNX broadcasting (numpy rules, opset >= 7) becomes explicit
// trc.broadcast_in_dim; the core binary ops take equal shapes. Functions
// the core lacks are compositions: ceil(x) = -floor(-x), round half to even
// from floor, Mod from truncating division, the hyperbolic functions and
// their inverses from exp, log and sqrt, tan = sin / cos.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "Common.h"

#include <cmath>

using namespace mlir;

namespace trc::import {
namespace {

template <typename OpT> LogicalResult binary(ImportContext &ctx) {
  Value a = ctx.input(0), b = ctx.input(1);
  if (!ctx.broadcastPair(a, b))
    return failure();
  return ctx.setOutput(0, ctx.build<OpT>(a, b));
}

// Max, Min, Sum and Mean take any number of inputs.
template <typename OpT> Value combineAll(ImportContext &ctx) {
  Value acc = ctx.input(0);
  for (int i = 1; acc && i < ctx.numInputs(); ++i) {
    Value next = ctx.input(i);
    if (!ctx.broadcastPair(acc, next))
      return {};
    acc = ctx.build<OpT>(acc, next);
  }
  return acc;
}

template <typename OpT> LogicalResult variadic(ImportContext &ctx) {
  return ctx.setOutput(0, combineAll<OpT>(ctx));
}

template <typename OpT> LogicalResult unary(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  return ctx.setOutput(0, ctx.build<OpT>(x));
}

LogicalResult importPow(ImportContext &ctx) {
  Value base = ctx.input(0), exponent = ctx.input(1);
  if (!base || !exponent)
    return failure();
  // Opset 12+ allows an exponent of another type. The result has the base's
  // type; an integer base with a float exponent is computed in the
  // exponent's float type (4 ^ 0.5 is 2, not 4 ^ 0) and converted back.
  Type baseElem = cast<RankedTensorType>(base.getType()).getElementType();
  Type expElem = cast<RankedTensorType>(exponent.getType()).getElementType();
  Type computeElem =
      isa<IntegerType>(baseElem) && isa<FloatType>(expElem) ? expElem : baseElem;
  base = ctx.convert(base, computeElem);
  exponent = ctx.convert(exponent, computeElem);
  if (!ctx.broadcastPair(base, exponent))
    return failure();
  return ctx.setOutput(0, ctx.convert(ctx.build<PowOp>(base, exponent), baseElem));
}

LogicalResult importReciprocal(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  return ctx.setOutput(0, ctx.build<DivOp>(ctx.splat(type, 1.0), x));
}

LogicalResult importRelu(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  // x > 0 ? x : 0 rather than max(x, 0): the select's VJP gives x no
  // gradient where x == 0, as torch.relu (max's splits a tie in halves, and
  // ReLU outputs that feed a ReLU again tie often: ResNet's residual sums).
  Value positive = compareWith(ctx, CompareDirection::GT, x, 0.0);
  return ctx.setOutput(0, positive ? select(ctx, positive, x, splatLike(ctx, x, 0.0)) : Value());
}

LogicalResult importClip(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  Value lo, hi;
  if (ctx.opset() < 11) {
    lo = ctx.splat(type, ctx.floatAttr("min", -INFINITY));
    hi = ctx.splat(type, ctx.floatAttr("max", INFINITY));
  } else {
    if (ctx.hasInput(1))
      lo = ctx.broadcastTo(ctx.input(1), type.getShape());
    if (ctx.hasInput(2))
      hi = ctx.broadcastTo(ctx.input(2), type.getShape());
  }
  if (lo)
    x = ctx.build<MaxOp>(x, lo);
  if (x && hi)
    x = ctx.build<MinOp>(x, hi);
  return ctx.setOutput(0, x);
}

template <CompareDirection direction> LogicalResult compareOp(ImportContext &ctx) {
  Value a = ctx.input(0), b = ctx.input(1);
  if (!ctx.broadcastPair(a, b))
    return failure();
  auto type = cast<RankedTensorType>(a.getType());
  auto result = RankedTensorType::get(type.getShape(), ctx.builder().getI1Type());
  return ctx.setOutput(0, ctx.build<CompareOp>(result, direction, a, b));
}

LogicalResult importWhere(ImportContext &ctx) {
  Value cond = ctx.input(0), x = ctx.input(1), y = ctx.input(2);
  if (!cond || !ctx.broadcastPair(x, y))
    return failure();
  auto shape = ctx.broadcastShape(cast<RankedTensorType>(cond.getType()).getShape(),
                                  cast<RankedTensorType>(x.getType()).getShape());
  if (!shape)
    return failure();
  cond = ctx.broadcastTo(cond, *shape);
  x = ctx.broadcastTo(x, *shape);
  y = ctx.broadcastTo(y, *shape);
  if (!cond || !x || !y)
    return failure();
  return ctx.setOutput(0, ctx.build<SelectOp>(cond, x, y));
}

LogicalResult importGelu(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  std::string approximate = ctx.stringAttr("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return ctx.fail("approximate='", approximate, "' is not 'none' or 'tanh'");
  auto type = cast<RankedTensorType>(x.getType());
  return ctx.setOutput(0, ctx.build<GeluOp>(type, x, approximate == "tanh"));
}

LogicalResult importMean(ImportContext &ctx) {
  Value sum = combineAll<AddOp>(ctx);
  if (!sum)
    return failure();
  if (!isa<FloatType>(typeOf(sum).getElementType()))
    return ctx.fail("the inputs must be float tensors, got ", typeOf(sum).getElementType());
  return ctx.setOutput(0, ctx.build<DivOp>(sum, splatLike(ctx, sum, ctx.numInputs())));
}

LogicalResult importXor(ImportContext &ctx) {
  Value a = ctx.input(0), b = ctx.input(1);
  if (!ctx.broadcastPair(a, b))
    return failure();
  return ctx.setOutput(0, compare(ctx, CompareDirection::NE, a, b));
}

/// Float-only unary functions composed from core ops.
template <Value (*compose)(ImportContext &, Value)>
LogicalResult composedUnary(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  return ctx.setOutput(0, compose(ctx, x));
}

Value scaled(ImportContext &ctx, Value x, double factor) {
  return x ? ctx.build<MulOp>(x, splatLike(ctx, x, factor)) : Value();
}
Value plus(ImportContext &ctx, Value x, double c) {
  return x ? ctx.build<AddOp>(x, splatLike(ctx, x, c)) : Value();
}

Value ceilOf(ImportContext &ctx, Value x) {
  return ctx.build<NegOp>(ctx.build<FloorOp>(ctx.build<NegOp>(x)));
}

// Round half to even: floor(x) + 1 when the fraction is above 1/2, or at
// exactly 1/2 when floor(x) is odd.
Value roundOf(ImportContext &ctx, Value x) {
  Value down = ctx.build<FloorOp>(x);
  Value fraction = down ? ctx.build<SubOp>(x, down) : Value();
  Value up = plus(ctx, down, 1.0);
  Value half = scaled(ctx, down, 0.5);
  Value odd = half ? compare(ctx, CompareDirection::NE, ctx.build<FloorOp>(half), half)
                   : Value();
  Value above = compareWith(ctx, CompareDirection::GT, fraction, 0.5);
  Value tie = compareWith(ctx, CompareDirection::EQ, fraction, 0.5);
  Value tieOdd = tie && odd ? ctx.build<AndOp>(tie, odd) : Value();
  Value goUp = above && tieOdd ? ctx.build<OrOp>(above, tieOdd) : Value();
  return select(ctx, goUp, up, down);
}

Value tanOf(ImportContext &ctx, Value x) {
  return ctx.build<DivOp>(ctx.build<SinOp>(x), ctx.build<CosOp>(x));
}
Value sinhOf(ImportContext &ctx, Value x) {
  return scaled(ctx, ctx.build<SubOp>(ctx.build<ExpOp>(x), ctx.build<ExpOp>(ctx.build<NegOp>(x))),
                0.5);
}
Value coshOf(ImportContext &ctx, Value x) {
  return scaled(ctx, ctx.build<AddOp>(ctx.build<ExpOp>(x), ctx.build<ExpOp>(ctx.build<NegOp>(x))),
                0.5);
}
// asinh(x) = sign(x) log(|x| + sqrt(x^2 + 1)) (no cancellation for x < 0).
Value asinhOf(ImportContext &ctx, Value x) {
  Value a = ctx.build<AbsOp>(x);
  Value r = ctx.build<LogOp>(
      ctx.build<AddOp>(a, ctx.build<SqrtOp>(plus(ctx, ctx.build<MulOp>(x, x), 1.0))));
  return select(ctx, compareWith(ctx, CompareDirection::LT, x, 0.0), ctx.build<NegOp>(r), r);
}
Value acoshOf(ImportContext &ctx, Value x) {
  return ctx.build<LogOp>(
      ctx.build<AddOp>(x, ctx.build<SqrtOp>(plus(ctx, ctx.build<MulOp>(x, x), -1.0))));
}
Value atanhOf(ImportContext &ctx, Value x) {
  Value one = splatLike(ctx, x, 1.0);
  return scaled(ctx,
                ctx.build<LogOp>(ctx.build<DivOp>(ctx.build<AddOp>(one, x),
                                                  ctx.build<SubOp>(one, x))),
                0.5);
}

LogicalResult importSign(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  Value positive = compareWith(ctx, CompareDirection::GT, x, 0.0);
  Value negative = compareWith(ctx, CompareDirection::LT, x, 0.0);
  return ctx.setOutput(0, select(ctx, positive, splatLike(ctx, x, 1.0),
                                 select(ctx, negative, splatLike(ctx, x, -1.0),
                                        splatLike(ctx, x, 0.0))));
}

LogicalResult importIsNaN(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  return ctx.setOutput(0, compare(ctx, CompareDirection::NE, x, x));
}

LogicalResult importIsInf(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  bool positive = ctx.intAttr("detect_positive", 1) != 0;
  bool negative = ctx.intAttr("detect_negative", 1) != 0;
  Value result;
  Value isPos = compareWith(ctx, CompareDirection::EQ, x, INFINITY);
  Value isNeg = compareWith(ctx, CompareDirection::EQ, x, -INFINITY);
  if (positive && negative)
    result = isPos && isNeg ? ctx.build<OrOp>(isPos, isNeg) : Value();
  else if (positive)
    result = isPos;
  else if (negative)
    result = isNeg;
  else
    result = ctx.splat(RankedTensorType::get(typeOf(x).getShape(), ctx.builder().getI1Type()),
                       0);
  return ctx.setOutput(0, result);
}

// Mod: fmod = 1 is C's fmod (the sign of the dividend): x - trunc(x / y) y;
// fmod = 0 (integers only) takes the divisor's sign: the truncated
// remainder plus y where the signs differ.
LogicalResult importMod(ImportContext &ctx) {
  Value x = ctx.input(0), y = ctx.input(1);
  if (!ctx.broadcastPair(x, y))
    return failure();
  Type elem = typeOf(x).getElementType();
  bool fmod = ctx.intAttr("fmod", 0) != 0;
  if (isa<FloatType>(elem)) {
    if (!fmod)
      return ctx.fail("fmod must be 1 for float inputs");
    // 16-bit floats are computed in f32 (one rounding at the end).
    bool narrow = elem.getIntOrFloatBitWidth() < 32;
    if (narrow) {
      x = ctx.convert(x, ctx.builder().getF32Type());
      y = ctx.convert(y, ctx.builder().getF32Type());
    }
    Value q = ctx.build<DivOp>(x, y);
    Value trunc = select(ctx, compareWith(ctx, CompareDirection::LT, q, 0.0), ceilOf(ctx, q),
                         ctx.build<FloorOp>(q));
    Value r = trunc ? ctx.build<SubOp>(x, ctx.build<MulOp>(trunc, y)) : Value();
    return ctx.setOutput(0, narrow ? ctx.convert(r, elem) : r);
  }
  if (elem.isInteger(1))
    return ctx.fail("Mod of booleans is not defined");
  Value r = ctx.build<SubOp>(x, ctx.build<MulOp>(ctx.build<DivOp>(x, y), y));
  if (fmod || !r)
    return ctx.setOutput(0, r);
  Value nonzero = compareWith(ctx, CompareDirection::NE, r, 0.0);
  Value differ = compare(ctx, CompareDirection::NE, compareWith(ctx, CompareDirection::LT, r, 0.0),
                         compareWith(ctx, CompareDirection::LT, y, 0.0));
  Value fix = nonzero && differ ? ctx.build<AndOp>(nonzero, differ) : Value();
  return ctx.setOutput(0, select(ctx, fix, ctx.build<AddOp>(r, y), r));
}

} // namespace

void registerElementwiseHandlers(HandlerRegistry &r) {
  r.add("Add", 7, binary<AddOp>);
  r.add("Sub", 7, binary<SubOp>);
  r.add("Mul", 7, binary<MulOp>);
  r.add("Div", 7, binary<DivOp>);
  r.add("Pow", 7, importPow);
  r.add("Max", 6, variadic<MaxOp>);
  r.add("Min", 6, variadic<MinOp>);
  r.add("Sum", 6, variadic<AddOp>);
  r.add("And", 7, binary<AndOp>);
  r.add("Or", 7, binary<OrOp>);
  r.add("Neg", 6, unary<NegOp>);
  r.add("Abs", 6, unary<AbsOp>);
  r.add("Exp", 6, unary<ExpOp>);
  r.add("Log", 6, unary<LogOp>);
  r.add("Sqrt", 6, unary<SqrtOp>);
  r.add("Tanh", 6, unary<TanhOp>);
  r.add("Erf", 9, unary<ErfOp>);
  r.add("Sin", 7, unary<SinOp>);
  r.add("Cos", 7, unary<CosOp>);
  r.add("Sigmoid", 6, unary<LogisticOp>);
  r.add("Floor", 6, unary<FloorOp>);
  r.add("Not", 1, unary<NotOp>);
  r.add("Reciprocal", 6, importReciprocal);
  r.add("Relu", 6, importRelu);
  r.add("Clip", 6, importClip);
  r.add("Equal", 7, compareOp<CompareDirection::EQ>);
  r.add("Less", 7, compareOp<CompareDirection::LT>);
  r.add("LessOrEqual", 12, compareOp<CompareDirection::LE>);
  r.add("Greater", 7, compareOp<CompareDirection::GT>);
  r.add("GreaterOrEqual", 12, compareOp<CompareDirection::GE>);
  r.add("Where", 9, importWhere);
  r.add("Gelu", 20, importGelu);
  r.add("Mean", 6, importMean);
  r.add("Xor", 7, importXor);
  r.add("Ceil", 6, composedUnary<ceilOf>);
  r.add("Round", 11, composedUnary<roundOf>);
  r.add("Tan", 7, composedUnary<tanOf>);
  r.add("Sinh", 9, composedUnary<sinhOf>);
  r.add("Cosh", 9, composedUnary<coshOf>);
  r.add("Asinh", 9, composedUnary<asinhOf>);
  r.add("Acosh", 9, composedUnary<acoshOf>);
  r.add("Atanh", 9, composedUnary<atanhOf>);
  r.add("Sign", 9, importSign);
  r.add("IsNaN", 9, importIsNaN);
  r.add("IsInf", 10, importIsInf);
  r.add("Mod", 10, importMod);
}

} // namespace trc::import
