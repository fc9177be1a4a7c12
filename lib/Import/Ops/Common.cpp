//===- Common.cpp - building blocks the op handlers share ------------------===//
#include "Common.h"

using namespace mlir;

namespace trc::import {

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

Value iota(ImportContext &ctx, ArrayRef<int64_t> shape, int64_t dim, Type elem) {
  if (!elem)
    elem = ctx.builder().getI64Type();
  return ctx.build<IotaOp>(RankedTensorType::get(shape, elem), dim);
}

Value compare(ImportContext &ctx, CompareDirection direction, Value a, Value b) {
  if (!a || !b)
    return {};
  auto pred = RankedTensorType::get(typeOf(a).getShape(), ctx.builder().getI1Type());
  return ctx.build<CompareOp>(pred, direction, a, b);
}

Value compareWith(ImportContext &ctx, CompareDirection direction, Value a, double value) {
  if (!a)
    return {};
  return compare(ctx, direction, a, ctx.splat(typeOf(a), value));
}

Value select(ImportContext &ctx, Value pred, Value onTrue, Value onFalse) {
  if (!pred || !onTrue || !onFalse)
    return {};
  return ctx.build<SelectOp>(pred, onTrue, onFalse);
}

Value splatLike(ImportContext &ctx, Value like, double value) {
  return like ? ctx.splat(typeOf(like), value) : Value();
}

Value reduce(ImportContext &ctx, ReduceKind kind, Value x, ArrayRef<int64_t> dims) {
  if (!x)
    return {};
  if (dims.empty())
    return x;
  auto type = typeOf(x);
  SmallVector<int64_t> kept;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (!llvm::is_contained(dims, i))
      kept.push_back(type.getDimSize(i));
  return ctx.build<ReduceOp>(RankedTensorType::get(kept, type.getElementType()), kind, x,
                             dims);
}

Value expandReduced(ImportContext &ctx, Value reduced, ArrayRef<int64_t> shape,
                    ArrayRef<int64_t> dims) {
  if (!reduced)
    return {};
  SmallVector<int64_t> kept;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i)
    if (!llvm::is_contained(dims, i))
      kept.push_back(i);
  auto type = typeOf(reduced);
  if (type.getShape() == shape)
    return reduced;
  return ctx.build<BroadcastInDimOp>(RankedTensorType::get(shape, type.getElementType()),
                                     reduced, kept);
}

SmallVector<int64_t> keptShape(ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> out(shape);
  for (int64_t d : dims)
    out[d] = 1;
  return out;
}

Value wrapIndices(ImportContext &ctx, Value indices, int64_t size) {
  if (!indices)
    return {};
  Value i = ctx.convert(indices, ctx.builder().getI64Type());
  Value negative = compareWith(ctx, CompareDirection::LT, i, 0);
  Value shifted = i ? ctx.build<AddOp>(i, splatLike(ctx, i, static_cast<double>(size)))
                    : Value();
  return select(ctx, negative, shifted, i);
}

Value linearIndicesAlong(ImportContext &ctx, ArrayRef<int64_t> dataShape, Value indices,
                         int64_t axis) {
  if (!indices)
    return {};
  auto shape = typeOf(indices).getShape();
  SmallVector<int64_t> strides = stridesOf(dataShape);
  Value linear;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    Value coordinate = d == axis ? indices : iota(ctx, shape, d);
    if (!coordinate)
      return {};
    Value term = strides[d] == 1
                     ? coordinate
                     : ctx.build<MulOp>(coordinate, splatLike(ctx, coordinate,
                                                              static_cast<double>(strides[d])));
    linear = linear ? ctx.build<AddOp>(linear, term) : term;
    if (!linear)
      return {};
  }
  return linear ? linear : ctx.convert(indices, ctx.builder().getI64Type());
}

Value gatherAlong(ImportContext &ctx, Value data, Value indices, int64_t axis) {
  if (!data || !indices)
    return {};
  auto type = typeOf(data);
  Value linear = linearIndicesAlong(ctx, type.getShape(), indices, axis);
  Value flat = ctx.reshape(data, {type.getNumElements()});
  if (!linear || !flat)
    return {};
  return ctx.build<GatherOp>(
      RankedTensorType::get(typeOf(indices).getShape(), type.getElementType()), flat, linear,
      0);
}

Value scatterAddAlong(ImportContext &ctx, Value data, Value indices, Value updates,
                      int64_t axis) {
  if (!data || !indices || !updates)
    return {};
  auto type = typeOf(data);
  Value linear = linearIndicesAlong(ctx, type.getShape(), indices, axis);
  Value flat = ctx.reshape(data, {type.getNumElements()});
  if (!linear || !flat)
    return {};
  Value sum = ctx.build<ScatterAddOp>(typeOf(flat), flat, linear, updates, 0);
  return ctx.reshape(sum, type.getShape());
}

Value scatterAlong(ImportContext &ctx, Value data, Value indices, Value updates,
                   int64_t axis) {
  if (!data || !indices || !updates)
    return {};
  auto type = typeOf(data);
  // hit: where some update lands (a count, so that any element type works).
  auto countType = RankedTensorType::get(type.getShape(), ctx.builder().getI64Type());
  Value counts = scatterAddAlong(
      ctx, ctx.splat(countType, 0), indices,
      ctx.splat(RankedTensorType::get(typeOf(indices).getShape(), countType.getElementType()),
                1),
      axis);
  Value hit = compareWith(ctx, CompareDirection::GT, counts, 0);
  Value placed = scatterAddAlong(ctx, ctx.splat(type, 0), indices, updates, axis);
  return select(ctx, hit, placed, data);
}

Value argExtremum(ImportContext &ctx, Value x, int64_t axis, bool largest, bool last) {
  if (!x)
    return {};
  auto type = typeOf(x);
  Value extremum = reduce(ctx, largest ? ReduceKind::Max : ReduceKind::Min, x, {axis});
  Value at = compare(ctx, CompareDirection::EQ, x,
                     expandReduced(ctx, extremum, type.getShape(), {axis}));
  Value index = iota(ctx, type.getShape(), axis);
  // Not at the extremum: an index no candidate beats (past either end).
  Value none = index ? splatLike(ctx, index, last ? -1.0 : double(type.getDimSize(axis)))
                     : Value();
  return reduce(ctx, last ? ReduceKind::Max : ReduceKind::Min,
                select(ctx, at, index, none), {axis});
}

Value floatInput(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (x && !isa<FloatType>(typeOf(x).getElementType())) {
    (void)ctx.fail("the input must be a float tensor, got ", typeOf(x).getElementType());
    return {};
  }
  return x;
}

std::optional<double> constantNumber(ImportContext &ctx, int input, StringRef what) {
  DenseElementsAttr attr = ctx.constantInput(input, what);
  if (!attr)
    return std::nullopt;
  if (attr.getNumElements() != 1) {
    (void)ctx.fail(what, " (input '", ctx.node().input(input), "') must hold one value, has ",
                   attr.getNumElements());
    return std::nullopt;
  }
  Type elem = attr.getElementType();
  if (isa<FloatType>(elem))
    return (*attr.getValues<APFloat>().begin()).convertToDouble();
  APInt v = *attr.getValues<APInt>().begin();
  return elem.isUnsignedInteger() || elem.isInteger(1) ? double(v.getZExtValue())
                                                       : double(v.getSExtValue());
}

std::optional<SmallVector<int64_t>> spatialInts(ImportContext &ctx, StringRef name,
                                                size_t count, int64_t fill) {
  auto given = ctx.intsAttr(name);
  if (!given)
    return SmallVector<int64_t>(count, fill);
  if (given->size() != count) {
    (void)ctx.fail(name, " has ", given->size(), " values, expected ", count);
    return std::nullopt;
  }
  return given;
}

SmallVector<SmallVector<int64_t>> kernelOffsets(ArrayRef<int64_t> kernel) {
  SmallVector<SmallVector<int64_t>> all{{}};
  for (int64_t k : kernel) {
    SmallVector<SmallVector<int64_t>> next;
    for (const auto &prefix : all)
      for (int64_t i = 0; i < k; ++i) {
        next.push_back(prefix);
        next.back().push_back(i);
      }
    all = std::move(next);
  }
  return all;
}

Value padSpatial(ImportContext &ctx, Value x, ArrayRef<int64_t> low, ArrayRef<int64_t> high,
                 double value) {
  if (llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
      llvm::all_of(high, [](int64_t v) { return v == 0; }))
    return x;
  auto type = typeOf(x);
  SmallVector<int64_t> lo{0, 0}, hi{0, 0}, shape(type.getShape());
  llvm::append_range(lo, low);
  llvm::append_range(hi, high);
  for (size_t i = 0; i < low.size(); ++i)
    shape[i + 2] += low[i] + high[i];
  return ctx.build<PadOp>(RankedTensorType::get(shape, type.getElementType()), x,
                          ctx.scalar(type.getElementType(), value), lo, hi);
}

Value concatAlong(ImportContext &ctx, ArrayRef<Value> values, int64_t axis) {
  if (values.empty()) {
    (void)ctx.fail("nothing to concatenate");
    return {};
  }
  auto first = typeOf(values[0]);
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value v : values) {
    auto t = typeOf(v);
    if (t.getRank() != first.getRank()) {
      (void)ctx.fail("inputs of rank ", first.getRank(), " and ", t.getRank());
      return {};
    }
    shape[axis] += t.getDimSize(axis);
  }
  if (values.size() == 1)
    return values[0];
  return ctx.build<ConcatenateOp>(RankedTensorType::get(shape, first.getElementType()),
                                  values, axis);
}

SmallVector<Value> splitAlong(ImportContext &ctx, Value x, int64_t axis,
                              ArrayRef<int64_t> sizes) {
  auto type = typeOf(x);
  int64_t dim = type.getDimSize(axis);
  if (llvm::any_of(sizes, [&](int64_t s) { return s < 0 || s > dim; }) ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != dim) {
    (void)ctx.fail("split sizes ", shapeString(sizes), " do not cover axis of size ", dim);
    return {};
  }
  SmallVector<Value> pieces;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    SmallVector<int64_t> lo(type.getRank(), 0), hi(type.getShape()),
        strides(type.getRank(), 1), shape(type.getShape());
    lo[axis] = offset;
    hi[axis] = offset + size;
    shape[axis] = size;
    offset += size;
    Value piece = ctx.build<SliceOp>(RankedTensorType::get(shape, type.getElementType()),
                                     x, lo, hi, strides);
    if (!piece)
      return {};
    pieces.push_back(piece);
  }
  return pieces;
}

} // namespace trc::import
