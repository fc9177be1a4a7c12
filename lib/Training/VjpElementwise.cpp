//===- VjpElementwise.cpp - VJP rules of elementwise trc ops ---------------===//
//
// g is the gradient of the result r; x and y the operands. Each rule is the
// derivative written with the forward values (r is reused where it saves
// ops: exp, tanh, logistic, sqrt, div). Ties of max/min share the gradient
// equally between the operands (as PyTorch's maximum/minimum and JAX do).
// floor has a zero gradient; compare/not/and/or give i1 results and are
// never on a differentiable path.
//
//===----------------------------------------------------------------------===//
#include "VjpRules.h"

#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;

namespace trc::autodiff {

LogicalResult vjp(AddOp, VjpContext &c) {
  c.setGrad(0, c.grad);
  c.setGrad(1, c.grad);
  return success();
}

LogicalResult vjp(SubOp, VjpContext &c) {
  c.setGrad(0, c.grad);
  if (c.wants(1))
    c.setGrad(1, c.neg(c.grad));
  return success();
}

LogicalResult vjp(MulOp op, VjpContext &c) {
  if (c.wants(0))
    c.setGrad(0, c.mul(c.grad, op.getRhs()));
  if (c.wants(1))
    c.setGrad(1, c.mul(c.grad, op.getLhs()));
  return success();
}

// d(x/y) = g/y dx - g x/y^2 dy, and x/y^2 = (x/y)/y: gy = -(gx * r).
LogicalResult vjp(DivOp op, VjpContext &c) {
  Value gx = c.div(c.grad, op.getRhs());
  c.setGrad(0, gx);
  if (c.wants(1))
    c.setGrad(1, c.neg(c.mul(gx, op.getResult())));
  return success();
}

// d(x^y) = y x^(y-1) dx + r ln(x) dy. A constant exponent c gives
// c x^(c-1) with x^0 and x^1 written out; ln(x) at x == 0 counts as 0 (the
// limit of r ln x for y > 0, PyTorch's convention).
LogicalResult vjp(PowOp op, VjpContext &c) {
  Value x = op.getLhs(), y = op.getRhs();
  if (c.wants(0)) {
    SplatElementsAttr exponent;
    if (matchPattern(y, m_Constant(&exponent)) &&
        isa<FloatType>(exponent.getElementType())) {
      double e = exponent.getSplatValue<APFloat>().convertToDouble();
      Value gx = c.scale(c.grad, e);
      if (e - 1.0 == 1.0)
        gx = c.mul(gx, x);
      else if (e - 1.0 != 0.0)
        gx = c.mul(gx, c.b.createOrFold<PowOp>(c.loc, x, c.like(x, e - 1.0)));
      c.setGrad(0, gx);
    } else {
      Value ym1 = c.sub(y, c.like(y, 1.0));
      c.setGrad(0, c.mul(c.mul(c.grad, y), c.b.createOrFold<PowOp>(c.loc, x, ym1)));
    }
  }
  if (c.wants(1)) {
    Value gy = c.mul(c.mul(c.grad, op.getResult()), c.unary<LogOp>(x));
    Value atZero = c.compare(CompareDirection::EQ, x, c.like(x, 0.0));
    c.setGrad(1, c.select(atZero, c.like(x, 0.0), gy));
  }
  return success();
}

LogicalResult vjp(NegOp, VjpContext &c) {
  c.setGrad(0, c.neg(c.grad));
  return success();
}

// sign(x) * g, with sign(0) = 0.
LogicalResult vjp(AbsOp op, VjpContext &c) {
  Value x = op.getOperand(), zero = c.like(x, 0.0);
  Value positive = c.select(c.compare(CompareDirection::GT, x, zero), c.grad, zero);
  c.setGrad(0, c.select(c.compare(CompareDirection::LT, x, zero), c.neg(c.grad),
                        positive));
  return success();
}

LogicalResult vjp(ExpOp op, VjpContext &c) {
  c.setGrad(0, c.mul(c.grad, op.getResult()));
  return success();
}

LogicalResult vjp(LogOp op, VjpContext &c) {
  c.setGrad(0, c.div(c.grad, op.getOperand()));
  return success();
}

// 0.5 g / sqrt(x)
LogicalResult vjp(SqrtOp op, VjpContext &c) {
  c.setGrad(0, c.div(c.scale(c.grad, 0.5), op.getResult()));
  return success();
}

// -0.5 x^(-3/2) = -0.5 r / x
LogicalResult vjp(RsqrtOp op, VjpContext &c) {
  c.setGrad(0, c.scale(c.div(c.mul(c.grad, op.getResult()), op.getOperand()), -0.5));
  return success();
}

// 1 - r^2
LogicalResult vjp(TanhOp op, VjpContext &c) {
  Value r = op.getResult();
  c.setGrad(0, c.mul(c.grad, c.sub(c.like(r, 1.0), c.mul(r, r))));
  return success();
}

// 2/sqrt(pi) e^(-x^2)
LogicalResult vjp(ErfOp op, VjpContext &c) {
  Value x = op.getOperand();
  Value density = c.unary<ExpOp>(c.neg(c.mul(x, x)));
  c.setGrad(0, c.mul(c.scale(c.grad, 2.0 / std::sqrt(M_PI)), density));
  return success();
}

LogicalResult vjp(SinOp op, VjpContext &c) {
  c.setGrad(0, c.mul(c.grad, c.unary<CosOp>(op.getOperand())));
  return success();
}

LogicalResult vjp(CosOp op, VjpContext &c) {
  c.setGrad(0, c.neg(c.mul(c.grad, c.unary<SinOp>(op.getOperand()))));
  return success();
}

// r (1 - r)
LogicalResult vjp(LogisticOp op, VjpContext &c) {
  Value r = op.getResult();
  c.setGrad(0, c.mul(c.mul(c.grad, r), c.sub(c.like(r, 1.0), r)));
  return success();
}

// Piecewise constant: no gradient.
LogicalResult vjp(FloorOp, VjpContext &) { return success(); }

/// max (wins = GT) or min (wins = LT): the share of g that goes to the lhs is
/// 1 where it wins, 1/2 on ties, 0 where it loses; the rhs gets the rest.
static LogicalResult extremumVjp(Operation *op, CompareDirection wins, VjpContext &c) {
  Value x = op->getOperand(0), y = op->getOperand(1);
  Value one = c.like(x, 1.0), zero = c.like(x, 0.0);
  auto share = [&](Value a, Value b) {
    Value tie = c.select(c.compare(CompareDirection::EQ, a, b), c.like(a, 0.5), zero);
    return c.mul(c.grad, c.select(c.compare(wins, a, b), one, tie));
  };
  if (!c.wants(1)) {
    c.setGrad(0, share(x, y));
  } else if (!c.wants(0)) {
    c.setGrad(1, share(y, x));
  } else {
    Value gx = share(x, y);
    c.setGrad(0, gx);
    c.setGrad(1, c.sub(c.grad, gx));
  }
  return success();
}

LogicalResult vjp(MaxOp op, VjpContext &c) {
  return extremumVjp(op, CompareDirection::GT, c);
}

LogicalResult vjp(MinOp op, VjpContext &c) {
  return extremumVjp(op, CompareDirection::LT, c);
}

// The gradient goes to the branch that was picked; none to the predicate.
LogicalResult vjp(SelectOp op, VjpContext &c) {
  Value zero = c.like(c.grad, 0.0);
  if (c.wants(1))
    c.setGrad(1, c.select(op.getPred(), c.grad, zero));
  if (c.wants(2))
    c.setGrad(2, c.select(op.getPred(), zero, c.grad));
  return success();
}

// float -> float: convert the gradient back. (An integer operand is never
// wanted; an integer result is never on a differentiable path.)
LogicalResult vjp(ConvertOp op, VjpContext &c) {
  c.setGrad(0, c.convert(c.grad, VjpBuilder::type(op.getOperand()).getElementType()));
  return success();
}

} // namespace trc::autodiff
