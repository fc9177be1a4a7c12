//===- ConstantEval.cpp - evaluates trc ops on constant operands -----------===//
#include "ConstantEval.h"

#include "llvm/ADT/APSInt.h"

using namespace mlir;

namespace trc::eval {

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

namespace {
// The two element kinds of trc constants: T is APFloat or APInt.
template <typename T>
Attribute remapAs(DenseElementsAttr source, RankedTensorType type,
                  llvm::function_ref<int64_t(int64_t)> sourceIndex) {
  auto values = source.getValues<T>();
  SmallVector<T> out;
  out.reserve(type.getNumElements());
  for (int64_t i = 0, n = type.getNumElements(); i < n; ++i)
    out.push_back(values[sourceIndex(i)]);
  return DenseElementsAttr::get(type, out);
}

template <typename T>
Attribute selectAs(DenseElementsAttr pred, DenseElementsAttr onTrue,
                   DenseElementsAttr onFalse, RankedTensorType type) {
  auto flags = pred.getValues<bool>();
  auto yes = onTrue.getValues<T>(), no = onFalse.getValues<T>();
  SmallVector<T> out;
  out.reserve(type.getNumElements());
  for (int64_t i = 0, n = type.getNumElements(); i < n; ++i)
    out.push_back(flags[pred.isSplat() ? 0 : i] ? yes[onTrue.isSplat() ? 0 : i]
                                                : no[onFalse.isSplat() ? 0 : i]);
  return DenseElementsAttr::get(type, out);
}
} // namespace

Attribute remap(DenseElementsAttr source, RankedTensorType type,
                llvm::function_ref<int64_t(int64_t)> sourceIndex) {
  if (source.isSplat())
    return source.resizeSplat(type);
  int64_t n = type.getNumElements();
  if (n > kMaxFoldElements)
    return {};
  return isa<FloatType>(type.getElementType())
             ? remapAs<APFloat>(source, type, sourceIndex)
             : remapAs<APInt>(source, type, sourceIndex);
}

Attribute convert(DenseElementsAttr source, RankedTensorType type) {
  if (type.getNumElements() > kMaxFoldElements && !source.isSplat())
    return {};
  Type from = source.getElementType(), to = type.getElementType();
  auto convertOne = [&](int64_t i) -> Attribute {
    if (auto toFloat = dyn_cast<FloatType>(to)) {
      APFloat result(toFloat.getFloatSemantics());
      bool lost;
      if (isa<FloatType>(from)) {
        result = source.getValues<APFloat>()[i];
        result.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      } else {
        // Booleans are 0 or 1, not the signed 1-bit values 0 and -1.
        bool isSigned = !from.isUnsignedInteger() && !from.isInteger(1);
        result.convertFromAPInt(source.getValues<APInt>()[i], isSigned,
                                APFloat::rmNearestTiesToEven);
      }
      return FloatAttr::get(to, result);
    }
    unsigned width = to.getIntOrFloatBitWidth();
    if (width == 1) { // to bool: non-zero is true
      bool nonZero = isa<FloatType>(from) ? !source.getValues<APFloat>()[i].isZero()
                                          : !source.getValues<APInt>()[i].isZero();
      return IntegerAttr::get(to, APInt(1, nonZero));
    }
    if (isa<FloatType>(from)) {
      APSInt result(width, to.isUnsignedInteger());
      bool exact;
      source.getValues<APFloat>()[i].convertToInteger(result, APFloat::rmTowardZero,
                                                      &exact);
      return IntegerAttr::get(to, result);
    }
    APInt v = source.getValues<APInt>()[i];
    bool signExtend = !from.isUnsignedInteger() && from.getIntOrFloatBitWidth() > 1;
    return IntegerAttr::get(to, signExtend ? v.sextOrTrunc(width) : v.zextOrTrunc(width));
  };
  if (source.isSplat())
    return SplatElementsAttr::get(type, convertOne(0));
  SmallVector<Attribute> out;
  for (int64_t i = 0, n = type.getNumElements(); i < n; ++i)
    out.push_back(convertOne(i));
  return DenseElementsAttr::get(type, out);
}

namespace {
template <typename T> bool holds(CompareDirection d, const T &cmpResult) {
  switch (d) {
  case CompareDirection::EQ: return cmpResult == 0;
  case CompareDirection::NE: return cmpResult != 0;
  case CompareDirection::LT: return cmpResult < 0;
  case CompareDirection::LE: return cmpResult <= 0;
  case CompareDirection::GT: return cmpResult > 0;
  case CompareDirection::GE: return cmpResult >= 0;
  }
  return false;
}
} // namespace

Attribute compare(CompareDirection direction, DenseElementsAttr lhs,
                  DenseElementsAttr rhs, RankedTensorType type) {
  int64_t n = type.getNumElements();
  if (n > kMaxFoldElements)
    return {};
  Type elem = lhs.getElementType();
  SmallVector<bool> out;
  for (int64_t i = 0; i < n; ++i) {
    int64_t li = lhs.isSplat() ? 0 : i, ri = rhs.isSplat() ? 0 : i;
    int c;
    if (isa<FloatType>(elem)) {
      APFloat a = lhs.getValues<APFloat>()[li], b = rhs.getValues<APFloat>()[ri];
      auto r = a.compare(b);
      if (r == APFloat::cmpUnordered) { // NaN: only NE holds
        out.push_back(direction == CompareDirection::NE);
        continue;
      }
      c = r == APFloat::cmpLessThan ? -1 : r == APFloat::cmpEqual ? 0 : 1;
    } else {
      APInt a = lhs.getValues<APInt>()[li], b = rhs.getValues<APInt>()[ri];
      bool isUnsigned = elem.isUnsignedInteger() || elem.isInteger(1);
      c = a == b ? 0 : (isUnsigned ? a.ult(b) : a.slt(b)) ? -1 : 1;
    }
    out.push_back(holds(direction, c));
  }
  return DenseElementsAttr::get(type, ArrayRef<bool>(out));
}

Attribute select(DenseElementsAttr pred, DenseElementsAttr onTrue,
                 DenseElementsAttr onFalse) {
  auto type = cast<RankedTensorType>(onTrue.getType());
  if (type.getNumElements() > kMaxFoldElements)
    return {};
  return isa<FloatType>(type.getElementType())
             ? selectAs<APFloat>(pred, onTrue, onFalse, type)
             : selectAs<APInt>(pred, onTrue, onFalse, type);
}

Attribute concatenate(ArrayRef<DenseElementsAttr> inputs, int64_t dimension,
                      RankedTensorType type) {
  int64_t n = type.getNumElements();
  if (n > kMaxFoldElements)
    return {};
  // Walk the result in row-major order; each "row" of the result along the
  // outer dims is the inputs' rows laid side by side.
  int64_t inner = 1;
  for (int64_t d = dimension + 1; d < type.getRank(); ++d)
    inner *= type.getDimSize(d);
  bool isFloat = isa<FloatType>(type.getElementType());
  SmallVector<APFloat> floats;
  SmallVector<APInt> ints;
  int64_t outer = 1;
  for (int64_t d = 0; d < dimension; ++d)
    outer *= type.getDimSize(d);
  for (int64_t o = 0; o < outer; ++o)
    for (DenseElementsAttr in : inputs) {
      auto inType = cast<RankedTensorType>(in.getType());
      int64_t chunk = inType.getDimSize(dimension) * inner;
      for (int64_t j = 0; j < chunk; ++j) {
        int64_t index = in.isSplat() ? 0 : o * chunk + j;
        if (isFloat)
          floats.push_back(in.getValues<APFloat>()[index]);
        else
          ints.push_back(in.getValues<APInt>()[index]);
      }
    }
  return isFloat ? DenseElementsAttr::get(type, floats) : DenseElementsAttr::get(type, ints);
}

} // namespace trc::eval
