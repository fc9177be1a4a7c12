//===- ReductionOps.cpp - ReduceSum/Mean/Max/Min/Prod -> trc.reduce ----------===//
//
// Axes come from an attribute or (ReduceSum from opset 13, the others from
// 18) from a constant input. keepdims becomes a trc.reshape after the
// reduction; ReduceMean is a sum times 1/count.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"

using namespace mlir;

namespace trc::import {
namespace {

template <ReduceKind kind, bool mean, int64_t axesInputSince>
LogicalResult importReduce(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  std::optional<SmallVector<int64_t>> axes;
  if (ctx.opset() < axesInputSince) {
    axes = ctx.intsAttr("axes");
  } else if (ctx.hasInput(1)) {
    if (!(axes = ctx.constantInts(1, "axes")))
      return failure();
  }
  if (axes && axes->empty())
    axes.reset();
  if (!axes && ctx.opset() >= axesInputSince && ctx.intAttr("noop_with_empty_axes", 0))
    return ctx.setOutput(0, x);

  SmallVector<bool> reduced(type.getRank(), !axes.has_value());
  if (axes)
    for (int64_t a : *axes) {
      auto axis = ctx.axis(a, type.getRank());
      if (!axis)
        return failure();
      reduced[*axis] = true;
    }
  SmallVector<int64_t> dims, kept, keptDims;
  int64_t count = 1;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (reduced[i]) {
      dims.push_back(i);
      count *= type.getDimSize(i);
      keptDims.push_back(1);
    } else {
      kept.push_back(type.getDimSize(i));
      keptDims.push_back(type.getDimSize(i));
    }
  }
  auto resultType = RankedTensorType::get(kept, type.getElementType());
  Value y = ctx.build<ReduceOp>(resultType, kind, x, dims);
  if (y && mean)
    y = ctx.build<DivOp>(y, ctx.splat(resultType, static_cast<double>(count)));
  if (y && ctx.intAttr("keepdims", 1))
    y = ctx.reshape(y, keptDims);
  return ctx.setOutput(0, y);
}

} // namespace

void registerReductionHandlers(HandlerRegistry &r) {
  r.add("ReduceSum", 1, importReduce<ReduceKind::Sum, false, 13>);
  r.add("ReduceMean", 1, importReduce<ReduceKind::Sum, true, 18>);
  r.add("ReduceMax", 1, importReduce<ReduceKind::Max, false, 18>);
  r.add("ReduceMin", 1, importReduce<ReduceKind::Min, false, 18>);
  r.add("ReduceProd", 1, importReduce<ReduceKind::Prod, false, 18>);
}

} // namespace trc::import
