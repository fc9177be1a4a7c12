//===- PoolingOps.cpp - ONNX pooling -> trc ---------------------------------===//
//
// MaxPool (with its Indices output), AveragePool, LpPool and the global
// poolings. A window op is the padded input read by one strided slice per
// kernel offset, combined elementwise (max, or a sum), so it differentiates
// through the slice/pad/max rules; no core op is needed. Output sizes and
// pads follow ONNX's reference (explicit pads, auto_pad, ceil_mode with
// PyTorch's rule that the last window starts inside the input or its left
// pad). AveragePool divides by a constant count of the window positions
// that are inside the input (or, with count_include_pad, inside the input
// and its explicit pads); MaxPool's Indices are constants per kernel offset
// plus the (n, c) offset, selected along with the running maximum.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "Common.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace trc::import {
namespace {

/// The resolved windows of a pooling op over `n` spatial dims.
struct Windows {
  SmallVector<int64_t> in, kernel, strides, dilations, padBegin, padEnd, out;
  /// Length of each padded spatial dim the slices read: (out-1)*s + span.
  SmallVector<int64_t> needed;
  int64_t span(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
  /// Input position of output o at kernel offset j along dim i.
  int64_t position(size_t i, int64_t o, int64_t j) const {
    return o * strides[i] + j * dilations[i] - padBegin[i];
  }
};

std::optional<Windows> resolveWindows(ImportContext &ctx, RankedTensorType xt) {
  if (xt.getRank() < 3) {
    (void)ctx.fail("the input must be [N, C, spatial...], got ", shapeString(xt.getShape()));
    return std::nullopt;
  }
  size_t n = static_cast<size_t>(xt.getRank() - 2);
  Windows w;
  w.in.assign(xt.getShape().begin() + 2, xt.getShape().end());
  auto kernel = ctx.intsAttr("kernel_shape");
  if (!kernel || kernel->size() != n) {
    (void)ctx.fail("kernel_shape must give ", n, " sizes");
    return std::nullopt;
  }
  w.kernel = *kernel;
  auto strides = spatialInts(ctx, "strides", n, 1);
  auto dilations = spatialInts(ctx, "dilations", n, 1);
  auto pads = spatialInts(ctx, "pads", 2 * n, 0);
  if (!strides || !dilations || !pads)
    return std::nullopt;
  w.strides = *strides;
  w.dilations = *dilations;
  w.padBegin.assign(pads->begin(), pads->begin() + n);
  w.padEnd.assign(pads->begin() + n, pads->end());
  for (size_t i = 0; i < n; ++i)
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1 || w.padBegin[i] < 0 ||
        w.padEnd[i] < 0) {
      (void)ctx.fail("kernel sizes, strides and dilations must be positive and pads "
                     "non-negative");
      return std::nullopt;
    }
  std::string autoPad = ctx.stringAttr("auto_pad", "NOTSET");
  bool ceil = ctx.intAttr("ceil_mode", 0) != 0;
  for (size_t i = 0; i < n; ++i) {
    int64_t in = w.in[i], s = w.strides[i], span = w.span(i), o;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      o = (in - 1) / s + 1;
      int64_t total = std::max<int64_t>(0, (o - 1) * s + span - in);
      w.padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.padEnd[i] = total - w.padBegin[i];
    } else if (autoPad == "VALID") {
      w.padBegin[i] = w.padEnd[i] = 0;
      o = in >= span ? (in - span) / s + 1 : 0;
    } else if (autoPad == "NOTSET") {
      int64_t room = in + w.padBegin[i] + w.padEnd[i] - span;
      if (room < 0) {
        (void)ctx.fail("the window (", span, ") is larger than the padded input (",
                       room + span, ") on spatial axis ", i);
        return std::nullopt;
      }
      o = (ceil ? (room + s - 1) / s : room / s) + 1;
      if (ceil && (o - 1) * s >= in + w.padBegin[i])
        --o;
    } else {
      (void)ctx.fail("auto_pad '", autoPad, "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
      return std::nullopt;
    }
    if (o < 1) {
      (void)ctx.fail("the window (", span, ") does not fit the input (", in,
                     ") on spatial axis ", i);
      return std::nullopt;
    }
    w.out.push_back(o);
    w.needed.push_back((o - 1) * s + span);
  }
  return w;
}

/// x padded with `value` so that every window's slice is in bounds.
Value padForWindows(ImportContext &ctx, Value x, const Windows &w, double value) {
  SmallVector<int64_t> high;
  for (size_t i = 0; i < w.in.size(); ++i)
    high.push_back(std::max<int64_t>(0, w.needed[i] - w.in[i] - w.padBegin[i]));
  return padSpatial(ctx, x, w.padBegin, high, value);
}

/// The window elements at kernel `offset`: [N, C, out...].
Value windowSlice(ImportContext &ctx, Value padded, const Windows &w,
                  ArrayRef<int64_t> offset) {
  auto type = typeOf(padded);
  SmallVector<int64_t> lo{0, 0}, hi{type.getDimSize(0), type.getDimSize(1)}, step{1, 1},
      shape{type.getDimSize(0), type.getDimSize(1)};
  for (size_t i = 0; i < w.in.size(); ++i) {
    lo.push_back(offset[i] * w.dilations[i]);
    hi.push_back(lo.back() + (w.out[i] - 1) * w.strides[i] + 1);
    step.push_back(w.strides[i]);
    shape.push_back(w.out[i]);
  }
  return ctx.build<SliceOp>(RankedTensorType::get(shape, type.getElementType()), padded, lo,
                            hi, step);
}

/// A constant [out...] tensor broadcast to [N, C, out...].
Value spatialConstant(ImportContext &ctx, const Windows &w, ArrayRef<int64_t> batchChannels,
                      Type elem, ArrayRef<double> values) {
  auto type = RankedTensorType::get(w.out, elem);
  SmallVector<Attribute> attrs;
  for (double v : values)
    attrs.push_back(isa<FloatType>(elem) ? Attribute(ctx.builder().getFloatAttr(elem, v))
                                         : Attribute(ctx.builder().getIntegerAttr(
                                               elem, static_cast<int64_t>(v))));
  Value c = ctx.builder().create<ConstantOp>(ctx.loc(), DenseElementsAttr::get(type, attrs));
  SmallVector<int64_t> shape(batchChannels), dims;
  llvm::append_range(shape, w.out);
  for (size_t i = 0; i < w.out.size(); ++i)
    dims.push_back(static_cast<int64_t>(i) + 2);
  return ctx.build<BroadcastInDimOp>(RankedTensorType::get(shape, elem), c, dims);
}

/// f(o, j) for every output position o (row-major over `out`) at offset j,
/// as the product over dims of per-dim factors `perDim(i, o_i)`.
SmallVector<double> overOutputs(const Windows &w,
                                function_ref<double(size_t, int64_t)> perDim,
                                bool multiply) {
  SmallVector<double> values{multiply ? 1.0 : 0.0};
  for (size_t i = 0; i < w.out.size(); ++i) {
    SmallVector<double> next;
    for (double prefix : values)
      for (int64_t o = 0; o < w.out[i]; ++o)
        next.push_back(multiply ? prefix * perDim(i, o) : prefix + perDim(i, o));
    values = std::move(next);
  }
  return values;
}

double lowest(Type elem) {
  if (isa<FloatType>(elem))
    return -INFINITY;
  unsigned bits = elem.getIntOrFloatBitWidth();
  return bits >= 64 ? double(std::numeric_limits<int64_t>::min()) : -std::ldexp(1.0, bits - 1);
}

LogicalResult importMaxPool(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  auto w = resolveWindows(ctx, type);
  if (!w)
    return failure();
  if (type.getElementType().isInteger(1))
    return ctx.fail("MaxPool of booleans is not defined");
  Value padded = padForWindows(ctx, x, *w, lowest(type.getElementType()));
  if (!padded)
    return failure();
  bool wantIndices = ctx.wantsOutput(1);
  int64_t storageOrder = ctx.intAttr("storage_order", 0);
  SmallVector<int64_t> batchChannels{type.getDimSize(0), type.getDimSize(1)};
  // Spatial strides of the input for the Indices output (column-major with
  // storage_order = 1), and the (n, c) offset of each output element.
  SmallVector<int64_t> spatialStrides(w->in.size(), 1);
  if (storageOrder == 0)
    spatialStrides = stridesOf(w->in);
  else
    for (size_t i = 1; i < w->in.size(); ++i)
      spatialStrides[i] = spatialStrides[i - 1] * w->in[i - 1];
  Value base;
  auto i64 = ctx.builder().getI64Type();
  if (wantIndices) {
    SmallVector<int64_t> shape(batchChannels);
    llvm::append_range(shape, w->out);
    Value nIndex = iota(ctx, shape, 0), cIndex = iota(ctx, shape, 1);
    Value planes = nIndex && cIndex
                       ? ctx.build<AddOp>(ctx.build<MulOp>(nIndex, splatLike(ctx, nIndex,
                                                               double(batchChannels[1]))),
                                          cIndex)
                       : Value();
    base = planes ? ctx.build<MulOp>(planes, splatLike(ctx, planes, double(product(w->in))))
                  : Value();
    if (!base)
      return failure();
  }
  Value best, bestIndex;
  for (const auto &offset : kernelOffsets(w->kernel)) {
    Value v = windowSlice(ctx, padded, *w, offset);
    if (!v)
      return failure();
    Value index;
    if (wantIndices) {
      auto values = overOutputs(
          *w,
          [&](size_t i, int64_t o) {
            int64_t p = std::clamp<int64_t>(w->position(i, o, offset[i]), 0, w->in[i] - 1);
            return double(p * spatialStrides[i]);
          },
          /*multiply=*/false);
      index = ctx.build<AddOp>(base, spatialConstant(ctx, *w, batchChannels, i64, values));
      if (!index)
        return failure();
    }
    if (!best) {
      best = v;
      bestIndex = index;
      continue;
    }
    if (!wantIndices) {
      best = ctx.build<MaxOp>(best, v);
    } else {
      // The first maximum wins (a later equal value does not replace it).
      Value larger = compare(ctx, CompareDirection::GT, v, best);
      best = select(ctx, larger, v, best);
      bestIndex = select(ctx, larger, index, bestIndex);
    }
    if (!best)
      return failure();
  }
  if (failed(ctx.setOutput(0, best)))
    return failure();
  return wantIndices ? ctx.setOutput(1, bestIndex) : success();
}

/// The sum over every window of `padded` (a zero-padded x or |x|^p).
Value windowSum(ImportContext &ctx, Value padded, const Windows &w) {
  Value sum;
  for (const auto &offset : kernelOffsets(w.kernel)) {
    Value v = windowSlice(ctx, padded, w, offset);
    sum = sum && v ? ctx.build<AddOp>(sum, v) : v;
    if (!sum)
      return {};
  }
  return sum;
}

LogicalResult importAveragePool(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  auto type = typeOf(x);
  auto w = resolveWindows(ctx, type);
  if (!w)
    return failure();
  bool includePad = ctx.intAttr("count_include_pad", 0) != 0;
  Value sum = windowSum(ctx, padForWindows(ctx, x, *w, 0.0), *w);
  if (!sum)
    return failure();
  // Positions counted per dim: inside the input, or (count_include_pad)
  // inside the input and its explicit pads; windows are boxes, so the count
  // is the product over dims.
  auto counts = overOutputs(
      *w,
      [&](size_t i, int64_t o) {
        int64_t lo = includePad ? -w->padBegin[i] : 0;
        int64_t hi = includePad ? w->in[i] + w->padEnd[i] : w->in[i];
        int64_t c = 0;
        for (int64_t j = 0; j < w->kernel[i]; ++j) {
          int64_t p = w->position(i, o, j);
          c += p >= lo && p < hi;
        }
        return double(std::max<int64_t>(c, 1));
      },
      /*multiply=*/true);
  Value divisor = spatialConstant(ctx, *w, {type.getDimSize(0), type.getDimSize(1)},
                                  type.getElementType(), counts);
  return ctx.setOutput(0, divisor ? ctx.build<DivOp>(sum, divisor) : Value());
}

/// |x|^p for LpPool (p = 1, 2 without pow).
Value powerOf(ImportContext &ctx, Value x, double p) {
  Value a = p == 2 ? x : ctx.build<AbsOp>(x);
  if (p == 1 || !a)
    return a;
  if (p == 2)
    return ctx.build<MulOp>(a, a);
  return ctx.build<PowOp>(a, splatLike(ctx, a, p));
}

Value rootOf(ImportContext &ctx, Value x, double p) {
  if (!x || p == 1)
    return x;
  if (p == 2)
    return ctx.build<SqrtOp>(x);
  return ctx.build<PowOp>(x, splatLike(ctx, x, 1.0 / p));
}

std::optional<double> lpExponent(ImportContext &ctx) {
  const auto *attr = ctx.attr("p");
  double p = !attr ? 2.0 : ctx.opset() < 11 ? double(attr->f()) : double(attr->i());
  if (!(p > 0)) {
    (void)ctx.fail("p must be positive, got ", p);
    return std::nullopt;
  }
  return p;
}

LogicalResult importLpPool(ImportContext &ctx) {
  Value x = floatInput(ctx);
  if (!x)
    return failure();
  auto type = typeOf(x);
  auto w = resolveWindows(ctx, type);
  auto p = lpExponent(ctx);
  if (!w || !p)
    return failure();
  Value powered = powerOf(ctx, x, *p);
  Value sum = powered ? windowSum(ctx, padForWindows(ctx, powered, *w, 0.0), *w) : Value();
  return ctx.setOutput(0, rootOf(ctx, sum, *p));
}

/// Global pooling: a reduction over the spatial dims, kept as size 1.
template <ReduceKind kind, bool mean, bool lp> LogicalResult importGlobalPool(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  if (type.getRank() < 3)
    return ctx.fail("the input must be [N, C, spatial...], got ", shapeString(type.getShape()));
  if ((mean || lp) && !isa<FloatType>(type.getElementType()))
    return ctx.fail("the input must be a float tensor, got ", type.getElementType());
  SmallVector<int64_t> dims;
  int64_t count = 1;
  for (int64_t d = 2; d < type.getRank(); ++d) {
    dims.push_back(d);
    count *= type.getDimSize(d);
  }
  std::optional<double> p = 1.0;
  if (lp && !(p = lpExponent(ctx)))
    return failure();
  Value y = reduce(ctx, kind, lp ? powerOf(ctx, x, *p) : x, dims);
  if (y && mean)
    y = ctx.build<DivOp>(y, splatLike(ctx, y, double(std::max<int64_t>(count, 1))));
  if (lp)
    y = rootOf(ctx, y, *p);
  return ctx.setOutput(0, ctx.reshape(y, keptShape(type.getShape(), dims)));
}

} // namespace

void registerPoolingHandlers(HandlerRegistry &r) {
  r.add("MaxPool", 1, importMaxPool);
  r.add("AveragePool", 1, importAveragePool);
  r.add("LpPool", 2, importLpPool);
  r.add("GlobalMaxPool", 1, importGlobalPool<ReduceKind::Max, false, false>);
  r.add("GlobalAveragePool", 1, importGlobalPool<ReduceKind::Sum, true, false>);
  r.add("GlobalLpPool", 2, importGlobalPool<ReduceKind::Sum, false, true>);
}

} // namespace trc::import
