//===- ShapeOps.cpp - ONNX data-movement ops -> trc ---------------------------===//
//
// Reshape, Transpose, Slice, Concat, Split, Squeeze, Unsqueeze, Expand, Tile,
// Flatten, Gather, Trilu. Shape-like operands (shape, axes, starts...) must
// fold to constants; with static input shapes, exporters' shape subgraphs do.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "../TensorData.h"
#include "Common.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <numeric>

using namespace mlir;

namespace trc::import {
namespace {


LogicalResult importReshape(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  bool allowZero = ctx.intAttr("allowzero", 0) != 0;
  std::optional<SmallVector<int64_t>> target =
      ctx.opset() < 5
          ? ctx.intsAttr("shape")
          : ctx.shapeInts(1, "shape", ShapeOperand::ReshapeTarget, {}, allowZero);
  if (!target)
    return failure();
  SmallVector<int64_t> shape;
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(*target)) {
    if (d == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= type.getRank())
        return ctx.fail("shape entry ", i, " is 0 (copy) but the input has rank ",
                        type.getRank());
      d = type.getDimSize(i);
    }
    if (d == -1) {
      if (inferred >= 0)
        return ctx.fail("shape ", shapeString(*target), " has more than one -1");
      inferred = static_cast<int64_t>(i);
    } else if (d < 0) {
      return ctx.fail("shape ", shapeString(*target), " has a negative entry");
    } else {
      // Bounded like every shape (checkDims), so the product cannot overflow.
      if (d > kMaxDimSize || (d != 0 && known > kMaxElements / d))
        return ctx.fail("cannot reshape ", shapeString(type.getShape()), " to ",
                        shapeString(*target), ": absurd element count");
      known *= d;
    }
    shape.push_back(d);
  }
  if (inferred >= 0) {
    if (known == 0 || type.getNumElements() % known != 0)
      return ctx.fail("cannot reshape ", shapeString(type.getShape()), " to ",
                      shapeString(*target));
    shape[inferred] = type.getNumElements() / known;
  }
  if (product(shape) != type.getNumElements())
    return ctx.fail("cannot reshape ", shapeString(type.getShape()), " (",
                    type.getNumElements(), " elements) to ", shapeString(shape));
  return ctx.setOutput(0, ctx.reshape(x, shape));
}

LogicalResult importTranspose(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  SmallVector<int64_t> perm;
  if (auto given = ctx.intsAttr("perm"))
    perm = *given;
  else
    for (int64_t i = type.getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != type.getRank())
    return ctx.fail("perm ", shapeString(perm), " does not match rank ", type.getRank());
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= type.getRank())
      return ctx.fail("perm ", shapeString(perm), " is not a permutation");
    shape.push_back(type.getDimSize(p));
  }
  return ctx.setOutput(0, ctx.build<TransposeOp>(
                              RankedTensorType::get(shape, type.getElementType()), x, perm));
}

LogicalResult importSlice(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  int64_t rank = type.getRank();
  std::optional<SmallVector<int64_t>> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.intsAttr("starts");
    ends = ctx.intsAttr("ends");
    axes = ctx.intsAttr("axes");
    if (!starts || !ends)
      return ctx.fail("missing starts or ends attribute");
  } else {
    if (ctx.hasInput(3) && !(axes = ctx.constantInts(3, "axes")))
      return failure();
    if (ctx.hasInput(4) && !(steps = ctx.constantInts(4, "steps")))
      return failure();
    // Starts and ends re-derive per axis (Respecialize.h); axes out of
    // range are reported below.
    SmallVector<int64_t> normalized;
    auto given = ctx.constantInts(1, "starts");
    if (!given)
      return failure();
    for (size_t i = 0; i < given->size(); ++i) {
      int64_t a = axes ? (i < axes->size() ? (*axes)[i] : rank) : static_cast<int64_t>(i);
      normalized.push_back(a < 0 ? a + rank : a);
    }
    if (llvm::any_of(normalized, [&](int64_t a) { return a < 0 || a >= rank; }))
      normalized.clear();
    starts = ctx.shapeInts(1, "starts", ShapeOperand::SliceStarts, normalized);
    ends = ctx.shapeInts(2, "ends", ShapeOperand::SliceEnds, normalized);
    if (!starts || !ends)
      return failure();
  }
  size_t n = starts->size();
  if (!axes)
    axes = llvm::to_vector(llvm::seq<int64_t>(0, static_cast<int64_t>(n)));
  if (!steps)
    steps = SmallVector<int64_t>(n, 1);
  if (ends->size() != n || axes->size() != n || steps->size() != n)
    return ctx.fail("starts, ends, axes and steps have different lengths");

  SmallVector<int64_t> lo(rank, 0), hi(type.getShape()), stride(rank, 1);
  SmallVector<int64_t> reversed;
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < n; ++i) {
    auto axis = ctx.axis((*axes)[i], rank);
    if (!axis)
      return failure();
    if (seen[*axis])
      return ctx.fail("axis ", *axis, " is sliced twice");
    seen[*axis] = true;
    int64_t dim = type.getDimSize(*axis), step = (*steps)[i];
    if (step == 0)
      return ctx.fail("step 0 on axis ", *axis);
    // |step| >= dim selects at most one element, as a step of dim does;
    // clamping keeps -step and the size arithmetic below from overflowing.
    step = std::clamp<int64_t>(step, -std::max<int64_t>(dim, 1),
                               std::max<int64_t>(dim, 1));
    auto clampIndex = [&](int64_t v, int64_t lowBound, int64_t highBound) {
      if (v < 0)
        v += dim;
      return std::min(std::max(v, lowBound), highBound);
    };
    if (dim == 0) {
      lo[*axis] = hi[*axis] = 0;
    } else if (step > 0) {
      lo[*axis] = clampIndex((*starts)[i], 0, dim);
      hi[*axis] = std::max(lo[*axis], clampIndex((*ends)[i], 0, dim));
      stride[*axis] = step;
    } else {
      // A negative step walks [start, end) backwards: reverse the axis, then
      // slice forwards over the mirrored indices.
      int64_t first = clampIndex((*starts)[i], 0, dim - 1);
      int64_t last = clampIndex((*ends)[i], -1, dim - 1);
      reversed.push_back(*axis);
      lo[*axis] = dim - 1 - first;
      hi[*axis] = std::max(lo[*axis], dim - 1 - last);
      stride[*axis] = -step;
    }
  }
  if (!reversed.empty()) {
    x = ctx.build<ReverseOp>(type, x, reversed);
    if (!x)
      return failure();
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back((hi[d] - lo[d] + stride[d] - 1) / stride[d]);
  return ctx.setOutput(0, ctx.build<SliceOp>(
                              RankedTensorType::get(shape, type.getElementType()), x, lo,
                              hi, stride));
}

LogicalResult importConcat(ImportContext &ctx) {
  SmallVector<Value> inputs;
  for (int i = 0; i < ctx.numInputs(); ++i) {
    Value v = ctx.input(i);
    if (!v)
      return failure();
    inputs.push_back(v);
  }
  if (inputs.empty())
    return ctx.fail("Concat needs at least one input");
  auto axis = ctx.axis(ctx.intAttr("axis", 0), typeOf(inputs[0]).getRank());
  if (!axis)
    return failure();
  // Re-specializing: constant inputs (start tokens filled at the traced
  // batch) follow a computed input's size on the other axes.
  auto computed = llvm::find_if(inputs, [](Value v) {
    return !v.getDefiningOp<ConstantOp>() && !v.getDefiningOp<GetParameterOp>();
  });
  if (computed != inputs.end())
    for (Value &v : inputs) {
      SmallVector<int64_t> want(typeOf(*computed).getShape());
      if (v == *computed || want.size() != static_cast<size_t>(typeOf(v).getRank()))
        continue;
      want[*axis] = typeOf(v).getDimSize(*axis);
      if (!(v = ctx.retraceFixedData(v, want, /*broadcast=*/false)))
        return failure();
    }
  return ctx.setOutput(0, concatAlong(ctx, inputs, *axis));
}

LogicalResult importSplit(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  auto axis = ctx.axis(ctx.intAttr("axis", 0), type.getRank());
  if (!axis)
    return failure();
  int64_t dim = type.getDimSize(*axis);
  int n = ctx.numOutputs();
  std::optional<SmallVector<int64_t>> sizes;
  if (ctx.opset() < 13) {
    sizes = ctx.intsAttr("split");
  } else if (ctx.hasInput(1)) {
    if (!(sizes = ctx.constantInts(1, "split")))
      return failure();
  }
  if (!sizes) {
    // Equal parts; from opset 18 the last may be smaller (ceil division).
    int64_t parts = ctx.opset() >= 18 ? ctx.intAttr("num_outputs", n) : n;
    if (parts <= 0 || parts != n)
      return ctx.fail("cannot split into ", parts, " parts for ", n, " outputs");
    int64_t chunk = ctx.opset() >= 18 ? (dim + parts - 1) / parts : dim / parts;
    if (ctx.opset() < 18 && dim % parts != 0)
      return ctx.fail("axis of size ", dim, " does not split into ", parts,
                      " equal parts");
    sizes = SmallVector<int64_t>();
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= chunk)
      sizes->push_back(std::min(chunk, std::max<int64_t>(left, 0)));
  }
  if (static_cast<int>(sizes->size()) != n)
    return ctx.fail("split sizes ", shapeString(*sizes), " do not cover axis of size ",
                    dim, " with ", n, " outputs");
  SmallVector<Value> pieces = splitAlong(ctx, x, *axis, *sizes);
  if (pieces.empty())
    return failure();
  for (int i = 0; i < n; ++i)
    if (failed(ctx.setOutput(i, pieces[i])))
      return failure();
  return success();
}

// Axes of Squeeze/Unsqueeze: an attribute before opset 13, an input after.
std::optional<SmallVector<int64_t>> axesOperand(ImportContext &ctx) {
  if (ctx.opset() < 13)
    return ctx.intsAttr("axes");
  if (!ctx.hasInput(1))
    return std::nullopt;
  return ctx.constantInts(1, "axes");
}

LogicalResult importSqueeze(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  auto axes = axesOperand(ctx);
  if (ctx.opset() >= 13 && ctx.hasInput(1) && !axes)
    return failure();
  SmallVector<bool> drop(type.getRank(), false);
  if (axes) {
    for (int64_t a : *axes) {
      auto axis = ctx.axis(a, type.getRank());
      if (!axis)
        return failure();
      if (type.getDimSize(*axis) != 1)
        return ctx.fail("cannot squeeze axis ", *axis, " of size ",
                        type.getDimSize(*axis));
      drop[*axis] = true;
    }
  } else {
    for (int64_t i = 0; i < type.getRank(); ++i)
      drop[i] = type.getDimSize(i) == 1;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (!drop[i])
      shape.push_back(type.getDimSize(i));
  return ctx.setOutput(0, ctx.reshape(x, shape));
}

LogicalResult importUnsqueeze(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  auto axes = axesOperand(ctx);
  if (!axes)
    return ctx.opset() >= 13 && ctx.hasInput(1) ? failure()
                                                : ctx.fail("missing axes");
  int64_t rank = type.getRank() + static_cast<int64_t>(axes->size());
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    auto axis = ctx.axis(a, rank);
    if (!axis)
      return failure();
    if (inserted[*axis])
      return ctx.fail("axis ", *axis, " is repeated");
    inserted[*axis] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0, j = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : type.getDimSize(j++));
  return ctx.setOutput(0, ctx.reshape(x, shape));
}

LogicalResult importExpand(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto target = ctx.shapeInts(1, "shape", ShapeOperand::ExpandTarget);
  if (!target)
    return failure();
  auto shape = ctx.broadcastShape(typeOf(x).getShape(), *target);
  if (!shape)
    return failure();
  return ctx.setOutput(0, ctx.broadcastTo(x, *shape));
}

LogicalResult importTile(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto repeats = ctx.shapeInts(1, "repeats", ShapeOperand::TileRepeats);
  if (!repeats)
    return failure();
  auto type = typeOf(x);
  if (static_cast<int64_t>(repeats->size()) != type.getRank())
    return ctx.fail("repeats has ", repeats->size(), " entries for rank ",
                    type.getRank());
  // Tile = broadcast [d0..] to [r0, d0, r1, d1, ...], then merge pairs.
  SmallVector<int64_t> wide, dims, out;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if ((*repeats)[i] < 0)
      return ctx.fail("negative repeat ", (*repeats)[i]);
    if ((*repeats)[i] > kMaxDimSize ||
        (type.getDimSize(i) != 0 &&
         (*repeats)[i] > kMaxElements / type.getDimSize(i)))
      return ctx.fail("repeat ", (*repeats)[i], " of an axis of size ",
                      type.getDimSize(i), " is absurd");
    wide.append({(*repeats)[i], type.getDimSize(i)});
    dims.push_back(2 * i + 1);
    out.push_back((*repeats)[i] * type.getDimSize(i));
  }
  Value broadcast = ctx.build<BroadcastInDimOp>(
      RankedTensorType::get(wide, type.getElementType()), x, dims);
  return ctx.setOutput(0, ctx.reshape(broadcast, out));
}

LogicalResult importFlatten(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  int64_t a = ctx.intAttr("axis", 1);
  if (a < -type.getRank() || a > type.getRank())
    return ctx.fail("axis ", a, " is out of range for rank ", type.getRank());
  if (a < 0)
    a += type.getRank();
  return ctx.setOutput(0, ctx.reshape(x, {product(type.getShape().take_front(a)),
                                          product(type.getShape().drop_front(a))}));
}

LogicalResult importGather(ImportContext &ctx) {
  Value data = ctx.input(0), indices = ctx.input(1);
  if (!data || !indices)
    return failure();
  auto type = typeOf(data);
  auto axis = ctx.axis(ctx.intAttr("axis", 0), type.getRank());
  if (!axis)
    return failure();
  // An embedding table's constant indices (positions, token types) follow
  // the sizes when a static export is re-specialized.
  if (*axis == 0 && type.getRank() == 2 && data.getDefiningOp<GetParameterOp>() &&
      !(indices = ctx.embeddingIndices(1, indices, type.getDimSize(0))))
    return failure();
  // Out-of-range constant indices are an error here, not undefined behavior.
  if (auto values = constantIntsOf(indices)) {
    int64_t dim = type.getDimSize(*axis);
    for (int64_t v : *values)
      if (v < -dim || v >= dim)
        return ctx.fail("index ", v, " is out of range for axis ", *axis, " of size ",
                        dim);
  }
  SmallVector<int64_t> shape(type.getShape().take_front(*axis));
  llvm::append_range(shape, typeOf(indices).getShape());
  llvm::append_range(shape, type.getShape().drop_front(*axis + 1));
  return ctx.setOutput(0, ctx.build<GatherOp>(
                              RankedTensorType::get(shape, type.getElementType()), data,
                              indices, *axis));
}

LogicalResult importTrilu(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  if (type.getRank() < 2)
    return ctx.fail("Trilu needs rank >= 2");
  int64_t k = 0;
  if (ctx.hasInput(1)) {
    auto given = ctx.constantInts(1, "k");
    if (!given || given->size() != 1)
      return failure();
    k = (*given)[0];
  }
  bool upper = ctx.intAttr("upper", 1) != 0;
  // Keep x[..., i, j] where j - i >= k (upper) or j - i <= k (lower).
  auto &b = ctx.builder();
  int64_t r = type.getRank();
  auto indexType = RankedTensorType::get(type.getShape(), b.getI64Type());
  Value row = ctx.build<IotaOp>(indexType, r - 2);
  Value col = ctx.build<IotaOp>(indexType, r - 1);
  Value diff = ctx.build<SubOp>(col, row);
  auto predType = RankedTensorType::get(type.getShape(), b.getI1Type());
  Value keep = ctx.build<CompareOp>(predType,
                                    upper ? CompareDirection::GE : CompareDirection::LE,
                                    diff, ctx.splat(indexType, static_cast<double>(k)));
  return ctx.setOutput(0, ctx.build<SelectOp>(keep, x, ctx.splat(type, 0)));
}

} // namespace

void registerShapeHandlers(HandlerRegistry &r) {
  r.add("Reshape", 5, importReshape);
  r.add("Transpose", 1, importTranspose);
  r.add("Slice", 1, importSlice);
  r.add("Concat", 4, importConcat);
  r.add("Split", 2, importSplit);
  r.add("Squeeze", 1, importSqueeze);
  r.add("Unsqueeze", 1, importUnsqueeze);
  r.add("Expand", 8, importExpand);
  r.add("Tile", 6, importTile);
  r.add("Flatten", 1, importFlatten);
  r.add("Gather", 1, importGather);
  r.add("Trilu", 14, importTrilu);
}

} // namespace trc::import
