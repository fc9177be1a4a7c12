//===- ConstantOps.cpp - Constant, Shape, Size, Range, ConstantOfShape, ... --===//
//
// Ops whose results are known at compile time once shapes are static
// (Shape, Size, Range over constants, ConstantOfShape) become trc.constant;
// Cast becomes trc.convert (folded on constants), Identity forwards (a
// tensor or a sequence).
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "../TensorData.h"

#include <cstring>
#include <vector>

using namespace mlir;

namespace trc::import {
namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

LogicalResult importConstant(ImportContext &ctx) {
  const auto *value = ctx.attr("value");
  auto &b = ctx.builder();
  if (!value) {
    // value_float(s) / value_int(s) forms.
    if (const auto *f = ctx.attr("value_float"))
      return ctx.setOutput(0, ctx.scalar(b.getF32Type(), f->f()));
    if (const auto *i = ctx.attr("value_int"))
      return ctx.setOutput(0, ctx.scalar(b.getI64Type(), static_cast<double>(i->i())));
    if (const auto *fs = ctx.attr("value_floats")) {
      SmallVector<float> v(fs->floats().begin(), fs->floats().end());
      auto type = RankedTensorType::get({static_cast<int64_t>(v.size())}, b.getF32Type());
      return ctx.setOutput(
          0, ctx.build<ConstantOp>(DenseElementsAttr::get(type, ArrayRef<float>(v))));
    }
    if (const auto *is = ctx.attr("value_ints")) {
      SmallVector<int64_t> v(is->ints().begin(), is->ints().end());
      return ctx.setOutput(0, ctx.int64s(v));
    }
    return ctx.fail("Constant has no supported value attribute (value, value_float(s), "
                    "value_int(s))");
  }
  std::string error;
  auto type = tensorTypeOf(value->t(), ctx.context(), error);
  if (!type)
    return isUnsupportedTensorType(value->t()) ? ctx.unsupported("value: ", error)
                                               : ctx.fail("value: ", error);
  ExternalDataReader noExternalData("");
  ElementsAttr attr = readTensor(value->t(), type, /*asResource=*/false, "",
                                 noExternalData, error);
  if (!attr)
    return ctx.fail("value: ", error);
  Value constant = ctx.build<ConstantOp>(attr);
  // Re-specializing a static export: a constant of rows (rank >= 2: a mask
  // of ones, start tokens) made at the traced size follows the new one along
  // its outermost axis of that size, when its rows there repeat.
  if (const Retrace *retrace = ctx.state().outermost().retrace;
      constant && retrace && retrace->previous && type.getRank() >= 2 &&
      retrace->step.traced != 1) {
    SmallVector<int64_t> want(type.getShape());
    auto axis = llvm::find(want, retrace->step.traced);
    if (axis != want.end()) {
      *axis = retrace->step.size;
      constant = ctx.retraceFixedData(constant, want, /*broadcast=*/false);
    }
  }
  return ctx.setOutput(0, constant);
}

LogicalResult importShape(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto shape = typeOf(x).getShape();
  int64_t rank = static_cast<int64_t>(shape.size());
  // Opset 15: optional [start, end) window, clamped like Slice.
  auto clampIndex = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::min(std::max<int64_t>(v, 0), rank);
  };
  int64_t start = clampIndex(ctx.intAttr("start", 0));
  int64_t end = clampIndex(ctx.intAttr("end", rank));
  if (end < start)
    end = start;
  return ctx.setOutput(0, ctx.int64s(shape.slice(start, end - start)));
}

LogicalResult importSize(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  return ctx.setOutput(0, ctx.scalar(ctx.builder().getI64Type(),
                                     static_cast<double>(typeOf(x).getNumElements())));
}

// Range is computed here, so its length is bounded well below kMaxElements.
constexpr int64_t kMaxRangeElements = int64_t(1) << 24;

// Integer Range in exact 128-bit arithmetic (int64 start/limit/delta).
LogicalResult importIntegerRange(ImportContext &ctx, DenseElementsAttr s,
                                 DenseElementsAttr l, DenseElementsAttr d) {
  auto scalarOf = [](DenseElementsAttr a) -> __int128 {
    const APInt &v = *a.getValues<APInt>().begin();
    return a.getElementType().isUnsignedInteger()
               ? static_cast<__int128>(v.getZExtValue())
               : static_cast<__int128>(v.getSExtValue());
  };
  __int128 first = scalarOf(s), last = scalarOf(l), step = scalarOf(d);
  if (step == 0)
    return ctx.fail("delta is 0");
  __int128 diff = last - first, count = diff / step;
  if (diff % step != 0 && ((diff < 0) == (step < 0)))
    ++count; // ceil
  if (count > kMaxRangeElements)
    return ctx.fail("Range from ", static_cast<int64_t>(first), " to ",
                    static_cast<int64_t>(last), " by ", static_cast<int64_t>(step),
                    " is too long to compute at compile time");
  int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  Type elem = s.getElementType();
  unsigned width = elem.getIntOrFloatBitWidth();
  auto type = RankedTensorType::get({n}, elem);
  auto valueAt = [&](int64_t i) { // in [first, last): fits the element type
    return static_cast<uint64_t>(static_cast<int64_t>(first + static_cast<__int128>(i) * step));
  };
  if (width % 8 == 0) {
    // Bytes straight into the attribute's storage (little-endian, as MLIR
    // stores them): a Range of 2^24 elements is one buffer, not 2^24 APInts.
    const size_t bytes = width / 8;
    std::vector<char> raw(size_t(n) * bytes);
    for (int64_t i = 0; i < n; ++i) {
      uint64_t v = valueAt(i);
      std::memcpy(raw.data() + size_t(i) * bytes, &v, bytes);
    }
    return ctx.setOutput(0, ctx.build<ConstantOp>(DenseElementsAttr::getFromRawBuffer(type, raw)));
  }
  SmallVector<APInt> values;
  for (int64_t i = 0; i < n; ++i)
    values.push_back(APInt(width, valueAt(i), /*isSigned=*/true, /*implicitTrunc=*/true));
  return ctx.setOutput(0, ctx.build<ConstantOp>(DenseElementsAttr::get(type, values)));
}

LogicalResult importRange(ImportContext &ctx) {
  DenseElementsAttr s = ctx.constantInput(0, "start");
  DenseElementsAttr l = s ? ctx.constantInput(1, "limit") : nullptr;
  DenseElementsAttr d = l ? ctx.constantInput(2, "delta") : nullptr;
  if (!d)
    return failure();
  if (s.getNumElements() != 1 || l.getNumElements() != 1 || d.getNumElements() != 1)
    return ctx.fail("start, limit and delta must be scalars");
  Type elem = s.getElementType();
  if (l.getElementType() != elem || d.getElementType() != elem)
    return ctx.fail("start, limit and delta must have the same element type");
  if (isa<IntegerType>(elem))
    return importIntegerRange(ctx, s, l, d);
  auto scalarOf = [](DenseElementsAttr a) -> double {
    return (*a.getValues<APFloat>().begin()).convertToDouble();
  };
  double first = scalarOf(s), last = scalarOf(l), step = scalarOf(d);
  if (step == 0)
    return ctx.fail("delta is 0");
  double count = std::ceil((last - first) / step);
  if (std::isnan(count) || count > static_cast<double>(kMaxRangeElements))
    return ctx.fail("Range from ", first, " to ", last, " by ", step,
                    " is too long to compute at compile time");
  int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
  auto type = RankedTensorType::get({n}, elem);
  SmallVector<APFloat> values;
  for (int64_t i = 0; i < n; ++i) {
    APFloat v(first + static_cast<double>(i) * step);
    bool lost;
    v.convert(cast<FloatType>(elem).getFloatSemantics(), APFloat::rmNearestTiesToEven,
              &lost);
    values.push_back(v);
  }
  return ctx.setOutput(0, ctx.build<ConstantOp>(DenseElementsAttr::get(type, values)));
}

LogicalResult importConstantOfShape(ImportContext &ctx) {
  auto shape = ctx.shapeInts(0, "shape", ShapeOperand::FillShape);
  if (!shape)
    return failure();
  std::string bad = checkDims(*shape);
  if (!bad.empty())
    return ctx.fail("shape ", shapeString(*shape), ": ", bad);
  Type elem = ctx.builder().getF32Type();
  Attribute fill = ctx.builder().getF32FloatAttr(0);
  if (const auto *value = ctx.attr("value")) {
    std::string error;
    auto type = tensorTypeOf(value->t(), ctx.context(), error);
    if (!type && isUnsupportedTensorType(value->t()))
      return ctx.unsupported("value: ", error);
    if (!type || type.getNumElements() != 1)
      return ctx.fail("value must be a one-element tensor", error.empty() ? "" : ": ",
                      error);
    ExternalDataReader noExternalData("");
    auto attr = readTensor(value->t(), type, false, "", noExternalData, error);
    if (!attr)
      return ctx.fail("value: ", error);
    elem = type.getElementType();
    fill = *cast<DenseElementsAttr>(attr).getValues<Attribute>().begin();
  }
  auto type = RankedTensorType::get(*shape, elem);
  return ctx.setOutput(0, ctx.build<ConstantOp>(SplatElementsAttr::get(type, fill)));
}

LogicalResult importIdentity(ImportContext &ctx) {
  return ctx.setAnyOutput(0, ctx.anyInput(0)); // a tensor or a sequence
}

LogicalResult importCast(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  int64_t to = ctx.intAttr("to", 0);
  Type elem = elementTypeOf(static_cast<int>(to), ctx.context());
  if (!elem)
    return ctx.unsupported("cast to ", onnxTypeName(static_cast<int>(to)), " is not supported");
  return ctx.setOutput(0, ctx.convert(x, elem));
}

LogicalResult importCastLike(ImportContext &ctx) {
  Value x = ctx.input(0), like = ctx.input(1);
  if (!x || !like)
    return failure();
  return ctx.setOutput(0, ctx.convert(x, typeOf(like).getElementType()));
}

} // namespace

void registerConstantHandlers(HandlerRegistry &r) {
  r.add("Constant", 1, importConstant);
  r.add("Shape", 1, importShape);
  r.add("Size", 1, importSize);
  r.add("Range", 11, importRange);
  r.add("ConstantOfShape", 9, importConstantOfShape);
  r.add("Identity", 1, importIdentity);
  r.add("Cast", 6, importCast);
  r.add("CastLike", 15, importCastLike);
}

} // namespace trc::import
