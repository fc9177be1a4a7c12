//===- NormalizationOps.cpp - LayerNormalization, Softmax, Dropout -----------===//
//
// LayerNormalization -> trc.layer_norm (scale/bias broadcast to the
// normalized shape; its Mean and InvStdDev outputs computed beside it);
// Softmax/LogSoftmax -> trc.softmax/log_softmax, with the pre-13 "flatten to
// 2-D at axis" semantics; Dropout -> identity when inactive (inference, or
// ratio 0), else trc.dropout. BatchNormalization (inference, and training
// mode with the batch statistics and the updated running statistics as
// outputs; running statistics read from parameters are also those
// parameters' new values after each training step). An evaluation import
// (ImportOptions::evaluation) treats both as inference whatever their
// training_mode, as module.eval() does. InstanceNormalization,
// MeanVarianceNormalization, LRN and RMSNormalization (opset 23: x over the
// root mean square of its trailing axes from `axis`, times scale) are
// compositions of reductions and elementwise ops.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "Common.h"

using namespace mlir;

namespace trc::import {
namespace {

/// The mean of v over `dims` of a tensor shaped like `type`, those dims dropped
/// (null after an error).
Value meanOver(ImportContext &ctx, Value v, RankedTensorType type, ArrayRef<int64_t> dims) {
  double count = 1;
  for (int64_t d : dims)
    count *= double(type.getDimSize(d));
  Value sum = reduce(ctx, ReduceKind::Sum, v, dims);
  return sum ? ctx.build<DivOp>(sum, ctx.splat(typeOf(sum), count)) : Value();
}

/// Mean and (population) variance of x over `dims`, those dims dropped:
/// (mean, variance), or nulls after an error.
std::pair<Value, Value> moments(ImportContext &ctx, Value x, ArrayRef<int64_t> dims) {
  auto type = typeOf(x);
  Value m = meanOver(ctx, x, type, dims);
  Value wide = expandReduced(ctx, m, type.getShape(), dims);
  Value centered = wide ? ctx.build<SubOp>(x, wide) : Value();
  Value var = centered ? meanOver(ctx, ctx.build<MulOp>(centered, centered), type, dims) : Value();
  return {m, var};
}

/// LayerNormalization's and RMSNormalization's shared attributes: the
/// normalized axis of x (checked) and stash_type, whose only supported value
/// is float32. Nullopt after an error.
std::optional<int64_t> normalizedAxis(ImportContext &ctx, RankedTensorType type) {
  auto axis = ctx.axis(ctx.intAttr("axis", -1), type.getRank());
  if (!axis)
    return std::nullopt;
  if (ctx.intAttr("stash_type", 1) != 1) {
    (void)ctx.unsupported("stash_type other than float32 is not supported");
    return std::nullopt;
  }
  return axis;
}

LogicalResult importLayerNorm(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  std::optional<int64_t> axis = normalizedAxis(ctx, type);
  if (!axis)
    return failure();
  auto normalized = type.getShape().drop_front(*axis);
  Value scale = ctx.hasInput(1) ? ctx.broadcastTo(ctx.input(1), normalized) : Value();
  Value bias = ctx.hasInput(2) ? ctx.broadcastTo(ctx.input(2), normalized) : Value();
  if ((ctx.hasInput(1) && !scale) || (ctx.hasInput(2) && !bias))
    return failure();
  double eps = ctx.floatAttr("epsilon", 1e-5f);
  if (failed(ctx.setOutput(0, ctx.build<LayerNormOp>(type, x, scale, bias,
                                                     static_cast<uint64_t>(*axis),
                                                     llvm::APFloat(eps)))))
    return failure();
  if (!ctx.wantsOutput(1) && !ctx.wantsOutput(2))
    return success();
  // The statistics outputs (keepdims shape): recomputed beside the composite,
  // which keeps its own (its decomposition and VJP are unchanged).
  auto dims = llvm::to_vector(llvm::seq<int64_t>(*axis, type.getRank()));
  auto [mean, variance] = moments(ctx, x, dims);
  Value invStdDev = variance ? ctx.build<RsqrtOp>(ctx.build<AddOp>(
                                   variance, ctx.splat(typeOf(variance), eps)))
                             : Value();
  SmallVector<int64_t> kept = keptShape(type.getShape(), dims);
  if (failed(ctx.setOutput(1, ctx.reshape(mean, kept))))
    return failure();
  return ctx.setOutput(2, ctx.reshape(invStdDev, kept));
}

LogicalResult importRmsNorm(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  auto type = typeOf(x);
  std::optional<int64_t> axis = normalizedAxis(ctx, type);
  if (!axis)
    return failure();
  Value scale = ctx.broadcastTo(ctx.input(1), type.getShape());
  if (!scale)
    return failure();
  auto dims = llvm::to_vector(llvm::seq<int64_t>(*axis, type.getRank()));
  Value meanSquare = meanOver(ctx, ctx.build<MulOp>(x, x), type, dims);
  if (!meanSquare)
    return failure();
  Value inverse = ctx.build<RsqrtOp>(ctx.build<AddOp>(
      meanSquare, ctx.splat(typeOf(meanSquare), ctx.floatAttr("epsilon", 1e-5f))));
  Value wide = expandReduced(ctx, inverse, type.getShape(), dims);
  return ctx.setOutput(0, wide ? ctx.build<MulOp>(ctx.build<MulOp>(x, wide), scale) : Value());
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
  if (ctx.state().evaluation) {
    // module.eval(): the identity, whatever the ratio and training_mode
    // inputs hold (they need not be constants then).
  } else if (ctx.opset() < 12) {
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

/// A per-channel vector [C] broadcast along dim 1 of `shape`; errors name
/// `what`.
Value perChannel(ImportContext &ctx, Value v, ArrayRef<int64_t> shape, StringRef what) {
  if (!v)
    return {};
  auto type = typeOf(v);
  if (type.getRank() != 1 || type.getDimSize(0) != shape[1]) {
    (void)ctx.fail(what, " ", shapeString(type.getShape()), " must be [", shape[1], "]");
    return {};
  }
  return ctx.build<BroadcastInDimOp>(RankedTensorType::get(shape, type.getElementType()), v,
                                     ArrayRef<int64_t>{1});
}

/// x of rank >= 2 ([N, C, ...]) with a float type, or null after an error.
Value channelInput(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return {};
  auto type = typeOf(x);
  if (type.getRank() < 2 || !isa<FloatType>(type.getElementType())) {
    (void)ctx.fail("the input must be a float tensor [N, C, ...], got ", type);
    return {};
  }
  return x;
}

// y = (x - mean) / sqrt(var + eps) * scale + B per channel. In training mode
// mean and var are the batch's (over N and the spatial dims, population
// variance) and outputs 1 and 2 are the running statistics
// input * momentum + batch * (1 - momentum).
LogicalResult importBatchNorm(ImportContext &ctx) {
  Value x = channelInput(ctx);
  if (!x)
    return failure();
  auto type = typeOf(x);
  auto shape = type.getShape();
  if (ctx.opset() < 9 && ctx.intAttr("spatial", 1) != 1)
    return ctx.unsupported("spatial=0 (per-activation statistics) is not supported");
  bool trainingMode = ctx.opset() >= 14 ? ctx.intAttr("training_mode", 0) != 0
                                        : ctx.wantsOutput(1) || ctx.wantsOutput(2);
  bool training = trainingMode && !ctx.state().evaluation;
  if (ctx.wantsOutput(3) || ctx.wantsOutput(4))
    return ctx.unsupported("the saved_mean and saved_var outputs are not supported");
  if (!trainingMode && (ctx.wantsOutput(1) || ctx.wantsOutput(2)))
    return ctx.fail("running statistics outputs need training_mode=1");
  double eps = ctx.floatAttr("epsilon", 1e-5f);
  double momentum = ctx.floatAttr("momentum", 0.9f);
  Value scale = ctx.input(1), bias = ctx.input(2), inputMean = ctx.input(3),
        inputVar = ctx.input(4);
  if (!scale || !bias || !inputMean || !inputVar)
    return failure();
  Value mean = inputMean, var = inputVar;
  SmallVector<int64_t> dims{0};
  for (int64_t d = 2; d < type.getRank(); ++d)
    dims.push_back(d);
  if (training) {
    std::tie(mean, var) = moments(ctx, x, dims);
    if (!mean || !var)
      return failure();
  }
  Value wideMean = perChannel(ctx, mean, shape, "mean");
  Value wideVar = perChannel(ctx, var, shape, "var");
  Value wideScale = perChannel(ctx, scale, shape, "scale");
  Value wideBias = perChannel(ctx, bias, shape, "B");
  if (!wideMean || !wideVar || !wideScale || !wideBias)
    return failure();
  Value inv = ctx.build<RsqrtOp>(ctx.build<AddOp>(wideVar, ctx.splat(type, eps)));
  Value y = ctx.build<AddOp>(
      ctx.build<MulOp>(ctx.build<MulOp>(ctx.build<SubOp>(x, wideMean), inv), wideScale),
      wideBias);
  if (failed(ctx.setOutput(0, y)))
    return failure();
  if (trainingMode && !training) // evaluated: the running statistics stay as they are
    return failure(failed(ctx.setOutput(1, inputMean)) || failed(ctx.setOutput(2, inputVar)));
  if (!training)
    return success();
  auto running = [&](Value stored, Value batch) -> Value {
    if (typeOf(stored) != typeOf(batch)) {
      (void)ctx.fail("running statistics ", shapeString(typeOf(stored).getShape()),
                     " must be [", shape[1], "] of the input's type");
      return {};
    }
    return ctx.build<AddOp>(ctx.build<MulOp>(stored, ctx.splat(typeOf(stored), momentum)),
                            ctx.build<MulOp>(batch, ctx.splat(typeOf(batch), 1 - momentum)));
  };
  Value runningMean = running(inputMean, mean), runningVar = running(inputVar, var);
  if (!runningMean || !runningVar)
    return failure();
  if (failed(ctx.setOutput(1, runningMean)) || failed(ctx.setOutput(2, runningVar)))
    return failure();
  // Running statistics stored as parameters (a framework's buffers) take
  // their new values after each training step, as in the framework.
  ctx.updateParameter(inputMean, runningMean);
  ctx.updateParameter(inputVar, runningVar);
  return success();
}

// Per (n, c) over the spatial dims: (x - mean) / sqrt(var + eps) * scale + B.
LogicalResult importInstanceNorm(ImportContext &ctx) {
  Value x = channelInput(ctx);
  if (!x)
    return failure();
  auto type = typeOf(x);
  auto shape = type.getShape();
  double eps = ctx.floatAttr("epsilon", 1e-5f);
  SmallVector<int64_t> dims;
  for (int64_t d = 2; d < type.getRank(); ++d)
    dims.push_back(d);
  auto [mean, var] = moments(ctx, x, dims);
  Value wideScale = perChannel(ctx, ctx.input(1), shape, "scale");
  Value wideBias = perChannel(ctx, ctx.input(2), shape, "B");
  if (!mean || !var || !wideScale || !wideBias)
    return failure();
  Value inv = expandReduced(
      ctx, ctx.build<RsqrtOp>(ctx.build<AddOp>(var, ctx.splat(typeOf(var), eps))), shape, dims);
  Value centered = ctx.build<SubOp>(x, expandReduced(ctx, mean, shape, dims));
  return ctx.setOutput(0, ctx.build<AddOp>(
                              ctx.build<MulOp>(ctx.build<MulOp>(centered, inv), wideScale),
                              wideBias));
}

// (x - mean) / (sqrt(var) + 1e-9) over `axes` (default [0, 2, 3]), as ONNX's
// function body defines it.
LogicalResult importMeanVarianceNorm(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  auto type = typeOf(x);
  SmallVector<int64_t> given = ctx.intsAttr("axes").value_or(SmallVector<int64_t>{0, 2, 3});
  SmallVector<int64_t> dims;
  for (int64_t a : given) {
    auto axis = ctx.axis(a, type.getRank());
    if (!axis)
      return failure();
    if (!llvm::is_contained(dims, *axis))
      dims.push_back(*axis);
  }
  auto [mean, var] = moments(ctx, x, dims);
  if (!mean || !var)
    return failure();
  Value std = ctx.build<AddOp>(ctx.build<SqrtOp>(var), ctx.splat(typeOf(var), 1e-9));
  return ctx.setOutput(0, ctx.build<DivOp>(
                              ctx.build<SubOp>(x, expandReduced(ctx, mean, type.getShape(),
                                                                dims)),
                              expandReduced(ctx, std, type.getShape(), dims)));
}

// y = x / (bias + alpha / size * sum of x^2 over a window of `size`
// channels)^beta; the window is sum of shifted slices of the zero-padded
// squares.
LogicalResult importLrn(ImportContext &ctx) {
  Value x = channelInput(ctx);
  if (!x)
    return failure();
  auto type = typeOf(x);
  int64_t size = ctx.intAttr("size", 0);
  if (size <= 0)
    return ctx.fail("size must be positive, got ", size);
  double alpha = ctx.floatAttr("alpha", 1e-4f), beta = ctx.floatAttr("beta", 0.75f),
         bias = ctx.floatAttr("bias", 1.0f);
  int64_t rank = type.getRank(), channels = type.getDimSize(1);
  SmallVector<int64_t> low(rank, 0), high(rank, 0);
  low[1] = (size - 1) / 2;
  high[1] = size - 1 - low[1];
  SmallVector<int64_t> padded(type.getShape());
  padded[1] += size - 1;
  Value squares = ctx.build<MulOp>(x, x);
  Value wide = ctx.build<PadOp>(RankedTensorType::get(padded, type.getElementType()), squares,
                                ctx.scalar(type.getElementType(), 0), low, high);
  Value sum;
  for (int64_t i = 0; wide && i < size; ++i) {
    SmallVector<int64_t> lo(rank, 0), hi(type.getShape()), step(rank, 1);
    lo[1] = i;
    hi[1] = i + channels;
    Value part = ctx.build<SliceOp>(type, wide, lo, hi, step);
    sum = sum ? ctx.build<AddOp>(sum, part) : part;
  }
  if (!sum)
    return failure();
  Value base = ctx.build<AddOp>(ctx.build<MulOp>(sum, ctx.splat(type, alpha / double(size))),
                                ctx.splat(type, bias));
  return ctx.setOutput(0, ctx.build<DivOp>(x, ctx.build<PowOp>(base, ctx.splat(type, beta))));
}

} // namespace

void registerNormalizationHandlers(HandlerRegistry &r) {
  r.add("BatchNormalization", 7, importBatchNorm);
  r.add("InstanceNormalization", 6, importInstanceNorm);
  r.add("MeanVarianceNormalization", 9, importMeanVarianceNorm);
  r.add("LRN", 1, importLrn);
  r.add("LayerNormalization", 17, importLayerNorm);
  r.add("RMSNormalization", 23, importRmsNorm);
  r.add("Softmax", 1, importSoftmax<SoftmaxOp>);
  r.add("LogSoftmax", 1, importSoftmax<LogSoftmaxOp>);
  r.add("Dropout", 7, importDropout);
}

} // namespace trc::import
