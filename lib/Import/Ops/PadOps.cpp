//===- PadOps.cpp - ONNX Pad, every mode and opset --------------------------===//
//
// Pad (opsets 1-23): pads as an attribute (1: "paddings", 2: "pads") or a
// constant input (11 on), optional axes (18 on), modes constant, reflect,
// edge and wrap (19 on). Negative pads crop first (a trc.slice); constant
// mode is one trc.pad with the pad value (a constant or a scalar input);
// the other modes gather each padded axis at constant source positions
// (clamped, mirrored or wrapped), so their gradients flow through
// trc.gather's rule. Hugging Face's causal-LM loss pads its labels this way
// before shifting them.
//
//===----------------------------------------------------------------------===//
#include "Common.h"

#include "../HandlerRegistry.h"

using namespace mlir;

namespace trc::import {
namespace {

// The source position of padded position `i` (of dim + low + high) along an
// axis of size `dim` in `mode`.
int64_t sourceIndex(llvm::StringRef mode, int64_t i, int64_t low, int64_t dim) {
  int64_t j = i - low;
  if (mode == "edge")
    return std::clamp<int64_t>(j, 0, dim - 1);
  if (mode == "wrap")
    return ((j % dim) + dim) % dim;
  // reflect: mirror about the edges without repeating them.
  if (dim == 1)
    return 0;
  int64_t period = 2 * (dim - 1);
  j = ((j % period) + period) % period;
  return j < dim ? j : period - j;
}

LogicalResult importPad(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  const int64_t rank = type.getRank();
  std::string mode = ctx.stringAttr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      !(mode == "wrap" && ctx.opset() >= 19))
    return ctx.fail("mode '", mode, "' is not constant, reflect, edge",
                    ctx.opset() >= 19 ? " or wrap" : " (wrap needs opset 19)");

  std::optional<SmallVector<int64_t>> pads;
  if (ctx.opset() < 11)
    pads = ctx.intsAttr(ctx.opset() < 2 ? "paddings" : "pads");
  else
    pads = ctx.constantInts(1, "pads");
  if (!pads)
    return ctx.opset() < 11 ? ctx.fail("missing pads attribute") : failure();
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  if (ctx.opset() >= 18 && ctx.hasInput(3)) {
    auto given = ctx.constantInts(3, "axes");
    if (!given)
      return failure();
    axes.clear();
    for (int64_t a : *given) {
      auto axis = ctx.axis(a, rank);
      if (!axis)
        return failure();
      if (llvm::is_contained(axes, *axis))
        return ctx.fail("axis ", *axis, " is listed twice");
      axes.push_back(*axis);
    }
  }
  const size_t n = axes.size();
  if (pads->size() != 2 * n)
    return ctx.fail("pads has ", pads->size(), " values; ", 2 * n, " expected (begin and end of ",
                    n, " axes)");
  SmallVector<int64_t> low(rank, 0), high(rank, 0);
  for (size_t i = 0; i < n; ++i) {
    low[axes[i]] = (*pads)[i];
    high[axes[i]] = (*pads)[i + n];
  }

  // Negative pads remove elements: slice them off first.
  SmallVector<int64_t> start(rank, 0), limit(type.getShape()), stride(rank, 1);
  bool crop = false;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = type.getDimSize(d);
    if (low[d] < 0 || high[d] < 0) {
      crop = true;
      start[d] = std::min(dim, std::max<int64_t>(0, -low[d]));
      limit[d] = std::max(start[d], dim - std::max<int64_t>(0, -high[d]));
    }
    low[d] = std::max<int64_t>(0, low[d]);
    high[d] = std::max<int64_t>(0, high[d]);
  }
  if (crop) {
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d)
      shape.push_back(limit[d] - start[d]);
    x = ctx.build<SliceOp>(RankedTensorType::get(shape, type.getElementType()), x, start, limit,
                           stride);
    if (!x)
      return failure();
    type = typeOf(x);
  }
  if (llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
      llvm::all_of(high, [](int64_t v) { return v == 0; }))
    return ctx.setOutput(0, x);

  if (mode == "constant") {
    Value value;
    if (ctx.opset() < 11) {
      value = ctx.scalar(type.getElementType(), ctx.floatAttr("value", 0));
    } else if (ctx.hasInput(2)) {
      value = ctx.input(2);
      if (!value)
        return failure();
      if (typeOf(value).getNumElements() != 1 ||
          typeOf(value).getElementType() != type.getElementType())
        return ctx.fail("constant_value must be one element of the input's type");
      value = ctx.reshape(value, {});
    } else {
      value = ctx.scalar(type.getElementType(), 0);
    }
    SmallVector<int64_t> shape(type.getShape());
    for (int64_t d = 0; d < rank; ++d)
      shape[d] += low[d] + high[d];
    return ctx.setOutput(0, ctx.build<PadOp>(RankedTensorType::get(shape, type.getElementType()),
                                             x, value, low, high));
  }

  for (int64_t d = 0; d < rank; ++d) {
    if (!low[d] && !high[d])
      continue;
    int64_t dim = typeOf(x).getDimSize(d);
    if (dim == 0)
      return ctx.fail("cannot pad axis ", d, " of size 0 in mode '", mode, "'");
    if (mode == "reflect" && (low[d] >= dim || high[d] >= dim) && dim > 1)
      return ctx.fail("reflect pads ", low[d], " and ", high[d], " on axis ", d,
                      " must be smaller than its size ", dim);
    SmallVector<int64_t> positions;
    for (int64_t i = 0; i < dim + low[d] + high[d]; ++i)
      positions.push_back(sourceIndex(mode, i, low[d], dim));
    SmallVector<int64_t> shape(typeOf(x).getShape());
    shape[d] = static_cast<int64_t>(positions.size());
    x = ctx.build<GatherOp>(RankedTensorType::get(shape, type.getElementType()), x,
                            ctx.int64s(positions), d);
    if (!x)
      return failure();
  }
  return ctx.setOutput(0, x);
}

} // namespace

void registerPadHandlers(HandlerRegistry &r) { r.add("Pad", 1, importPad); }

} // namespace trc::import
