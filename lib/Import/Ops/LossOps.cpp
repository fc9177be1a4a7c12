//===- LossOps.cpp - SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss ------===//
//
// Both become trc.cross_entropy (NLL with `log_probs`: its input already
// holds log-probabilities). Class weights are not supported. The optional
// log_prob output of SoftmaxCrossEntropyLoss is a trc.log_softmax over C.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"

using namespace mlir;

namespace trc::import {
namespace {

template <bool logProbs> LogicalResult importLoss(ImportContext &ctx) {
  Value scores = ctx.input(0), labels = ctx.input(1);
  if (!scores || !labels)
    return failure();
  if (ctx.hasInput(2))
    return ctx.fail("class weights (input #2) are not supported");
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
