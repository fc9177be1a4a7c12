//===- ReductionOps.cpp - ONNX Reduce* -> trc.reduce ----------------------===//
//
// ReduceSum/Mean/Max/Min/Prod, and the composed ones: ReduceL1 (sum |x|),
// ReduceL2 (sqrt of the sum of squares), ReduceSumSquare, ReduceLogSum
// (log of the sum) and ReduceLogSumExp (max + log(sum(exp(x - max))), so
// that large inputs do not overflow). Axes come from an attribute or
// (ReduceSum from opset 13, the others from 18) from a constant input.
// keepdims becomes a trc.reshape after the reduction; ReduceMean is a sum
// divided by the count.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"

#include <cmath>

using namespace mlir;

namespace trc::import {
namespace {

/// What surrounds the trc.reduce of an ONNX reduction.
enum class Composed { None, Mean, L1, L2, SumSquare, LogSum, LogSumExp };

template <ReduceKind kind, Composed composed, int64_t axesInputSince>
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
  bool isFloat = isa<FloatType>(type.getElementType());
  if ((composed == Composed::L2 || composed == Composed::LogSum ||
       composed == Composed::LogSumExp) &&
      !isFloat)
    return ctx.fail("the input must be a float tensor, got ", type.getElementType());
  if (composed == Composed::L1)
    x = ctx.build<AbsOp>(x);
  else if (composed == Composed::L2 || composed == Composed::SumSquare)
    x = ctx.build<MulOp>(x, x);
  // log-sum-exp: shift by the maximum (0 where it is infinite, so that an
  // all -inf row gives -inf and a +inf element gives +inf, not NaN).
  Value shift;
  if (x && composed == Composed::LogSumExp && type.getNumElements() > 0) {
    Value max = ctx.build<ReduceOp>(resultType, ReduceKind::Max, x, dims);
    Value finite = max ? ctx.build<CompareOp>(
                             RankedTensorType::get(kept, ctx.builder().getI1Type()),
                             CompareDirection::LT, ctx.build<AbsOp>(max),
                             ctx.splat(resultType, INFINITY))
                       : Value();
    shift = finite ? ctx.build<SelectOp>(finite, max, ctx.splat(resultType, 0)) : Value();
    SmallVector<int64_t> keptAxes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (!reduced[i])
        keptAxes.push_back(i);
    Value wide = shift ? ctx.build<BroadcastInDimOp>(type, shift, keptAxes) : Value();
    x = wide ? ctx.build<ExpOp>(ctx.build<SubOp>(x, wide)) : Value();
  }
  if (!x)
    return failure();
  Value y = ctx.build<ReduceOp>(resultType, kind, x, dims);
  if (y && composed == Composed::Mean)
    y = ctx.build<DivOp>(y, ctx.splat(resultType, static_cast<double>(count)));
  if (y && composed == Composed::L2)
    y = ctx.build<SqrtOp>(y);
  if (y && (composed == Composed::LogSum || composed == Composed::LogSumExp))
    y = ctx.build<LogOp>(y);
  if (y && shift)
    y = ctx.build<AddOp>(y, shift);
  if (y && ctx.intAttr("keepdims", 1))
    y = ctx.reshape(y, keptDims);
  return ctx.setOutput(0, y);
}

} // namespace

void registerReductionHandlers(HandlerRegistry &r) {
  r.add("ReduceSum", 1, importReduce<ReduceKind::Sum, Composed::None, 13>);
  r.add("ReduceMean", 1, importReduce<ReduceKind::Sum, Composed::Mean, 18>);
  r.add("ReduceMax", 1, importReduce<ReduceKind::Max, Composed::None, 18>);
  r.add("ReduceMin", 1, importReduce<ReduceKind::Min, Composed::None, 18>);
  r.add("ReduceProd", 1, importReduce<ReduceKind::Prod, Composed::None, 18>);
  r.add("ReduceL1", 1, importReduce<ReduceKind::Sum, Composed::L1, 18>);
  r.add("ReduceL2", 1, importReduce<ReduceKind::Sum, Composed::L2, 18>);
  r.add("ReduceSumSquare", 1, importReduce<ReduceKind::Sum, Composed::SumSquare, 18>);
  r.add("ReduceLogSum", 1, importReduce<ReduceKind::Sum, Composed::LogSum, 18>);
  r.add("ReduceLogSumExp", 1, importReduce<ReduceKind::Sum, Composed::LogSumExp, 18>);
}

} // namespace trc::import
