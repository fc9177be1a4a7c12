//===- LossOps.cpp - SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss ------===//
//
// Both become trc.cross_entropy (NLL with `log_probs`: its input already
// holds log-probabilities). With class weights (input #2) the loss is
// composed instead: -w[label] * logp[label] picked along C (GatherElements'
// composition), ignored labels weigh 0, and `mean` divides by the sum of the
// weights of the labels used, as ONNX (and PyTorch) define it. The optional
// log_prob output of SoftmaxCrossEntropyLoss is a trc.log_softmax over C.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "Common.h"

using namespace mlir;

namespace trc::import {
namespace {

/// The weighted loss, reduced as `reduction` says.
Value weightedLoss(ImportContext &ctx, Value logp, Value labels, Value weights,
                   LossReduction reduction) {
  auto type = typeOf(logp);
  auto ltype = typeOf(labels);
  int64_t classes = type.getDimSize(1);
  if (typeOf(weights).getShape() != ArrayRef<int64_t>{classes} ||
      typeOf(weights).getElementType() != type.getElementType()) {
    (void)ctx.fail("weights ", shapeString(typeOf(weights).getShape()), " must be [",
                   classes, "] of the scores' element type");
    return {};
  }
  SmallVector<int64_t> expected{type.getDimSize(0)};
  llvm::append_range(expected, type.getShape().drop_front(2));
  if (ltype.getShape() != ArrayRef<int64_t>(expected)) {
    (void)ctx.fail("labels ", shapeString(ltype.getShape()), " must be ",
                   shapeString(expected));
    return {};
  }
  Value used = ctx.splat(RankedTensorType::get(expected, ctx.builder().getI1Type()), 1);
  if (const auto *ignore = ctx.attr("ignore_index"))
    used = compareWith(ctx, CompareDirection::NE, labels, double(ignore->i()));
  // Ignored labels may be out of range: read class 0 there (weighted 0).
  Value safe = select(ctx, used, labels, ctx.splat(ltype, 0));
  Value index = wrapIndices(ctx, safe, classes);
  SmallVector<int64_t> column(expected);
  column.insert(column.begin() + 1, 1);
  Value picked = ctx.reshape(gatherAlong(ctx, logp, ctx.reshape(index, column), 1), expected);
  Value w = index ? ctx.build<GatherOp>(RankedTensorType::get(expected, type.getElementType()),
                                        weights, index, 0)
                  : Value();
  w = select(ctx, used, w, ctx.splat(typeOf(picked), 0));
  if (!w || !picked)
    return {};
  Value loss = ctx.build<NegOp>(ctx.build<MulOp>(picked, w));
  if (reduction == LossReduction::None)
    return loss;
  auto all = llvm::to_vector(llvm::seq<int64_t>(0, static_cast<int64_t>(expected.size())));
  Value total = reduce(ctx, ReduceKind::Sum, loss, all);
  if (reduction == LossReduction::Sum)
    return total;
  return ctx.build<DivOp>(total, reduce(ctx, ReduceKind::Sum, w, all));
}

template <bool logProbs> LogicalResult importLoss(ImportContext &ctx) {
  Value scores = ctx.input(0), labels = ctx.input(1);
  if (!scores || !labels)
    return failure();
  auto type = cast<RankedTensorType>(scores.getType());
  std::string reductionName = ctx.stringAttr("reduction", "mean");
  LossReduction reduction;
  if (reductionName == "mean")
    reduction = LossReduction::Mean;
  else if (reductionName == "sum")
    reduction = LossReduction::Sum;
  else if (reductionName == "none")
    reduction = LossReduction::None;
  else
    return ctx.fail("reduction '", reductionName, "' is not mean, sum or none");
  if (type.getRank() < 2)
    return ctx.fail("scores must have rank >= 2 ([N, C, d...]), got ",
                    shapeString(type.getShape()));

  SmallVector<int64_t> shape;
  if (reduction == LossReduction::None) {
    shape.push_back(type.getDimSize(0));
    llvm::append_range(shape, type.getShape().drop_front(2));
  }
  if (ctx.hasInput(2)) {
    Value weights = ctx.input(2);
    if (!weights)
      return failure();
    Value logp = logProbs ? scores : ctx.build<LogSoftmaxOp>(type, scores, 1);
    if (!logp || failed(ctx.setOutput(0, weightedLoss(ctx, logp, labels, weights,
                                                      reduction))))
      return failure();
    return !logProbs && ctx.wantsOutput(1) ? ctx.setOutput(1, logp) : success();
  }
  const auto *ignore = ctx.attr("ignore_index");
  auto &b = ctx.builder();
  Value loss = ctx.build<CrossEntropyOp>(
      RankedTensorType::get(shape, type.getElementType()), scores, labels,
      LossReductionAttr::get(ctx.context(), reduction),
      ignore ? b.getI64IntegerAttr(ignore->i()) : IntegerAttr(),
      logProbs ? b.getUnitAttr() : UnitAttr());
  if (failed(ctx.setOutput(0, loss)))
    return failure();
  if (!logProbs && ctx.wantsOutput(1))
    return ctx.setOutput(1, ctx.build<LogSoftmaxOp>(type, scores, 1));
  return success();
}

} // namespace

void registerLossHandlers(HandlerRegistry &r) {
  r.add("SoftmaxCrossEntropyLoss", 12, importLoss<false>);
  r.add("NegativeLogLikelihoodLoss", 12, importLoss<true>);
}

} // namespace trc::import
