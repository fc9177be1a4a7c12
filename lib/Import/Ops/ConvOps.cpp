//===- ConvOps.cpp - Conv and ConvTranspose -> trc -------------------------===//
//
// Both are compositions of data movement and one trc.dot_general, so they
// train through the rules of their parts and need no core op:
//   Conv           pads the input, takes one strided slice per kernel
//                  offset (im2col: [N, C, K, out...]) and contracts C and K
//                  with the weights in one matrix product, groups as its
//                  batch dimension;
//   ConvTranspose  contracts C first ([N, M, K, in...], one product), then
//                  places each kernel offset's slice at its strided output
//                  positions (interleaved zeros, then an offset pad) and
//                  sums, then crops the pads.
// Padding follows ONNX: explicit pads, or auto_pad SAME_UPPER/SAME_LOWER/
// VALID; ConvTranspose also output_padding and output_shape.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "Common.h"

using namespace mlir;

namespace trc::import {
namespace {

/// The attributes every convolution reads, resolved for `spatial` dims.
struct ConvAttrs {
  SmallVector<int64_t> kernel, strides, dilations, padBegin, padEnd;
  std::string autoPad;
  int64_t group = 1;
};

std::optional<ConvAttrs> readConvAttrs(ImportContext &ctx, ArrayRef<int64_t> weightShape) {
  size_t n = weightShape.size() - 2;
  ConvAttrs a;
  a.kernel = SmallVector<int64_t>(weightShape.drop_front(2));
  if (auto k = ctx.intsAttr("kernel_shape")) {
    if (ArrayRef<int64_t>(*k) != ArrayRef<int64_t>(a.kernel)) {
      (void)ctx.fail("kernel_shape ", shapeString(*k), " differs from the weights' ",
                     shapeString(a.kernel));
      return std::nullopt;
    }
  }
  auto strides = spatialInts(ctx, "strides", n, 1);
  auto dilations = spatialInts(ctx, "dilations", n, 1);
  auto pads = spatialInts(ctx, "pads", 2 * n, 0);
  if (!strides || !dilations || !pads)
    return std::nullopt;
  a.strides = *strides;
  a.dilations = *dilations;
  a.padBegin.assign(pads->begin(), pads->begin() + n);
  a.padEnd.assign(pads->begin() + n, pads->end());
  a.autoPad = ctx.stringAttr("auto_pad", "NOTSET");
  a.group = ctx.intAttr("group", 1);
  if (a.autoPad != "NOTSET" && a.autoPad != "SAME_UPPER" && a.autoPad != "SAME_LOWER" &&
      a.autoPad != "VALID") {
    (void)ctx.fail("auto_pad '", a.autoPad, "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    return std::nullopt;
  }
  for (size_t i = 0; i < n; ++i)
    if (a.strides[i] < 1 || a.dilations[i] < 1 || a.padBegin[i] < 0 || a.padEnd[i] < 0 ||
        a.kernel[i] < 1) {
      (void)ctx.fail("strides, dilations and kernel sizes must be positive and pads "
                     "non-negative");
      return std::nullopt;
    }
  if (a.group < 1) {
    (void)ctx.fail("group must be positive, got ", a.group);
    return std::nullopt;
  }
  return a;
}

/// The common checks of X and W: float, ranks, channels; returns false after
/// an error.
bool checkOperands(ImportContext &ctx, Value x, Value w) {
  auto xt = typeOf(x), wt = typeOf(w);
  if (!isa<FloatType>(xt.getElementType()) || xt.getElementType() != wt.getElementType()) {
    (void)ctx.fail("X and W must be float tensors of one type, got ", xt, " and ", wt);
    return false;
  }
  if (xt.getRank() < 3 || wt.getRank() != xt.getRank()) {
    (void)ctx.fail("X ", shapeString(xt.getShape()), " and W ", shapeString(wt.getShape()),
                   " must have the same rank >= 3");
    return false;
  }
  return true;
}

/// Adds the bias B [M] along dim 1 of y.
Value addBias(ImportContext &ctx, Value y, int input) {
  if (!y || !ctx.hasInput(input))
    return y;
  Value b = ctx.input(input);
  if (!b)
    return {};
  auto yt = typeOf(y);
  if (typeOf(b) != RankedTensorType::get({yt.getDimSize(1)}, yt.getElementType())) {
    (void)ctx.fail("B ", shapeString(typeOf(b).getShape()), " must be [", yt.getDimSize(1),
                   "] of X's type");
    return {};
  }
  return ctx.build<AddOp>(y, ctx.build<BroadcastInDimOp>(yt, b, ArrayRef<int64_t>{1}));
}

LogicalResult importConv(ImportContext &ctx) {
  Value x = ctx.input(0), w = ctx.input(1);
  if (!x || !w || !checkOperands(ctx, x, w))
    return failure();
  auto xt = typeOf(x), wt = typeOf(w);
  auto attrs = readConvAttrs(ctx, wt.getShape());
  if (!attrs)
    return failure();
  int64_t n = xt.getRank() - 2, batch = xt.getDimSize(0), channels = xt.getDimSize(1);
  int64_t outChannels = wt.getDimSize(0), g = attrs->group;
  if (channels % g || outChannels % g || wt.getDimSize(1) * g != channels)
    return ctx.fail("W ", shapeString(wt.getShape()), " does not match ", channels,
                    " input channels in ", g, " groups");
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) {
    int64_t in = xt.getDimSize(i + 2), s = attrs->strides[i];
    int64_t span = (attrs->kernel[i] - 1) * attrs->dilations[i] + 1;
    if (attrs->autoPad == "SAME_UPPER" || attrs->autoPad == "SAME_LOWER") {
      int64_t o = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (o - 1) * s + span - in);
      attrs->padBegin[i] = attrs->autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      attrs->padEnd[i] = total - attrs->padBegin[i];
    } else if (attrs->autoPad == "VALID") {
      attrs->padBegin[i] = attrs->padEnd[i] = 0;
    }
    int64_t padded = in + attrs->padBegin[i] + attrs->padEnd[i];
    if (padded < span)
      return ctx.fail("the kernel (", span, " with dilation) is larger than the padded input (",
                      padded, ") on spatial axis ", i);
    out.push_back((padded - span) / s + 1);
  }
  Value padded = padSpatial(ctx, x, attrs->padBegin, attrs->padEnd);
  if (!padded)
    return failure();
  // im2col: one strided slice per kernel offset, stacked at dim 2.
  auto offsets = kernelOffsets(attrs->kernel);
  int64_t k = static_cast<int64_t>(offsets.size());
  SmallVector<int64_t> sliceShape{batch, channels}, colShape{batch, channels, 1};
  llvm::append_range(sliceShape, out);
  llvm::append_range(colShape, out);
  SmallVector<Value> columns;
  for (const auto &offset : offsets) {
    SmallVector<int64_t> lo{0, 0}, hi{batch, channels}, step{1, 1};
    for (int64_t i = 0; i < n; ++i) {
      lo.push_back(offset[i] * attrs->dilations[i]);
      hi.push_back(lo.back() + (out[i] - 1) * attrs->strides[i] + 1);
      step.push_back(attrs->strides[i]);
    }
    Value slice = ctx.build<SliceOp>(RankedTensorType::get(sliceShape, xt.getElementType()),
                                     padded, lo, hi, step);
    columns.push_back(ctx.reshape(slice, colShape));
    if (!columns.back())
      return failure();
  }
  colShape[2] = k;
  Value cols = k == 1 ? columns[0]
                      : ctx.build<ConcatenateOp>(
                            RankedTensorType::get(colShape, xt.getElementType()), columns, 2);
  // [N, g, C/g, K, out...] x [g, M/g, C/g, K] -> [g, M/g, N, out...].
  SmallVector<int64_t> grouped{batch, g, channels / g, k};
  llvm::append_range(grouped, out);
  Value lhs = ctx.reshape(w, {g, outChannels / g, channels / g, k});
  Value rhs = ctx.reshape(cols, grouped);
  if (!lhs || !rhs)
    return failure();
  SmallVector<int64_t> productShape{g, outChannels / g, batch};
  llvm::append_range(productShape, out);
  Value product = ctx.build<DotGeneralOp>(
      RankedTensorType::get(productShape, xt.getElementType()), lhs, rhs,
      ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1}, ArrayRef<int64_t>{2, 3},
      ArrayRef<int64_t>{2, 3});
  if (!product)
    return failure();
  SmallVector<int64_t> perm{2, 0, 1}, permuted{batch, g, outChannels / g};
  for (int64_t i = 0; i < n; ++i)
    perm.push_back(3 + i);
  llvm::append_range(permuted, out);
  Value y = ctx.build<TransposeOp>(RankedTensorType::get(permuted, xt.getElementType()),
                                   product, perm);
  SmallVector<int64_t> shape{batch, outChannels};
  llvm::append_range(shape, out);
  return ctx.setOutput(0, addBias(ctx, ctx.reshape(y, shape), 2));
}

/// A tensor of length `total` along `dim` holding v[i] at offset + i *
/// stride and zeros elsewhere (v's length n along `dim`; offset >= 0).
Value placeAlong(ImportContext &ctx, Value v, int64_t dim, int64_t stride, int64_t offset,
                 int64_t total) {
  auto type = typeOf(v);
  int64_t rank = type.getRank(), n = type.getDimSize(dim);
  Type elem = type.getElementType();
  Value zero = ctx.scalar(elem, 0);
  if (stride > 1 && n > 0) {
    // [.., n, ..] -> [.., n, 1, ..] -> pad to [.., n, stride, ..] -> [.., n * stride, ..]
    SmallVector<int64_t> split(type.getShape());
    split.insert(split.begin() + dim + 1, 1);
    SmallVector<int64_t> low(rank + 1, 0), high(rank + 1, 0), wide(split);
    high[dim + 1] = stride - 1;
    wide[dim + 1] = stride;
    v = ctx.build<PadOp>(RankedTensorType::get(wide, elem), ctx.reshape(v, split), zero, low,
                         high);
    SmallVector<int64_t> merged(type.getShape());
    merged[dim] = n * stride;
    v = ctx.reshape(v, merged);
    if (!v)
      return {};
  }
  auto shape = typeOf(v).getShape();
  int64_t length = shape[dim];
  SmallVector<int64_t> low(rank, 0), high(rank, 0), padded(shape);
  low[dim] = offset;
  high[dim] = std::max<int64_t>(0, total - offset - length);
  padded[dim] = offset + length + high[dim];
  if (offset || high[dim])
    v = ctx.build<PadOp>(RankedTensorType::get(padded, elem), v, zero, low, high);
  if (v && padded[dim] > total) {
    SmallVector<int64_t> lo(rank, 0), hi(padded), step(rank, 1), shape2(padded);
    hi[dim] = shape2[dim] = total;
    v = ctx.build<SliceOp>(RankedTensorType::get(shape2, elem), v, lo, hi, step);
  }
  return v;
}

LogicalResult importConvTranspose(ImportContext &ctx) {
  Value x = ctx.input(0), w = ctx.input(1);
  if (!x || !w || !checkOperands(ctx, x, w))
    return failure();
  auto xt = typeOf(x), wt = typeOf(w);
  auto attrs = readConvAttrs(ctx, wt.getShape());
  if (!attrs)
    return failure();
  int64_t n = xt.getRank() - 2, batch = xt.getDimSize(0), channels = xt.getDimSize(1);
  int64_t g = attrs->group, outChannels = wt.getDimSize(1) * g;
  if (wt.getDimSize(0) != channels || channels % g)
    return ctx.fail("W ", shapeString(wt.getShape()), " does not match ", channels,
                    " input channels in ", g, " groups");
  auto outputPadding = spatialInts(ctx, "output_padding", n, 0);
  if (!outputPadding)
    return failure();
  auto outputShape = ctx.intsAttr("output_shape");
  if (outputShape && outputShape->size() == size_t(n + 2))
    outputShape = SmallVector<int64_t>(outputShape->begin() + 2, outputShape->end());
  if (outputShape && outputShape->size() != size_t(n))
    return ctx.fail("output_shape has ", outputShape->size(), " values for ", n,
                    " spatial dims");
  // full[i]: the length every kernel offset's contribution spans.
  SmallVector<int64_t> full, out;
  for (int64_t i = 0; i < n; ++i) {
    int64_t in = xt.getDimSize(i + 2), s = attrs->strides[i];
    int64_t span = (attrs->kernel[i] - 1) * attrs->dilations[i] + 1;
    full.push_back(s * (in - 1) + (*outputPadding)[i] + span);
    if (attrs->autoPad == "VALID")
      attrs->padBegin[i] = attrs->padEnd[i] = 0;
    // Without explicit pads, output_shape (or SAME's in * stride) fixes them.
    bool same = attrs->autoPad == "SAME_UPPER" || attrs->autoPad == "SAME_LOWER";
    if (!ctx.attr("pads") && (outputShape || same)) {
      // A negative total (an output larger than the full result) gives
      // negative pads: zeros beyond it, split with floor division as ONNX's
      // reference does.
      int64_t total = full[i] - (outputShape ? (*outputShape)[i] : in * s);
      int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
      bool upper = attrs->autoPad == "SAME_UPPER";
      attrs->padBegin[i] = upper ? half : total - half;
      attrs->padEnd[i] = total - attrs->padBegin[i];
    }
    out.push_back(outputShape ? (*outputShape)[i]
                              : full[i] - attrs->padBegin[i] - attrs->padEnd[i]);
    if (out.back() < 0)
      return ctx.fail("pads and output size do not fit the full transposed convolution (",
                      full[i], ") on spatial axis ", i);
  }
  // [g, C/g, M/g, K] x [N, g, C/g, in...] -> [g, M/g, K, N, in...].
  int64_t k = product(attrs->kernel);
  auto inShape = xt.getShape().drop_front(2);
  SmallVector<int64_t> grouped{batch, g, channels / g};
  llvm::append_range(grouped, inShape);
  Value lhs = ctx.reshape(w, {g, channels / g, outChannels / g, k});
  Value rhs = ctx.reshape(x, grouped);
  if (!lhs || !rhs)
    return failure();
  SmallVector<int64_t> productShape{g, outChannels / g, k, batch};
  llvm::append_range(productShape, inShape);
  Value z = ctx.build<DotGeneralOp>(RankedTensorType::get(productShape, xt.getElementType()),
                                    lhs, rhs, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{1},
                                    ArrayRef<int64_t>{1}, ArrayRef<int64_t>{2});
  if (!z)
    return failure();
  // -> [N, g, M/g, K, in...] -> [N, M, K, in...]
  SmallVector<int64_t> perm{3, 0, 1, 2}, permuted{batch, g, outChannels / g, k};
  for (int64_t i = 0; i < n; ++i)
    perm.push_back(4 + i);
  llvm::append_range(permuted, inShape);
  SmallVector<int64_t> columns{batch, outChannels, k};
  llvm::append_range(columns, inShape);
  z = ctx.reshape(ctx.build<TransposeOp>(RankedTensorType::get(permuted, xt.getElementType()),
                                         z, perm),
                  columns);
  if (!z)
    return failure();
  SmallVector<int64_t> sliceShape{batch, outChannels};
  llvm::append_range(sliceShape, inShape);
  Value sum;
  for (auto [index, offset] : llvm::enumerate(kernelOffsets(attrs->kernel))) {
    int64_t kk = static_cast<int64_t>(index);
    SmallVector<int64_t> lo(n + 3, 0), hi(columns), step(n + 3, 1), one(columns);
    lo[2] = kk;
    hi[2] = kk + 1;
    one[2] = 1;
    Value part = ctx.reshape(
        ctx.build<SliceOp>(RankedTensorType::get(one, xt.getElementType()), z, lo, hi, step),
        sliceShape);
    for (int64_t i = 0; part && i < n; ++i)
      part = placeAlong(ctx, part, i + 2, attrs->strides[i], offset[i] * attrs->dilations[i],
                        full[i]);
    if (!part)
      return failure();
    sum = sum ? ctx.build<AddOp>(sum, part) : part;
    if (!sum)
      return failure();
  }
  // Output positions outside the full result (negative pads) are zeros.
  SmallVector<int64_t> extraLow, extraHigh;
  for (int64_t i = 0; i < n; ++i) {
    extraLow.push_back(std::max<int64_t>(0, -attrs->padBegin[i]));
    extraHigh.push_back(std::max<int64_t>(0, attrs->padBegin[i] + out[i] - full[i]));
  }
  sum = padSpatial(ctx, sum, extraLow, extraHigh);
  if (!sum)
    return failure();
  SmallVector<int64_t> lo{0, 0}, hi{batch, outChannels}, step(n + 2, 1), shape{batch,
                                                                             outChannels};
  for (int64_t i = 0; i < n; ++i) {
    lo.push_back(attrs->padBegin[i] + extraLow[i]);
    hi.push_back(lo.back() + out[i]);
    shape.push_back(out[i]);
  }
  Value y = ctx.build<SliceOp>(RankedTensorType::get(shape, xt.getElementType()), sum, lo, hi,
                               step);
  return ctx.setOutput(0, addBias(ctx, y, 2));
}

} // namespace

void registerConvHandlers(HandlerRegistry &r) {
  r.add("Conv", 1, importConv);
  r.add("ConvTranspose", 1, importConvTranspose);
}

} // namespace trc::import
