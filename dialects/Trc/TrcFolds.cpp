//===- TrcFolds.cpp - folders of trc ops -----------------------------------===//
//
// Folds that pay on real exports: constant arithmetic, identities (x + 0,
// x * 1, reshape/transpose/broadcast to the same type), and composition of
// chained reshapes and transposes that importers of dynamic-axes graphs emit.
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace trc;

namespace {
// True when `attr` is a splat constant equal to `value` (integers or floats).
bool isSplatOf(Attribute attr, double value) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(attr);
  if (!splat)
    return false;
  Type elem = splat.getElementType();
  if (isa<FloatType>(elem))
    return splat.getSplatValue<APFloat>().convertToDouble() == value;
  if (isa<IntegerType>(elem))
    return static_cast<double>(splat.getSplatValue<APInt>().getSExtValue()) == value;
  return false;
}

template <typename FloatFn, typename IntFn>
Attribute foldBinary(ArrayRef<Attribute> operands, FloatFn floatFn, IntFn intFn) {
  if (!operands[0] || !operands[1])
    return {};
  if (auto r = constFoldBinaryOp<FloatAttr, APFloat, void>(operands, floatFn))
    return r;
  return constFoldBinaryOp<IntegerAttr, APInt, void>(operands, intFn);
}
} // namespace

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  if (auto inner = getOperand().getDefiningOp<NegOp>())
    return inner.getOperand();
  if (auto r = constFoldUnaryOp<FloatAttr, APFloat, void>(adaptor.getOperands(),
                                           [](const APFloat &a) { return -a; }))
    return r;
  return constFoldUnaryOp<IntegerAttr, APInt, void>(adaptor.getOperands(),
                                       [](const APInt &a) { return -a; });
}

OpFoldResult NotOp::fold(FoldAdaptor) {
  if (auto inner = getOperand().getDefiningOp<NotOp>())
    return inner.getOperand();
  return {};
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 0))
    return getLhs();
  if (isSplatOf(adaptor.getLhs(), 0))
    return getRhs();
  return foldBinary(adaptor.getOperands(),
                    [](const APFloat &a, const APFloat &b) { return a + b; },
                    [](const APInt &a, const APInt &b) { return a + b; });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 0))
    return getLhs();
  return foldBinary(adaptor.getOperands(),
                    [](const APFloat &a, const APFloat &b) { return a - b; },
                    [](const APInt &a, const APInt &b) { return a - b; });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1))
    return getLhs();
  if (isSplatOf(adaptor.getLhs(), 1))
    return getRhs();
  return foldBinary(adaptor.getOperands(),
                    [](const APFloat &a, const APFloat &b) { return a * b; },
                    [](const APInt &a, const APInt &b) { return a * b; });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1))
    return getLhs();
  // Integer division by zero is left for run time to report.
  if (auto rhs = dyn_cast_or_null<DenseElementsAttr>(adaptor.getRhs()))
    if (isa<IntegerType>(rhs.getElementType()) &&
        llvm::any_of(rhs.getValues<APInt>(), [](const APInt &v) { return v.isZero(); }))
      return {};
  return foldBinary(adaptor.getOperands(),
                    [](const APFloat &a, const APFloat &b) { return a / b; },
                    [](const APInt &a, const APInt &b) { return a.sdiv(b); });
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  if (getOnTrue() == getOnFalse())
    return getOnTrue();
  if (auto pred = dyn_cast_or_null<SplatElementsAttr>(adaptor.getPred()))
    return pred.getSplatValue<bool>() ? getOnTrue() : getOnFalse();
  return {};
}

OpFoldResult ConvertOp::fold(FoldAdaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  return {};
}

OpFoldResult ReduceOp::fold(FoldAdaptor) {
  if (getDimensions().empty() && getOperand().getType() == getType())
    return getOperand();
  return {};
}

OpFoldResult BroadcastInDimOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(adaptor.getOperand()))
    return splat.resizeSplat(getType());
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  auto perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getOperand();
  // transpose(transpose(x, p), q) == transpose(x, p o q)
  if (auto inner = getOperand().getDefiningOp<TransposeOp>()) {
    auto innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    setOperand(inner.getOperand());
    setPermutation(composed);
    return getResult();
  }
  return {};
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  if (auto inner = getOperand().getDefiningOp<ReshapeOp>()) {
    setOperand(inner.getOperand());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand()))
    return dense.reshape(getType());
  return {};
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  if (auto splat = dyn_cast_or_null<SplatElementsAttr>(adaptor.getOperand()))
    return splat.resizeSplat(getType());
  return {};
}

OpFoldResult ConcatenateOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  return {};
}
