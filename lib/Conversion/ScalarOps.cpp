//===- ScalarOps.cpp - scalar arith/math bodies of trc elementwise ops ----===//
//
// include/trc/Conversion/ScalarOps.h: each elementwise trc op as arith/math
// ops on scalars, for the bodies of the linalg ops trc-lower-to-linalg
// builds; conversions with ONNX Cast semantics; reduction identities and
// combiners. Preconditions: float or signless integer element types.
//
//===----------------------------------------------------------------------===//
#include "trc/Conversion/ScalarOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace trc::scalar {

namespace {
bool isFloat(Type t) { return isa<FloatType>(t); }

Value constantLike(OpBuilder &b, Location loc, Type t, double v) {
  if (auto f = dyn_cast<FloatType>(t))
    return b.create<arith::ConstantOp>(loc, b.getFloatAttr(f, v));
  return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(t, static_cast<int64_t>(v)));
}

template <typename FloatOp, typename IntOp>
Value binary(OpBuilder &b, Location loc, ValueRange a) {
  if (isFloat(a[0].getType()))
    return b.create<FloatOp>(loc, a[0], a[1]);
  return b.create<IntOp>(loc, a[0], a[1]);
}

Value compare(OpBuilder &b, Location loc, CompareDirection d, Value x, Value y) {
  if (isFloat(x.getType())) {
    // Ordered comparisons (false with NaN), except NE which is unordered.
    arith::CmpFPredicate p;
    switch (d) {
    case CompareDirection::EQ: p = arith::CmpFPredicate::OEQ; break;
    case CompareDirection::NE: p = arith::CmpFPredicate::UNE; break;
    case CompareDirection::LT: p = arith::CmpFPredicate::OLT; break;
    case CompareDirection::LE: p = arith::CmpFPredicate::OLE; break;
    case CompareDirection::GT: p = arith::CmpFPredicate::OGT; break;
    case CompareDirection::GE: p = arith::CmpFPredicate::OGE; break;
    }
    return b.create<arith::CmpFOp>(loc, p, x, y);
  }
  bool u = x.getType().isInteger(1);
  arith::CmpIPredicate p;
  switch (d) {
  case CompareDirection::EQ: p = arith::CmpIPredicate::eq; break;
  case CompareDirection::NE: p = arith::CmpIPredicate::ne; break;
  case CompareDirection::LT: p = u ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt; break;
  case CompareDirection::LE: p = u ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle; break;
  case CompareDirection::GT: p = u ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt; break;
  case CompareDirection::GE: p = u ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge; break;
  }
  return b.create<arith::CmpIOp>(loc, p, x, y);
}
} // namespace

Value convert(OpBuilder &b, Location loc, Value v, Type to) {
  Type from = v.getType();
  if (from == to)
    return v;
  if (to.isInteger(1)) // non-zero is true
    return compare(b, loc, CompareDirection::NE, v, constantLike(b, loc, from, 0));
  unsigned fromBits = from.getIntOrFloatBitWidth(), toBits = to.getIntOrFloatBitWidth();
  if (isFloat(from) && isFloat(to))
    return fromBits < toBits ? b.create<arith::ExtFOp>(loc, to, v).getResult()
                             : b.create<arith::TruncFOp>(loc, to, v).getResult();
  if (isFloat(to))
    return from.isInteger(1) ? b.create<arith::UIToFPOp>(loc, to, v).getResult()
                             : b.create<arith::SIToFPOp>(loc, to, v).getResult();
  if (isFloat(from))
    return b.create<arith::FPToSIOp>(loc, to, v);
  if (fromBits < toBits)
    return from.isInteger(1) ? b.create<arith::ExtUIOp>(loc, to, v).getResult()
                             : b.create<arith::ExtSIOp>(loc, to, v).getResult();
  return b.create<arith::TruncIOp>(loc, to, v);
}

Value emit(OpBuilder &b, Location loc, Operation *op, ValueRange a) {
  Type t = a.empty() ? Type() : a[0].getType();
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case([&](AddOp) { return binary<arith::AddFOp, arith::AddIOp>(b, loc, a); })
      .Case([&](SubOp) { return binary<arith::SubFOp, arith::SubIOp>(b, loc, a); })
      .Case([&](MulOp) { return binary<arith::MulFOp, arith::MulIOp>(b, loc, a); })
      .Case([&](DivOp) { return binary<arith::DivFOp, arith::DivSIOp>(b, loc, a); })
      .Case([&](MaxOp) { return binary<arith::MaximumFOp, arith::MaxSIOp>(b, loc, a); })
      .Case([&](MinOp) { return binary<arith::MinimumFOp, arith::MinSIOp>(b, loc, a); })
      .Case([&](AndOp) { return b.create<arith::AndIOp>(loc, a[0], a[1]); })
      .Case([&](OrOp) { return b.create<arith::OrIOp>(loc, a[0], a[1]); })
      .Case([&](PowOp) -> Value {
        if (isFloat(t))
          return b.create<math::PowFOp>(loc, a[0], a[1]);
        return b.create<math::IPowIOp>(loc, a[0], a[1]);
      })
      .Case([&](NegOp) -> Value {
        if (isFloat(t))
          return b.create<arith::NegFOp>(loc, a[0]);
        return b.create<arith::SubIOp>(loc, constantLike(b, loc, t, 0), a[0]);
      })
      .Case([&](AbsOp) -> Value {
        if (isFloat(t))
          return b.create<math::AbsFOp>(loc, a[0]);
        return b.create<math::AbsIOp>(loc, a[0]);
      })
      .Case([&](ExpOp) { return b.create<math::ExpOp>(loc, a[0]); })
      .Case([&](LogOp) { return b.create<math::LogOp>(loc, a[0]); })
      .Case([&](SqrtOp) { return b.create<math::SqrtOp>(loc, a[0]); })
      .Case([&](RsqrtOp) { return b.create<math::RsqrtOp>(loc, a[0]); })
      .Case([&](TanhOp) { return b.create<math::TanhOp>(loc, a[0]); })
      .Case([&](ErfOp) { return b.create<math::ErfOp>(loc, a[0]); })
      .Case([&](SinOp) { return b.create<math::SinOp>(loc, a[0]); })
      .Case([&](CosOp) { return b.create<math::CosOp>(loc, a[0]); })
      .Case([&](FloorOp) { return b.create<math::FloorOp>(loc, a[0]); })
      .Case([&](LogisticOp) -> Value {
        Value one = constantLike(b, loc, t, 1.0);
        Value e = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, a[0]));
        return b.create<arith::DivFOp>(loc, one, b.create<arith::AddFOp>(loc, one, e));
      })
      .Case([&](NotOp) -> Value {
        return b.create<arith::XOrIOp>(loc, a[0], constantLike(b, loc, t, 1));
      })
      .Case([&](CompareOp c) { return compare(b, loc, c.getDirection(), a[0], a[1]); })
      .Case([&](SelectOp) { return b.create<arith::SelectOp>(loc, a[0], a[1], a[2]); })
      .Case([&](ConvertOp c) {
        return convert(b, loc, a[0], c.getType().getElementType());
      })
      .Default([](Operation *) { return Value(); });
}

TypedAttr reductionIdentity(OpBuilder &b, ReduceKind kind, Type t) {
  if (auto f = dyn_cast<FloatType>(t)) {
    const auto &sem = f.getFloatSemantics();
    switch (kind) {
    case ReduceKind::Sum: return b.getFloatAttr(f, 0.0);
    case ReduceKind::Prod: return b.getFloatAttr(f, 1.0);
    case ReduceKind::Max: return b.getFloatAttr(f, APFloat::getInf(sem, /*Negative=*/true));
    case ReduceKind::Min: return b.getFloatAttr(f, APFloat::getInf(sem, false));
    }
  }
  unsigned bits = t.getIntOrFloatBitWidth();
  switch (kind) {
  case ReduceKind::Sum: return b.getIntegerAttr(t, 0);
  case ReduceKind::Prod: return b.getIntegerAttr(t, 1);
  case ReduceKind::Max: return b.getIntegerAttr(t, APInt::getSignedMinValue(bits));
  case ReduceKind::Min: return b.getIntegerAttr(t, APInt::getSignedMaxValue(bits));
  }
  return {};
}

Value combine(OpBuilder &b, Location loc, ReduceKind kind, Value acc, Value v) {
  bool f = isFloat(v.getType());
  switch (kind) {
  case ReduceKind::Sum:
    return f ? b.create<arith::AddFOp>(loc, acc, v).getResult()
             : b.create<arith::AddIOp>(loc, acc, v).getResult();
  case ReduceKind::Prod:
    return f ? b.create<arith::MulFOp>(loc, acc, v).getResult()
             : b.create<arith::MulIOp>(loc, acc, v).getResult();
  case ReduceKind::Max:
    return f ? b.create<arith::MaximumFOp>(loc, acc, v).getResult()
             : b.create<arith::MaxSIOp>(loc, acc, v).getResult();
  case ReduceKind::Min:
    return f ? b.create<arith::MinimumFOp>(loc, acc, v).getResult()
             : b.create<arith::MinSIOp>(loc, acc, v).getResult();
  }
  return {};
}

} // namespace trc::scalar
