//===- VisionOps.cpp - convolution, pooling and batch normalization --------===//
//
// The ops of convolutional image models (torchvision's ResNet, ViT's patch
// embedding) as compositions of core trc ops, so that autodiff needs no new
// VJP rule:
//   * Conv (any number of spatial dims, pads/auto_pad, strides, dilations,
//     groups) is im2col: one strided trc.slice of the zero-padded input per
//     kernel offset, concatenated into patches [N, C, K, P], then one
//     trc.dot_general per group with the weights [M/g, C/g * K];
//   * MaxPool is the element-wise trc.max of the same slices of the input
//     padded with the lowest float (ceil_mode pads the far edge further);
//   * GlobalAveragePool / GlobalMaxPool reduce the spatial dims;
//   * BatchNormalization normalizes with its input statistics, or in
//     training mode (opset 14+ training_mode=1) with the batch's (biased)
//     mean and variance over every dim but the channels, and then also
//     outputs the running statistics input * momentum + batch * (1 - momentum).
// Shapes must be static (trc compiles for the batch it runs).
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "Common.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace trc::import {
namespace {

/// Windows of a spatial op over input [N, C, spatial...]: the padded
/// input's slices, one per kernel offset.
struct Windows {
  SmallVector<int64_t> kernel, strides, dilations, padLow, padHigh, out;
};

/// Reads kernel_shape (or `kernel`), strides, dilations, pads / auto_pad
/// and computes the output's spatial dims (ceil_mode for pooling).
std::optional<Windows> windowsOf(ImportContext &ctx, ArrayRef<int64_t> spatial,
                                 ArrayRef<int64_t> kernel, bool ceilMode) {
  size_t r = spatial.size();
  for (int64_t d : spatial)
    if (ShapedType::isDynamic(d)) {
      (void)ctx.fail("needs static spatial dims, got ", shapeString(spatial));
      return std::nullopt;
    }
  Windows w;
  auto k = spatialInts(ctx, "kernel_shape", r, 0);
  auto s = spatialInts(ctx, "strides", r, 1);
  auto dl = spatialInts(ctx, "dilations", r, 1);
  auto pads = spatialInts(ctx, "pads", 2 * r, 0);
  if (!k || !s || !dl || !pads)
    return std::nullopt;
  w.kernel = ctx.intsAttr("kernel_shape") ? *k : SmallVector<int64_t>(kernel);
  if (w.kernel.size() != r) {
    (void)ctx.fail("needs kernel_shape with ", r, " values");
    return std::nullopt;
  }
  w.strides = *s;
  w.dilations = *dl;
  std::string autoPad = ctx.stringAttr("auto_pad", "NOTSET");
  for (size_t i = 0; i < r; ++i) {
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1) {
      (void)ctx.fail("kernel_shape, strides and dilations must be positive");
      return std::nullopt;
    }
    int64_t extent = w.dilations[i] * (w.kernel[i] - 1) + 1;
    int64_t lo = (*pads)[i], hi = (*pads)[i + r];
    if (autoPad == "VALID") {
      lo = hi = 0;
    } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t o = (spatial[i] + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(0, (o - 1) * w.strides[i] + extent - spatial[i]);
      lo = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      hi = total - lo;
    } else if (autoPad != "NOTSET") {
      (void)ctx.fail("unknown auto_pad '", autoPad, "'");
      return std::nullopt;
    }
    if (lo < 0 || hi < 0) {
      (void)ctx.fail("pads must be non-negative");
      return std::nullopt;
    }
    int64_t span = spatial[i] + lo + hi - extent;
    if (span < 0) {
      (void)ctx.fail("kernel extent ", extent, " exceeds the padded input ",
                     spatial[i] + lo + hi);
      return std::nullopt;
    }
    int64_t o = ceilMode ? (span + w.strides[i] - 1) / w.strides[i] + 1 : span / w.strides[i] + 1;
    // As PyTorch: the last window must start inside the input or its low pad.
    if (ceilMode && (o - 1) * w.strides[i] >= spatial[i] + lo)
      --o;
    // Pad the far edge further so that every window's slice is in bounds.
    hi += std::max<int64_t>(0, (o - 1) * w.strides[i] + extent - (spatial[i] + lo + hi));
    w.padLow.push_back(lo);
    w.padHigh.push_back(hi);
    w.out.push_back(o);
  }
  return w;
}

/// `x` [N, C, spatial...] padded with `value` and sliced at every kernel
/// offset: each slice is [N, C, out...].
SmallVector<Value> windowSlices(ImportContext &ctx, Value x, const Windows &w,
                                double value) {
  auto type = typeOf(x);
  size_t r = w.kernel.size();
  SmallVector<int64_t> low{0, 0}, high{0, 0}, padded(type.getShape());
  low.append(w.padLow);
  high.append(w.padHigh);
  for (size_t i = 0; i < r; ++i)
    padded[i + 2] += w.padLow[i] + w.padHigh[i];
  if (llvm::any_of(low, [](int64_t v) { return v; }) ||
      llvm::any_of(high, [](int64_t v) { return v; }))
    x = ctx.build<PadOp>(RankedTensorType::get(padded, type.getElementType()), x,
                         ctx.scalar(type.getElementType(), value), low, high);
  if (!x)
    return {};
  SmallVector<int64_t> outShape{type.getDimSize(0), type.getDimSize(1)};
  outShape.append(w.out);
  auto outType = RankedTensorType::get(outShape, type.getElementType());
  SmallVector<Value> slices;
  SmallVector<int64_t> offset(r, 0);
  int64_t count = product(w.kernel);
  for (int64_t n = 0; n < count; ++n) {
    // Row-major kernel offset n.
    for (int64_t i = static_cast<int64_t>(r) - 1, rest = n; i >= 0; --i) {
      offset[i] = rest % w.kernel[i];
      rest /= w.kernel[i];
    }
    SmallVector<int64_t> start{0, 0}, limit{outShape[0], outShape[1]}, strides{1, 1};
    for (size_t i = 0; i < r; ++i) {
      int64_t s = offset[i] * w.dilations[i];
      start.push_back(s);
      limit.push_back(s + (w.out[i] - 1) * w.strides[i] + 1);
      strides.push_back(w.strides[i]);
    }
    Value slice = ctx.build<SliceOp>(outType, x, start, limit, strides);
    if (!slice)
      return {};
    slices.push_back(slice);
  }
  return slices;
}

/// Input 0 as a tensor [N, C, spatial...] of rank >= `minRank`, of floats
/// (or also integers with `integers`).
Value imageInput(ImportContext &ctx, int64_t minRank = 3, bool integers = false) {
  Value x = ctx.input(0);
  if (!x)
    return {};
  auto type = typeOf(x);
  Type elem = type.getElementType();
  bool typeOk = isa<FloatType>(elem) || (integers && elem.isIntOrIndex() && !elem.isInteger(1));
  if (type.getRank() < minRank || !typeOk) {
    (void)ctx.fail("needs a ", integers ? "numeric" : "float", " input [N, C, spatial...], got ",
                   type);
    return {};
  }
  if (ShapedType::isDynamic(type.getDimSize(0)) || ShapedType::isDynamic(type.getDimSize(1))) {
    (void)ctx.fail("needs static dims, got ", shapeString(type.getShape()));
    return {};
  }
  return x;
}

LogicalResult importConv(ImportContext &ctx) {
  Value x = imageInput(ctx), weight = ctx.input(1);
  if (!x || !weight)
    return failure();
  auto type = typeOf(x), wtype = typeOf(weight);
  int64_t rank = type.getRank(), n = type.getDimSize(0), c = type.getDimSize(1);
  int64_t group = ctx.intAttr("group", 1);
  if (wtype.getRank() != rank || !wtype.hasStaticShape())
    return ctx.fail("weights ", shapeString(wtype.getShape()), " must be static [M, C/group, ",
                    "kernel...] for input ", shapeString(type.getShape()));
  int64_t m = wtype.getDimSize(0), cg = wtype.getDimSize(1);
  if (group < 1 || c % group || m % group || cg != c / group)
    return ctx.fail("group ", group, " does not fit input channels ", c, " and weights ",
                    shapeString(wtype.getShape()));
  auto w = windowsOf(ctx, type.getShape().drop_front(2), wtype.getShape().drop_front(2), false);
  if (!w)
    return failure();
  if (ArrayRef<int64_t>(w->kernel) != wtype.getShape().drop_front(2))
    return ctx.fail("kernel_shape ", shapeString(w->kernel), " differs from the weights' ",
                    shapeString(wtype.getShape()));
  Type elem = type.getElementType();
  int64_t k = product(w->kernel), p = product(w->out), mg = m / group;
  SmallVector<Value> slices = windowSlices(ctx, x, *w, 0.0);
  if (slices.empty())
    return failure();
  // patches [N, C, K, P]
  for (Value &s : slices)
    if (!(s = ctx.reshape(s, {n, c, 1, p})))
      return failure();
  Value patches = slices.size() == 1
                      ? slices[0]
                      : ctx.build<ConcatenateOp>(RankedTensorType::get({n, c, k, p}, elem),
                                                 slices, int64_t(2));
  if (!patches)
    return failure();
  SmallVector<Value> outs;
  for (int64_t g = 0; g < group; ++g) {
    Value pg = patches, wg = weight;
    if (group > 1) {
      pg = ctx.build<SliceOp>(RankedTensorType::get({n, cg, k, p}, elem), patches,
                              ArrayRef<int64_t>{0, g * cg, 0, 0},
                              ArrayRef<int64_t>{n, (g + 1) * cg, k, p},
                              ArrayRef<int64_t>{1, 1, 1, 1});
      SmallVector<int64_t> start(rank, 0), limit(wtype.getShape()), ones(rank, 1);
      start[0] = g * mg;
      limit[0] = (g + 1) * mg;
      SmallVector<int64_t> shape(wtype.getShape());
      shape[0] = mg;
      wg = ctx.build<SliceOp>(RankedTensorType::get(shape, elem), weight, start, limit, ones);
    }
    if (!pg || !wg)
      return failure();
    pg = ctx.reshape(pg, {n, cg * k, p});
    wg = ctx.reshape(wg, {mg, cg * k});
    if (!pg || !wg)
      return failure();
    // [N, P, M/g]: patches' rows against the weights' rows.
    Value y = ctx.build<DotGeneralOp>(RankedTensorType::get({n, p, mg}, elem), pg, wg,
                                      ArrayRef<int64_t>{}, ArrayRef<int64_t>{},
                                      ArrayRef<int64_t>{1}, ArrayRef<int64_t>{1});
    if (!y)
      return failure();
    outs.push_back(y);
  }
  Value y = outs.size() == 1 ? outs[0]
                             : ctx.build<ConcatenateOp>(RankedTensorType::get({n, p, m}, elem),
                                                        outs, int64_t(2));
  if (!y)
    return failure();
  y = ctx.build<TransposeOp>(RankedTensorType::get({n, m, p}, elem), y,
                             ArrayRef<int64_t>{0, 2, 1});
  SmallVector<int64_t> outShape{n, m};
  outShape.append(w->out);
  y = y ? ctx.reshape(y, outShape) : Value();
  if (y && ctx.hasInput(2)) {
    Value bias = ctx.input(2);
    if (!bias)
      return failure();
    if (typeOf(bias).getShape() != ArrayRef<int64_t>{m})
      return ctx.fail("bias ", shapeString(typeOf(bias).getShape()), " must be [", m, "]");
    SmallVector<int64_t> dims{1};
    bias = ctx.build<BroadcastInDimOp>(RankedTensorType::get(outShape, elem), bias, dims);
    y = bias ? ctx.build<AddOp>(y, bias) : Value();
  }
  return ctx.setOutput(0, y);
}

LogicalResult importMaxPool(ImportContext &ctx) {
  Value x = imageInput(ctx, 3, /*integers=*/true);
  if (!x)
    return failure();
  if (ctx.wantsOutput(1))
    return ctx.fail("MaxPool's Indices output is not supported");
  auto type = typeOf(x);
  auto w = windowsOf(ctx, type.getShape().drop_front(2), {}, ctx.intAttr("ceil_mode", 0));
  if (!w)
    return failure();
  // Pads with the type's lowest value: -inf, or the integer minimum.
  double lowest = -std::numeric_limits<double>::infinity();
  if (auto it = dyn_cast<IntegerType>(type.getElementType()))
    lowest = it.isUnsigned() ? 0.0 : -std::ldexp(1.0, it.getWidth() - 1);
  SmallVector<Value> slices = windowSlices(ctx, x, *w, lowest);
  if (slices.empty())
    return failure();
  Value y = slices[0];
  for (size_t i = 1; i < slices.size() && y; ++i)
    y = ctx.build<MaxOp>(y, slices[i]);
  return ctx.setOutput(0, y);
}

template <ReduceKind Kind, bool Mean>
LogicalResult importGlobalPool(ImportContext &ctx) {
  Value x = imageInput(ctx);
  if (!x)
    return failure();
  auto type = typeOf(x);
  SmallVector<int64_t> dims;
  int64_t count = 1;
  for (int64_t d = 2; d < type.getRank(); ++d) {
    dims.push_back(d);
    count *= type.getDimSize(d);
  }
  Value y = reduce(ctx, Kind, x, dims);
  if (y && Mean)
    y = ctx.build<DivOp>(y, splatLike(ctx, y, double(count)));
  y = y ? ctx.reshape(y, keptShape(type.getShape(), dims)) : Value();
  return ctx.setOutput(0, y);
}

LogicalResult importBatchNormalization(ImportContext &ctx) {
  Value x = imageInput(ctx, 2);
  if (!x)
    return failure();
  auto type = typeOf(x);
  int64_t c = type.getDimSize(1);
  SmallVector<Value> params;
  for (int i = 1; i <= 4; ++i) {
    Value v = ctx.input(i);
    if (!v)
      return failure();
    if (typeOf(v).getShape() != ArrayRef<int64_t>{c} ||
        typeOf(v).getElementType() != type.getElementType())
      return ctx.fail("input ", i, " ", typeOf(v), " must be [", c, "] of the input's type");
    params.push_back(v);
  }
  // Opset 14+ says training_mode; before it, more than one output meant
  // training (opsets 9-13: outputs mean, var, saved mean, saved var).
  bool training = ctx.opset() >= 14 ? ctx.intAttr("training_mode", 0) != 0
                                    : ctx.numOutputs() > 1;
  if (ctx.opset() < 14 && training && ctx.numOutputs() > 3 &&
      (ctx.wantsOutput(3) || ctx.wantsOutput(4)))
    return ctx.fail("BatchNormalization's saved mean and variance outputs are not supported");
  double eps = ctx.floatAttr("epsilon", 1e-5f);
  double momentum = ctx.floatAttr("momentum", 0.9f);
  SmallVector<int64_t> dims{0};
  for (int64_t d = 2; d < type.getRank(); ++d)
    dims.push_back(d);
  int64_t count = type.getNumElements() / c;
  auto perChannel = [&](Value v) -> Value {
    return v ? ctx.build<BroadcastInDimOp>(type, v, ArrayRef<int64_t>{1}) : Value();
  };
  Value mean = params[2], var = params[3];
  Value centered;
  if (training) {
    Value sum = reduce(ctx, ReduceKind::Sum, x, dims);
    mean = sum ? ctx.build<DivOp>(sum, splatLike(ctx, sum, double(count))) : Value();
    centered = mean ? ctx.build<SubOp>(x, perChannel(mean)) : Value();
    Value sq = centered ? ctx.build<MulOp>(centered, centered) : Value();
    Value sqSum = sq ? reduce(ctx, ReduceKind::Sum, sq, dims) : Value();
    var = sqSum ? ctx.build<DivOp>(sqSum, splatLike(ctx, sqSum, double(count))) : Value();
  } else {
    centered = ctx.build<SubOp>(x, perChannel(mean));
  }
  if (!centered || !var)
    return failure();
  Value shifted = ctx.build<AddOp>(var, splatLike(ctx, var, eps));
  Value inv = shifted ? ctx.build<RsqrtOp>(shifted) : Value();
  Value scale = inv ? ctx.build<MulOp>(inv, params[0]) : Value();
  Value y = scale ? ctx.build<MulOp>(centered, perChannel(scale)) : Value();
  y = y ? ctx.build<AddOp>(y, perChannel(params[1])) : Value();
  if (failed(ctx.setOutput(0, y)))
    return failure();
  if (!training)
    return success();
  auto running = [&](Value old, Value batch) -> Value {
    Value a = ctx.build<MulOp>(old, splatLike(ctx, old, momentum));
    Value b = ctx.build<MulOp>(batch, splatLike(ctx, batch, 1.0 - momentum));
    return a && b ? ctx.build<AddOp>(a, b) : Value();
  };
  if (ctx.wantsOutput(1) && failed(ctx.setOutput(1, running(params[2], mean))))
    return failure();
  if (ctx.wantsOutput(2) && failed(ctx.setOutput(2, running(params[3], var))))
    return failure();
  return success();
}

} // namespace

void registerVisionHandlers(HandlerRegistry &r) {
  r.add("Conv", 1, importConv);
  r.add("MaxPool", 1, importMaxPool);
  r.add("GlobalAveragePool", 1, importGlobalPool<ReduceKind::Sum, true>);
  r.add("GlobalMaxPool", 1, importGlobalPool<ReduceKind::Max, false>);
  r.add("BatchNormalization", 9, importBatchNormalization);
}

} // namespace trc::import
