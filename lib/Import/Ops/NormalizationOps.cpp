//===- NormalizationOps.cpp - LayerNormalization, Softmax, Dropout -----------===//
//
// LayerNormalization -> trc.layer_norm (scale/bias broadcast to the
// normalized shape); Softmax/LogSoftmax -> trc.softmax/log_softmax, with the
// pre-13 "flatten to 2-D at axis" semantics; Dropout -> identity when
// inactive (inference, or ratio 0), else trc.dropout.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"

using namespace mlir;

namespace trc::import {
namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

LogicalResult importLayerNorm(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  auto axis = ctx.axis(ctx.intAttr("axis", -1), type.getRank());
  if (!axis)
    return failure();
  if (ctx.wantsOutput(1) || ctx.wantsOutput(2))
    return ctx.fail("the Mean and InvStdDev outputs are not supported");
  if (ctx.intAttr("stash_type", 1) != 1)
    return ctx.fail("stash_type other than float32 is not supported");
  auto normalized = type.getShape().drop_front(*axis);
  Value scale = ctx.hasInput(1) ? ctx.broadcastTo(ctx.input(1), normalized) : Value();
  Value bias = ctx.hasInput(2) ? ctx.broadcastTo(ctx.input(2), normalized) : Value();
  if ((ctx.hasInput(1) && !scale) || (ctx.hasInput(2) && !bias))
    return failure();
  double eps = ctx.floatAttr("epsilon", 1e-5f);
  return ctx.setOutput(0, ctx.build<LayerNormOp>(type, x, scale, bias,
                                                 static_cast<uint64_t>(*axis),
                                                 llvm::APFloat(eps)));
}

template <typename OpT> LogicalResult importSoftmax(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  if (type.getRank() == 0)
    return ctx.fail("softmax of a scalar");
  int64_t defaultAxis = ctx.opset() < 13 ? 1 : -1;
  auto axis = ctx.axis(ctx.intAttr("axis", defaultAxis), type.getRank());
  if (!axis)
    return failure();
  if (ctx.opset() >= 13)
    return ctx.setOutput(0, ctx.build<OpT>(type, x, *axis));
  // Before opset 13 the input is viewed as 2-D [prod(:axis), prod(axis:)].
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < type.getRank(); ++i)
    (i < *axis ? rows : cols) *= type.getDimSize(i);
  Value flat = ctx.reshape(x, {rows, cols});
  if (!flat)
    return failure();
  Value y = ctx.build<OpT>(typeOf(flat), flat, 1);
  return ctx.setOutput(0, ctx.reshape(y, type.getShape()));
}

LogicalResult importDropout(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  double ratio = 0.5;
  bool training = false;
  if (ctx.opset() < 12) {
    ratio = ctx.floatAttr("ratio", 0.5f);
    training = false; // opsets 7-11: Dropout is inference-only in exports
  } else {
    if (ctx.hasInput(1)) {
      auto r = ctx.constantFloat(1, "ratio");
      if (!r)
        return failure();
      ratio = *r;
    }
    if (ctx.hasInput(2)) {
      auto t = ctx.constantInts(2, "training_mode");
      if (!t || t->size() != 1)
        return failure();
      training = (*t)[0] != 0;
    }
  }
  // The mask: all true when dropout is inactive. An active dropout's mask is
  // made later (trc-lower-dropout) and is not bound here: PyTorch's training
  // exports name it but never read it; a node that reads it is reported as
  // reading an undefined value.
  if (ctx.wantsOutput(1) && !(training && ratio > 0)) {
    auto maskType = RankedTensorType::get(typeOf(x).getShape(), ctx.builder().getI1Type());
    if (failed(ctx.setOutput(1, ctx.splat(maskType, 1))))
      return failure();
  }
  if (!training || ratio == 0)
    return ctx.setOutput(0, x);
  return ctx.setOutput(0, ctx.build<DropoutOp>(
                              typeOf(x), x, llvm::APFloat(ratio),
                              static_cast<uint64_t>(ctx.intAttr("seed", 0))));
}

} // namespace

void registerNormalizationHandlers(HandlerRegistry &r) {
  r.add("LayerNormalization", 17, importLayerNorm);
  r.add("Softmax", 1, importSoftmax<SoftmaxOp>);
  r.add("LogSoftmax", 1, importSoftmax<LogSoftmaxOp>);
  r.add("Dropout", 7, importDropout);
}

} // namespace trc::import
