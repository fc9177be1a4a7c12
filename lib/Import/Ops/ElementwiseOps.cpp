//===- ElementwiseOps.cpp - ONNX elementwise ops -> trc ---------------------===//
//
// Add, Sub, Mul, Div, Pow, Max, Min, Sum, And, Or, Neg, Abs, Exp, Log, Sqrt,
// Reciprocal, Tanh, Erf, Sin, Cos, Sigmoid, Relu, Floor, Not, Equal, Less,
// LessOrEqual, Greater, GreaterOrEqual, Where, Clip, Gelu.
// ONNX broadcasting (numpy rules, opset >= 7) becomes explicit
// trc.broadcast_in_dim; the core binary ops take equal shapes.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"

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

// Max, Min and Sum take any number of inputs.
template <typename OpT> LogicalResult variadic(ImportContext &ctx) {
  Value acc = ctx.input(0);
  for (int i = 1; acc && i < ctx.numInputs(); ++i) {
    Value next = ctx.input(i);
    if (!ctx.broadcastPair(acc, next))
      return failure();
    acc = ctx.build<OpT>(acc, next);
  }
  return ctx.setOutput(0, acc);
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
  auto type = cast<RankedTensorType>(x.getType());
  return ctx.setOutput(0, ctx.build<MaxOp>(x, ctx.splat(type, 0.0)));
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

template <CompareDirection direction> LogicalResult compare(ImportContext &ctx) {
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
  r.add("Equal", 7, compare<CompareDirection::EQ>);
  r.add("Less", 7, compare<CompareDirection::LT>);
  r.add("LessOrEqual", 12, compare<CompareDirection::LE>);
  r.add("Greater", 7, compare<CompareDirection::GT>);
  r.add("GreaterOrEqual", 12, compare<CompareDirection::GE>);
  r.add("Where", 9, importWhere);
  r.add("Gelu", 20, importGelu);
}

} // namespace trc::import
