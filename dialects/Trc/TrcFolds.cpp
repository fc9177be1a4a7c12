//===- TrcFolds.cpp - folders of trc ops -----------------------------------===//
//
// Folds that pay on real exports: constant arithmetic, identities (x + 0,
// x * 1, reshape/transpose/broadcast to the same type), and composition of
// chained reshapes and transposes that importers of dynamic-axes graphs emit.
//
//===----------------------------------------------------------------------===//
#include "ConstantEval.h"
#include "trc/Dialect/Trc.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

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

// CommonFolders reads splats as whatever value type it is asked for, so the
// float or integer path must be chosen from the element type first.
template <typename FloatFn, typename IntFn>
Attribute foldBinary(Type type, ArrayRef<Attribute> operands, FloatFn floatFn,
                     IntFn intFn) {
  if (!operands[0] || !operands[1])
    return {};
  if (isa<FloatType>(getElementTypeOrSelf(type)))
    return constFoldBinaryOp<FloatAttr, APFloat, void>(operands, floatFn);
  return constFoldBinaryOp<IntegerAttr, APInt, void>(operands, intFn);
}
} // namespace

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  if (auto inner = getOperand().getDefiningOp<NegOp>())
    return inner.getOperand();
  if (isa<FloatType>(getElementTypeOrSelf(getType())))
    return constFoldUnaryOp<FloatAttr, APFloat, void>(adaptor.getOperands(),
                                                      [](const APFloat &a) { return -a; });
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
  return foldBinary(getType(), adaptor.getOperands(),
                    [](const APFloat &a, const APFloat &b) { return a + b; },
                    [](const APInt &a, const APInt &b) { return a + b; });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 0))
    return getLhs();
  return foldBinary(getType(), adaptor.getOperands(),
                    [](const APFloat &a, const APFloat &b) { return a - b; },
                    [](const APInt &a, const APInt &b) { return a - b; });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1))
    return getLhs();
  if (isSplatOf(adaptor.getLhs(), 1))
    return getRhs();
  return foldBinary(getType(), adaptor.getOperands(),
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
  // Integers truncate toward zero (ONNX, C); unsigned ones divide unsigned.
  bool isUnsigned = getElementTypeOrSelf(getType()).isUnsignedInteger();
  return foldBinary(getType(), adaptor.getOperands(),
                    [](const APFloat &a, const APFloat &b) { return a / b; },
                    [&](const APInt &a, const APInt &b) {
                      return isUnsigned ? a.udiv(b) : a.sdiv(b);
                    });
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  if (getOnTrue() == getOnFalse())
    return getOnTrue();
  if (auto pred = dyn_cast_or_null<SplatElementsAttr>(adaptor.getPred()))
    return pred.getSplatValue<bool>() ? getOnTrue() : getOnFalse();
  auto pred = dyn_cast_or_null<DenseElementsAttr>(adaptor.getPred());
  auto onTrue = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOnTrue());
  auto onFalse = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOnFalse());
  if (pred && onTrue && onFalse)
    return eval::select(pred, onTrue, onFalse);
  return {};
}

OpFoldResult CompareOp::fold(FoldAdaptor adaptor) {
  auto lhs = dyn_cast_or_null<DenseElementsAttr>(adaptor.getLhs());
  auto rhs = dyn_cast_or_null<DenseElementsAttr>(adaptor.getRhs());
  if (lhs && rhs)
    return eval::compare(getDirection(), lhs, rhs, getType());
  return {};
}

OpFoldResult ConvertOp::fold(FoldAdaptor adaptor) {
  if (getOperand().getType() == getType())
    return getOperand();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand()))
    return eval::convert(dense, getType());
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
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand());
  if (!dense)
    return {};
  // Result index -> operand index: drop non-mapped dims, clamp size-1 dims.
  auto inType = getOperand().getType();
  auto inStrides = eval::stridesOf(inType.getShape());
  auto outStrides = eval::stridesOf(getType().getShape());
  auto dims = getBroadcastDimensions();
  return eval::remap(dense, getType(), [&](int64_t i) {
    int64_t src = 0;
    for (auto [k, d] : llvm::enumerate(dims))
      if (inType.getDimSize(k) != 1)
        src += (i / outStrides[d]) % getType().getDimSize(d) * inStrides[k];
    return src;
  });
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  auto perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getOperand();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand())) {
    auto inStrides = eval::stridesOf(getOperand().getType().getShape());
    auto outStrides = eval::stridesOf(getType().getShape());
    return eval::remap(dense, getType(), [&](int64_t i) {
      int64_t src = 0;
      for (auto [k, p] : llvm::enumerate(perm))
        src += (i / outStrides[k]) % getType().getDimSize(k) * inStrides[p];
      return src;
    });
  }
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
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand());
  if (!dense)
    return {};
  auto inStrides = eval::stridesOf(getOperand().getType().getShape());
  auto outStrides = eval::stridesOf(getType().getShape());
  auto start = getStartIndices(), strides = getStrides();
  return eval::remap(dense, getType(), [&](int64_t i) {
    int64_t src = 0;
    for (int64_t k = 0; k < getType().getRank(); ++k)
      src += (start[k] + (i / outStrides[k]) % getType().getDimSize(k) * strides[k]) *
             inStrides[k];
    return src;
  });
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getOperand());
  auto indices = dyn_cast_or_null<DenseElementsAttr>(adaptor.getIndices());
  if (!dense || !indices)
    return {};
  auto inType = getOperand().getType();
  int64_t axis = getAxis(), axisSize = inType.getDimSize(axis);
  SmallVector<int64_t> index;
  for (const APInt &v : indices.getValues<APInt>()) {
    int64_t k = v.getSExtValue();
    if (k < -axisSize || k >= axisSize)
      return {}; // out of range: left for run time to report
    index.push_back(k < 0 ? k + axisSize : k);
  }
  // result[outer, idx, inner] = operand[outer, index[idx], inner]
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < inType.getRank(); ++d)
    inner *= inType.getDimSize(d);
  int64_t count = static_cast<int64_t>(index.size());
  return eval::remap(dense, getType(), [&](int64_t i) {
    int64_t in = i % inner, rest = i / inner;
    int64_t idx = rest % count, outer = rest / count;
    return (outer * axisSize + index[idx]) * inner + in;
  });
}

OpFoldResult ConcatenateOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs()[0].getType() == getType())
    return getInputs()[0];
  SmallVector<DenseElementsAttr> inputs;
  for (Attribute a : adaptor.getInputs()) {
    auto dense = dyn_cast_or_null<DenseElementsAttr>(a);
    if (!dense)
      return {};
    inputs.push_back(dense);
  }
  return eval::concatenate(inputs, getDimension(), getType());
}
