//===- IndexingOps.cpp - ONNX ops that index by computed positions ---------===//
//
// GatherElements, ScatterElements (and the older Scatter), GatherND,
// ScatterND, OneHot, Compress, ArgMax, ArgMin, Hardmax, TopK, CumSum,
// EyeLike. None needs a core op of its own:
//   * element-wise indexing along an axis is trc.gather / trc.scatter_add on
//     the flattened tensor with linear indices built from iotas (Common.h),
//     so it differentiates through the gather/scatter_add VJP rules;
//   * ArgMax/ArgMin/Hardmax compare against the reduced extremum and reduce
//     the iota of the matches (first or last index);
//   * TopK takes k rounds of arg-extremum with the winners masked out, or
//     for large k ranks every element by pairwise comparison and scatters
//     the indices into sorted order;
//   * CumSum is a log-step (Hillis-Steele) scan of pads and adds.
// Constant indices are checked against their axis (an error, not undefined
// behavior); dynamic ones wrap negative values as ONNX says.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "../TensorData.h"
#include "Common.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace trc::import {
namespace {

bool isIndexType(Type t) { return t.isInteger(32) || t.isInteger(64); }

/// Errors for constant indices outside [-size, size).
LogicalResult checkConstantIndices(ImportContext &ctx, Value indices, int64_t size,
                                   StringRef what) {
  if (auto values = constantIntsOf(indices))
    for (int64_t v : *values)
      if (v < -size || v >= size)
        return ctx.fail(what, " ", v, " is out of range for an axis of size ", size);
  return success();
}

/// The element-wise ops' common checks: same rank, index type, index shape
/// within the data's on the other axes. Returns the normalized axis.
std::optional<int64_t> elementwiseIndexing(ImportContext &ctx, Value data, Value indices,
                                           int64_t axisAttr) {
  auto type = typeOf(data), itype = typeOf(indices);
  if (!isIndexType(itype.getElementType())) {
    (void)ctx.fail("indices must be int32 or int64, got ", itype.getElementType());
    return std::nullopt;
  }
  if (itype.getRank() != type.getRank() || type.getRank() == 0) {
    (void)ctx.fail("indices ", shapeString(itype.getShape()), " and data ",
                   shapeString(type.getShape()), " must have the same rank (>= 1)");
    return std::nullopt;
  }
  auto axis = ctx.axis(axisAttr, type.getRank());
  if (!axis)
    return std::nullopt;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d != *axis && itype.getDimSize(d) > type.getDimSize(d)) {
      (void)ctx.fail("indices ", shapeString(itype.getShape()), " exceed data ",
                     shapeString(type.getShape()), " on axis ", d);
      return std::nullopt;
    }
  if (failed(checkConstantIndices(ctx, indices, type.getDimSize(*axis), "index")))
    return std::nullopt;
  return axis;
}

LogicalResult importGatherElements(ImportContext &ctx) {
  Value data = ctx.input(0), indices = ctx.input(1);
  if (!data || !indices)
    return failure();
  auto axis = elementwiseIndexing(ctx, data, indices, ctx.intAttr("axis", 0));
  if (!axis)
    return failure();
  Value wrapped = wrapIndices(ctx, indices, typeOf(data).getDimSize(*axis));
  return ctx.setOutput(0, gatherAlong(ctx, data, wrapped, *axis));
}

LogicalResult importScatterElements(ImportContext &ctx) {
  Value data = ctx.input(0), indices = ctx.input(1), updates = ctx.input(2);
  if (!data || !indices || !updates)
    return failure();
  auto axis = elementwiseIndexing(ctx, data, indices, ctx.intAttr("axis", 0));
  if (!axis)
    return failure();
  if (typeOf(updates) != typeOf(indices).clone(typeOf(data).getElementType()))
    return ctx.fail("updates ", shapeString(typeOf(updates).getShape()),
                    " must have the indices' shape ", shapeString(typeOf(indices).getShape()),
                    " and the data's element type");
  std::string reduction = ctx.stringAttr("reduction", "none");
  Value wrapped = wrapIndices(ctx, indices, typeOf(data).getDimSize(*axis));
  if (reduction == "none")
    return ctx.setOutput(0, scatterAlong(ctx, data, wrapped, updates, *axis));
  if (reduction == "add")
    return ctx.setOutput(0, scatterAddAlong(ctx, data, wrapped, updates, *axis));
  return ctx.unsupported("reduction '", reduction, "' is not supported (none and add are)");
}

/// GatherND/ScatterND: linear indices into the first `b + k` dims of data
/// (flattened) for index tuples indices[..., :k]; i64 of shape
/// indices.shape[:-1].
Value tupleIndices(ImportContext &ctx, ArrayRef<int64_t> dataShape, Value indices,
                   int64_t batchDims) {
  auto itype = typeOf(indices);
  int64_t q = itype.getRank(), k = itype.getDimSize(q - 1);
  SmallVector<int64_t> outer(itype.getShape().drop_back());
  // Strides over data[:b + k] (the dims the linear index covers).
  SmallVector<int64_t> strides = stridesOf(dataShape.take_front(batchDims + k));
  Value linear;
  auto accumulate = [&](Value coordinate, int64_t stride) {
    if (!coordinate)
      return false;
    Value term = stride == 1 ? coordinate
                             : ctx.build<MulOp>(coordinate,
                                                splatLike(ctx, coordinate, double(stride)));
    linear = linear ? ctx.build<AddOp>(linear, term) : term;
    return linear != nullptr;
  };
  for (int64_t d = 0; d < batchDims; ++d)
    if (!accumulate(iota(ctx, outer, d), strides[d]))
      return {};
  for (int64_t j = 0; j < k; ++j) {
    SmallVector<int64_t> lo(q, 0), hi(itype.getShape()), step(q, 1);
    lo[q - 1] = j;
    hi[q - 1] = j + 1;
    SmallVector<int64_t> sliceShape(outer);
    sliceShape.push_back(1);
    Value component = ctx.build<SliceOp>(
        RankedTensorType::get(sliceShape, itype.getElementType()), indices, lo, hi, step);
    component = wrapIndices(ctx, ctx.reshape(component, outer), dataShape[batchDims + j]);
    if (!accumulate(component, strides[batchDims + j]))
      return {};
  }
  if (!linear) // k == 0 and no batch dims: every tuple selects the whole data
    linear = ctx.splat(RankedTensorType::get(outer, ctx.builder().getI64Type()), 0);
  return linear;
}

/// Common checks of GatherND/ScatterND; returns k (the tuple length).
std::optional<int64_t> ndIndexing(ImportContext &ctx, Value data, Value indices,
                                  int64_t batchDims) {
  auto type = typeOf(data), itype = typeOf(indices);
  if (!isIndexType(itype.getElementType())) {
    (void)ctx.fail("indices must be int32 or int64, got ", itype.getElementType());
    return std::nullopt;
  }
  if (itype.getRank() < 1 || batchDims < 0 || batchDims >= itype.getRank() ||
      batchDims > type.getRank()) {
    (void)ctx.fail("batch_dims ", batchDims, " does not fit indices ",
                   shapeString(itype.getShape()), " and data ", shapeString(type.getShape()));
    return std::nullopt;
  }
  int64_t k = itype.getDimSize(itype.getRank() - 1);
  if (batchDims + k > type.getRank()) {
    (void)ctx.fail("index tuples of length ", k, " exceed the rank ", type.getRank(),
                   " of data");
    return std::nullopt;
  }
  for (int64_t d = 0; d < batchDims; ++d)
    if (itype.getDimSize(d) != type.getDimSize(d)) {
      (void)ctx.fail("batch dim ", d, " differs: indices ", shapeString(itype.getShape()),
                     ", data ", shapeString(type.getShape()));
      return std::nullopt;
    }
  if (auto values = constantIntsOf(indices))
    for (size_t i = 0; i < values->size(); ++i) {
      int64_t size = type.getDimSize(batchDims + static_cast<int64_t>(i) % k);
      if ((*values)[i] < -size || (*values)[i] >= size) {
        (void)ctx.fail("index ", (*values)[i], " is out of range for an axis of size ", size);
        return std::nullopt;
      }
    }
  return k;
}

LogicalResult importGatherND(ImportContext &ctx) {
  Value data = ctx.input(0), indices = ctx.input(1);
  if (!data || !indices)
    return failure();
  int64_t b = ctx.intAttr("batch_dims", 0);
  auto k = ndIndexing(ctx, data, indices, b);
  if (!k)
    return failure();
  auto type = typeOf(data);
  auto rest = type.getShape().drop_front(b + *k);
  SmallVector<int64_t> flatShape{product(type.getShape().take_front(b + *k))};
  llvm::append_range(flatShape, rest);
  Value linear = tupleIndices(ctx, type.getShape(), indices, b);
  Value flat = ctx.reshape(data, flatShape);
  if (!linear || !flat)
    return failure();
  SmallVector<int64_t> shape(typeOf(linear).getShape());
  llvm::append_range(shape, rest);
  return ctx.setOutput(0, ctx.build<GatherOp>(
                              RankedTensorType::get(shape, type.getElementType()), flat,
                              linear, 0));
}

LogicalResult importScatterND(ImportContext &ctx) {
  Value data = ctx.input(0), indices = ctx.input(1), updates = ctx.input(2);
  if (!data || !indices || !updates)
    return failure();
  auto k = ndIndexing(ctx, data, indices, 0);
  if (!k)
    return failure();
  auto type = typeOf(data);
  auto rest = type.getShape().drop_front(*k);
  SmallVector<int64_t> flatShape{product(type.getShape().take_front(*k))};
  llvm::append_range(flatShape, rest);
  SmallVector<int64_t> updatesShape(typeOf(indices).getShape().drop_back());
  llvm::append_range(updatesShape, rest);
  if (typeOf(updates) != RankedTensorType::get(updatesShape, type.getElementType()))
    return ctx.fail("updates ", shapeString(typeOf(updates).getShape()), " must be ",
                    shapeString(updatesShape), " of the data's element type");
  std::string reduction = ctx.stringAttr("reduction", "none");
  if (reduction != "none" && reduction != "add")
    return ctx.unsupported("reduction '", reduction, "' is not supported (none and add are)");
  Value linear = tupleIndices(ctx, type.getShape(), indices, 0);
  Value flat = ctx.reshape(data, flatShape);
  if (!linear || !flat)
    return failure();
  auto flatType = typeOf(flat);
  if (reduction == "add")
    return ctx.setOutput(0, ctx.reshape(ctx.build<ScatterAddOp>(flatType, flat, linear,
                                                                updates, 0),
                                        type.getShape()));
  auto i64 = ctx.builder().getI64Type();
  auto countType = RankedTensorType::get({flatShape[0]}, i64);
  Value counts = ctx.build<ScatterAddOp>(
      countType, ctx.splat(countType, 0), linear,
      ctx.splat(RankedTensorType::get(typeOf(linear).getShape(), i64), 1), 0);
  Value hit = compareWith(ctx, CompareDirection::GT, counts, 0);
  if (!hit)
    return failure();
  hit = ctx.build<BroadcastInDimOp>(
      RankedTensorType::get(flatShape, typeOf(hit).getElementType()), hit,
      ArrayRef<int64_t>{0});
  Value placed = ctx.build<ScatterAddOp>(flatType, ctx.splat(flatType, 0), linear, updates, 0);
  return ctx.setOutput(0, ctx.reshape(select(ctx, hit, placed, flat), type.getShape()));
}

LogicalResult importOneHot(ImportContext &ctx) {
  Value indices = ctx.input(0), values = ctx.input(2);
  auto depth = constantNumber(ctx, 1, "depth");
  if (!indices || !values || !depth)
    return failure();
  if (*depth < 1 || *depth > double(kMaxDimSize))
    return ctx.fail("depth ", *depth, " must be a positive size");
  auto vtype = typeOf(values);
  if (vtype.getNumElements() != 2)
    return ctx.fail("values must hold [off, on], has ", vtype.getNumElements(), " elements");
  auto itype = typeOf(indices);
  int64_t rank = itype.getRank() + 1;
  auto axis = ctx.axis(ctx.intAttr("axis", -1), rank);
  if (!axis)
    return failure();
  int64_t n = static_cast<int64_t>(*depth);
  SmallVector<int64_t> shape(itype.getShape());
  shape.insert(shape.begin() + *axis, n);
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis)
      dims.push_back(d);
  Value wrapped = wrapIndices(ctx, indices, n);
  if (!wrapped)
    return failure();
  Value index = ctx.build<BroadcastInDimOp>(
      RankedTensorType::get(shape, typeOf(wrapped).getElementType()), wrapped, dims);
  Value hot = compare(ctx, CompareDirection::EQ, iota(ctx, shape, *axis), index);
  Value flat = ctx.reshape(values, {2});
  auto scalarType = RankedTensorType::get({1}, vtype.getElementType());
  auto pick = [&](int64_t i) -> Value {
    Value v = ctx.build<SliceOp>(scalarType, flat, ArrayRef<int64_t>{i},
                                 ArrayRef<int64_t>{i + 1}, ArrayRef<int64_t>{1});
    v = ctx.reshape(v, {});
    return v ? ctx.broadcastTo(v, shape) : Value();
  };
  return ctx.setOutput(0, select(ctx, hot, pick(1), pick(0)));
}

LogicalResult importCompress(ImportContext &ctx) {
  Value x = ctx.input(0);
  DenseElementsAttr condition = ctx.constantInput(1, "condition");
  if (!x || !condition)
    return failure();
  auto type = typeOf(x);
  int64_t axis = 0;
  if (ctx.attr("axis")) {
    auto a = ctx.axis(ctx.intAttr("axis", 0), type.getRank());
    if (!a)
      return failure();
    axis = *a;
  } else {
    x = ctx.reshape(x, {type.getNumElements()});
    if (!x)
      return failure();
    type = typeOf(x);
  }
  if (condition.getType().getRank() != 1)
    return ctx.fail("condition must be 1-D, got ",
                    shapeString(condition.getType().getShape()));
  if (condition.getNumElements() > type.getDimSize(axis))
    return ctx.fail("condition has ", condition.getNumElements(),
                    " entries for an axis of size ", type.getDimSize(axis));
  SmallVector<int64_t> selected;
  int64_t i = 0;
  for (const APInt &c : condition.getValues<APInt>()) {
    if (!c.isZero())
      selected.push_back(i);
    ++i;
  }
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = static_cast<int64_t>(selected.size());
  if (selected.empty())
    return ctx.setOutput(0,
                         ctx.splat(RankedTensorType::get(shape, type.getElementType()), 0));
  return ctx.setOutput(0, ctx.build<GatherOp>(
                              RankedTensorType::get(shape, type.getElementType()), x,
                              ctx.int64s(selected), axis));
}

template <bool largest> LogicalResult importArgExtremum(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  if (type.getRank() == 0)
    return ctx.fail("the input must have rank >= 1");
  auto axis = ctx.axis(ctx.intAttr("axis", 0), type.getRank());
  if (!axis)
    return failure();
  if (type.getDimSize(*axis) == 0)
    return ctx.fail("axis ", *axis, " is empty");
  bool last = ctx.intAttr("select_last_index", 0) != 0;
  Value index = argExtremum(ctx, x, *axis, largest, last);
  if (index && ctx.intAttr("keepdims", 1))
    index = ctx.reshape(index, keptShape(type.getShape(), {*axis}));
  return ctx.setOutput(0, index);
}

/// One-hot of the first largest element along `axis` in x's type.
Value hardmax(ImportContext &ctx, Value x, int64_t axis) {
  auto type = typeOf(x);
  Value index = argExtremum(ctx, x, axis, /*largest=*/true, /*last=*/false);
  Value at = compare(ctx, CompareDirection::EQ, iota(ctx, type.getShape(), axis),
                     expandReduced(ctx, index, type.getShape(), {axis}));
  return select(ctx, at, ctx.splat(type, 1), ctx.splat(type, 0));
}

LogicalResult importHardmax(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  if (type.getRank() == 0)
    return ctx.fail("the input must have rank >= 1");
  if (type.getNumElements() == 0)
    return ctx.setOutput(0, x);
  int64_t defaultAxis = ctx.opset() < 13 ? 1 : -1;
  auto axis = ctx.axis(ctx.intAttr("axis", defaultAxis), type.getRank());
  if (!axis)
    return failure();
  if (ctx.opset() >= 13)
    return ctx.setOutput(0, hardmax(ctx, x, *axis));
  // Before opset 13 the input is viewed as 2-D [prod(:axis), prod(axis:)].
  Value flat = ctx.reshape(x, {product(type.getShape().take_front(*axis)),
                               product(type.getShape().drop_front(*axis))});
  if (!flat)
    return failure();
  return ctx.setOutput(0, ctx.reshape(hardmax(ctx, flat, 1), type.getShape()));
}

/// The value that loses every comparison: -inf (largest) or +inf, or the
/// integer type's extreme.
double losingValue(Type elem, bool largest) {
  if (isa<FloatType>(elem))
    return largest ? -INFINITY : INFINITY;
  unsigned bits = elem.getIntOrFloatBitWidth();
  if (bits == 1)
    return largest ? 0 : 1;
  if (bits >= 64)
    return largest ? double(std::numeric_limits<int64_t>::min())
                   : double(std::numeric_limits<int64_t>::max());
  return largest ? -std::ldexp(1.0, bits - 1) : std::ldexp(1.0, bits - 1) - 1;
}

/// TopK's indices for small k: k rounds of arg-extremum, each winner masked
/// out of the next round. i64, the axis of size k.
Value topKByRounds(ImportContext &ctx, Value x, int64_t axis, int64_t k, bool largest) {
  auto type = typeOf(x);
  Value current = x;
  Value positions = iota(ctx, type.getShape(), axis);
  Value losing = ctx.splat(type, losingValue(type.getElementType(), largest));
  SmallVector<int64_t> keptDims = keptShape(type.getShape(), {axis});
  SmallVector<Value> rounds;
  for (int64_t r = 0; r < k; ++r) {
    Value index = argExtremum(ctx, current, axis, largest, false);
    if (!index)
      return {};
    rounds.push_back(ctx.reshape(index, keptDims));
    if (r + 1 < k) {
      Value taken = compare(ctx, CompareDirection::EQ, positions,
                            expandReduced(ctx, index, type.getShape(), {axis}));
      current = select(ctx, taken, losing, current);
    }
  }
  if (rounds.size() == 1)
    return rounds[0];
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = k;
  return ctx.build<ConcatenateOp>(RankedTensorType::get(shape, ctx.builder().getI64Type()),
                                  rounds, axis);
}

/// TopK's indices for large k: element i's rank is the number of elements
/// that come before it (larger, or equal at a smaller index); the indices
/// scattered to their ranks are the sorted order, of which the first k are
/// kept. O(n^2) comparisons per row.
Value topKByRanks(ImportContext &ctx, Value x, int64_t axis, int64_t k, bool largest) {
  auto type = typeOf(x);
  int64_t rank = type.getRank();
  // Pairwise shape: [..., i (axis), j (axis + 1), ...].
  SmallVector<int64_t> pairShape(type.getShape());
  pairShape.insert(pairShape.begin() + axis + 1, type.getDimSize(axis));
  SmallVector<int64_t> asI, asJ;
  for (int64_t d = 0; d < rank; ++d) {
    asI.push_back(d <= axis ? d : d + 1);
    asJ.push_back(d < axis ? d : d + 1);
  }
  auto pairType = RankedTensorType::get(pairShape, type.getElementType());
  Value xi = ctx.build<BroadcastInDimOp>(pairType, x, asI);
  Value xj = ctx.build<BroadcastInDimOp>(pairType, x, asJ);
  Value i = iota(ctx, pairShape, axis), j = iota(ctx, pairShape, axis + 1);
  Value better = compare(ctx, largest ? CompareDirection::GT : CompareDirection::LT, xj, xi);
  Value tie = compare(ctx, CompareDirection::EQ, xj, xi);
  Value earlier = compare(ctx, CompareDirection::LT, j, i);
  Value tieEarlier = tie && earlier ? ctx.build<AndOp>(tie, earlier) : Value();
  Value before = better && tieEarlier ? ctx.build<OrOp>(better, tieEarlier) : Value();
  if (!before || !i)
    return {};
  Value ones = splatLike(ctx, i, 1), zeros = splatLike(ctx, i, 0);
  Value ranks = reduce(ctx, ReduceKind::Sum, select(ctx, before, ones, zeros), {axis + 1});
  auto indexType = RankedTensorType::get(type.getShape(), ctx.builder().getI64Type());
  Value sorted = scatterAddAlong(ctx, ctx.splat(indexType, 0), ranks,
                                 iota(ctx, type.getShape(), axis), axis);
  if (!sorted)
    return {};
  SmallVector<int64_t> lo(rank, 0), hi(type.getShape()), step(rank, 1);
  hi[axis] = k;
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = k;
  return ctx.build<SliceOp>(RankedTensorType::get(shape, ctx.builder().getI64Type()), sorted,
                            lo, hi, step);
}

/// Above this k, TopK ranks pairwise instead of taking k rounds.
constexpr int64_t kTopKRounds = 16;

LogicalResult importTopK(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  if (type.getRank() == 0)
    return ctx.fail("the input must have rank >= 1");
  int64_t k;
  if (ctx.opset() < 10) {
    k = ctx.intAttr("k", -1);
  } else {
    auto given = ctx.constantInts(1, "K");
    if (!given)
      return failure();
    if (given->size() != 1)
      return ctx.fail("K must hold one value, has ", given->size());
    k = (*given)[0];
  }
  auto axis = ctx.axis(ctx.intAttr("axis", -1), type.getRank());
  if (!axis)
    return failure();
  if (k < 0 || k > type.getDimSize(*axis))
    return ctx.fail("k ", k, " is out of range for an axis of size ", type.getDimSize(*axis));
  bool largest = ctx.opset() < 11 || ctx.intAttr("largest", 1) != 0;
  SmallVector<int64_t> shape(type.getShape());
  shape[*axis] = k;
  Value indices;
  if (k == 0)
    indices = ctx.splat(RankedTensorType::get(shape, ctx.builder().getI64Type()), 0);
  else if (k <= kTopKRounds)
    indices = topKByRounds(ctx, x, *axis, k, largest);
  else
    indices = topKByRanks(ctx, x, *axis, k, largest);
  Value values = k == 0 ? ctx.splat(RankedTensorType::get(shape, type.getElementType()), 0)
                        : gatherAlong(ctx, x, indices, *axis);
  if (failed(ctx.setOutput(0, values)))
    return failure();
  return ctx.setOutput(1, indices);
}

/// x shifted by `s` along `axis` (zeros enter at the start).
Value shifted(ImportContext &ctx, Value x, int64_t axis, int64_t s) {
  auto type = typeOf(x);
  int64_t rank = type.getRank();
  SmallVector<int64_t> low(rank, 0), high(rank, 0);
  low[axis] = s;
  SmallVector<int64_t> padded(type.getShape());
  padded[axis] += s;
  Value p = ctx.build<PadOp>(RankedTensorType::get(padded, type.getElementType()), x,
                             ctx.scalar(type.getElementType(), 0), low, high);
  SmallVector<int64_t> lo(rank, 0), step(rank, 1);
  return p ? ctx.build<SliceOp>(type, p, lo, type.getShape(), step) : Value();
}

LogicalResult importCumSum(ImportContext &ctx) {
  Value x = ctx.input(0);
  auto axisValue = ctx.constantInts(1, "axis");
  if (!x || !axisValue)
    return failure();
  auto type = typeOf(x);
  if (type.getRank() == 0)
    return ctx.fail("the input must have rank >= 1");
  if (axisValue->size() != 1)
    return ctx.fail("axis must hold one value, has ", axisValue->size());
  auto axis = ctx.axis((*axisValue)[0], type.getRank());
  if (!axis)
    return failure();
  if (isa<IntegerType>(type.getElementType()) && type.getElementType().isInteger(1))
    return ctx.fail("CumSum of booleans is not defined");
  bool reverse = ctx.intAttr("reverse", 0) != 0;
  bool exclusive = ctx.intAttr("exclusive", 0) != 0;
  int64_t n = type.getDimSize(*axis);
  if (n == 0)
    return ctx.setOutput(0, x);
  SmallVector<int64_t> dims{*axis};
  if (reverse)
    x = ctx.build<ReverseOp>(x, dims);
  if (x && exclusive)
    x = shifted(ctx, x, *axis, 1);
  for (int64_t s = 1; x && s < n; s *= 2) {
    Value moved = shifted(ctx, x, *axis, s);
    x = moved ? ctx.build<AddOp>(x, moved) : Value();
  }
  if (x && reverse)
    x = ctx.build<ReverseOp>(x, dims);
  return ctx.setOutput(0, x);
}

LogicalResult importEyeLike(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  if (type.getRank() != 2)
    return ctx.fail("the input must be 2-D, got ", shapeString(type.getShape()));
  Type elem = type.getElementType();
  if (const auto *dtype = ctx.attr("dtype")) {
    elem = elementTypeOf(static_cast<int>(dtype->i()), ctx.context());
    if (!elem)
      return ctx.unsupported("dtype ", onnxTypeName(static_cast<int>(dtype->i())),
                      " is not supported");
  }
  auto resultType = RankedTensorType::get(type.getShape(), elem);
  int64_t k = ctx.intAttr("k", 0);
  Value row = iota(ctx, type.getShape(), 0), col = iota(ctx, type.getShape(), 1);
  Value diagonal = row && col ? compareWith(ctx, CompareDirection::EQ,
                                            ctx.build<SubOp>(col, row), double(k))
                              : Value();
  return ctx.setOutput(
      0, select(ctx, diagonal, ctx.splat(resultType, 1), ctx.splat(resultType, 0)));
}

} // namespace

void registerIndexingHandlers(HandlerRegistry &r) {
  r.add("GatherElements", 11, importGatherElements);
  r.add("ScatterElements", 11, importScatterElements);
  r.add("Scatter", 9, importScatterElements);
  r.add("GatherND", 11, importGatherND);
  r.add("ScatterND", 11, importScatterND);
  r.add("OneHot", 9, importOneHot);
  r.add("Compress", 9, importCompress);
  r.add("ArgMax", 1, importArgExtremum<true>);
  r.add("ArgMin", 1, importArgExtremum<false>);
  r.add("Hardmax", 1, importHardmax);
  r.add("TopK", 1, importTopK);
  r.add("CumSum", 11, importCumSum);
  r.add("EyeLike", 9, importEyeLike);
}

} // namespace trc::import
