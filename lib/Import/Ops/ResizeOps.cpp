//===- ResizeOps.cpp - Resize and Upsample -> trc ---------------------------===//
//
// Resize is separable: along each axis whose size or sampling changes, every
// output position reads a few input positions (1 for nearest, 2 for linear,
// 4 for cubic) with fixed weights. Both are computed here at import, as
// ONNX's reference does (coordinate transformation, neighbours clamped to
// the edge, exclude_outside, tf_crop_and_resize's extrapolation value), so
// the op is one trc.gather per tap times a constant weight, summed: it
// trains through the gather rule and needs no core op.
//
// Preconditions: scales, sizes and roi are compile-time constants (node
// tests bind them as constant inputs); X is a float tensor.
// Upsample (opsets 7/9) and Resize-10 are Resize with the asymmetric
// transformation and floor rounding for nearest.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "Common.h"

#include <cmath>

using namespace mlir;

namespace trc::import {
namespace {

/// How one axis is sampled; the attributes of the node.
struct ResizeMode {
  std::string mode = "nearest";          // nearest | linear | cubic
  std::string transform = "half_pixel";  // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0;
};

/// The taps of one output position: input indices (clamped) and weights;
/// `outside` when tf_crop_and_resize reads outside the input.
struct Taps {
  SmallVector<int64_t> index;
  SmallVector<double> weight;
  bool outside = false;
};

SmallVector<double> coefficients(const ResizeMode &m, double ratio) {
  if (m.mode == "linear")
    return {1 - ratio, ratio};
  if (m.mode == "cubic") {
    double a = m.cubicA, r = ratio, s = 1 - ratio;
    return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
            ((a + 2) * r - (a + 3)) * r * r + 1, ((a + 2) * s - (a + 3)) * s * s + 1,
            ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
  }
  if (ratio == 1)
    return {0, 1};
  bool up = m.nearest == "round_prefer_floor" ? ratio > 0.5
            : m.nearest == "round_prefer_ceil" ? ratio >= 0.5
            : m.nearest == "ceil";
  return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
}

/// Output position x's taps on an axis of `in` elements, `scale` the
/// (possibly fractional) ratio out/in, `outLength` the output length as the
/// reference computes it (in * scale), `roi` this axis' [start, end].
Taps tapsAt(const ResizeMode &m, int64_t x, int64_t in, double scale, double outLength,
            std::pair<double, double> roi) {
  Taps taps;
  double xo;
  const std::string &t = m.transform;
  if (t == "align_corners")
    xo = outLength == 1 ? 0 : double(x) * double(in - 1) / (outLength - 1);
  else if (t == "asymmetric")
    xo = double(x) / scale;
  else if (t == "tf_half_pixel_for_nn")
    xo = (double(x) + 0.5) / scale;
  else if (t == "pytorch_half_pixel")
    xo = outLength == 1 ? -0.5 : (double(x) + 0.5) / scale - 0.5;
  else if (t == "tf_crop_and_resize") {
    double span = (roi.second - roi.first) * double(in - 1);
    xo = (outLength == 1 ? span / 2 : double(x) * span / (outLength - 1)) +
         roi.first * double(in - 1);
    if (xo < 0 || xo > double(in - 1)) {
      taps.outside = true;
      return taps;
    }
  } else
    xo = (double(x) + 0.5) / scale - 0.5; // half_pixel
  double lower = std::floor(xo);
  bool whole = xo == lower;
  double ratio = whole ? 1 : xo - lower;
  // The left neighbour of a whole coordinate is the one below it (ratio 1).
  int64_t base = static_cast<int64_t>(lower) - (whole ? 1 : 0);
  SmallVector<double> coeffs = coefficients(m, ratio);
  int64_t n = static_cast<int64_t>(coeffs.size());
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t index = base - n / 2 + 1 + i;
    bool inside = index >= 0 && index < in;
    if (m.excludeOutside && !inside)
      coeffs[i] = 0;
    sum += coeffs[i];
    taps.index.push_back(std::clamp<int64_t>(index, 0, in - 1));
    taps.weight.push_back(coeffs[i]);
  }
  if (m.excludeOutside && sum != 0)
    for (double &w : taps.weight)
      w /= sum;
  if (m.mode == "nearest") {
    // One tap: the neighbour whose coefficient is 1.
    size_t chosen = taps.weight[0] == 1 ? 0 : 1;
    taps.index = {taps.index[chosen]};
    taps.weight = {1.0};
  }
  return taps;
}

/// x resampled along `axis` to `out` positions.
Value resizeAxis(ImportContext &ctx, Value x, int64_t axis, int64_t out, double scale,
                 double outLength, std::pair<double, double> roi, const ResizeMode &m) {
  auto type = typeOf(x);
  int64_t in = type.getDimSize(axis);
  SmallVector<Taps> all;
  size_t n = 0;
  bool identity = out == in;
  for (int64_t i = 0; i < out; ++i) {
    all.push_back(tapsAt(m, i, in, scale, outLength, roi));
    n = std::max(n, all.back().index.size());
    const Taps &t = all.back();
    for (size_t k = 0; k < t.index.size(); ++k)
      identity &= t.weight[k] == 0 || (t.weight[k] == 1 && t.index[k] == i);
    identity &= !t.outside;
  }
  if (identity)
    return x;
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = out;
  auto outType = RankedTensorType::get(shape, type.getElementType());
  auto lineType = RankedTensorType::get({out}, type.getElementType());
  auto constantLine = [&](auto valueAt) -> Value {
    SmallVector<Attribute> values;
    for (int64_t i = 0; i < out; ++i)
      values.push_back(FloatAttr::get(type.getElementType(), valueAt(i)));
    Value line = ctx.builder().create<ConstantOp>(ctx.loc(),
                                                  DenseElementsAttr::get(lineType, values));
    return ctx.build<BroadcastInDimOp>(outType, line, ArrayRef<int64_t>{axis});
  };
  Value sum;
  for (size_t k = 0; k < n; ++k) {
    SmallVector<int64_t> index;
    bool used = false;
    for (const Taps &t : all) {
      index.push_back(t.outside ? 0 : t.index[k]);
      used |= !t.outside && t.weight[k] != 0;
    }
    if (!used)
      continue;
    Value picked = ctx.build<GatherOp>(outType, x, ctx.int64s(index), axis);
    Value weight = constantLine([&](int64_t i) { return all[i].outside ? 0 : all[i].weight[k]; });
    Value term = picked && weight ? ctx.build<MulOp>(picked, weight) : Value();
    sum = sum && term ? ctx.build<AddOp>(sum, term) : term;
    if (!sum)
      return {};
  }
  if (llvm::any_of(all, [](const Taps &t) { return t.outside; })) {
    Value fill = constantLine([&](int64_t i) { return all[i].outside ? m.extrapolation : 0.0; });
    sum = sum ? ctx.build<AddOp>(sum, fill) : fill;
  }
  return sum;
}

/// The float values of constant input `i` ({} when it is absent or empty).
std::optional<SmallVector<double>> constantFloats(ImportContext &ctx, int i,
                                                  StringRef what) {
  if (!ctx.hasInput(i))
    return SmallVector<double>{};
  DenseElementsAttr attr = ctx.constantInput(i, what);
  if (!attr)
    return std::nullopt;
  SmallVector<double> values;
  if (!isa<FloatType>(attr.getElementType())) {
    (void)ctx.fail(what, " must be a float tensor");
    return std::nullopt;
  }
  for (APFloat v : attr.getValues<APFloat>()) {
    bool lost;
    v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    values.push_back(v.convertToDouble());
  }
  return values;
}

LogicalResult resize(ImportContext &ctx, const ResizeMode &m, SmallVector<double> scales,
                     SmallVector<int64_t> sizes, SmallVector<double> roi) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  int64_t rank = type.getRank();
  if (!isa<FloatType>(type.getElementType()))
    return ctx.fail("X must be a float tensor, got ", type);
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic")
    return ctx.fail("mode '", m.mode, "' is not nearest, linear or cubic");
  static const char *transforms[] = {"half_pixel",         "pytorch_half_pixel",
                                     "align_corners",      "asymmetric",
                                     "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (!llvm::is_contained(transforms, m.transform))
    return ctx.unsupported("coordinate_transformation_mode '", m.transform, "' is not supported");
  static const char *roundings[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                    "ceil"};
  if (!llvm::is_contained(roundings, m.nearest))
    return ctx.unsupported("nearest_mode '", m.nearest, "' is not supported");
  if (scales.empty() == sizes.empty())
    return ctx.fail("exactly one of scales and sizes must be given");
  if (size_t(rank) != (scales.empty() ? sizes.size() : scales.size()))
    return ctx.fail(scales.empty() ? "sizes" : "scales", " must have ", rank, " values");
  if (m.transform == "tf_crop_and_resize" && roi.size() != size_t(2 * rank))
    return ctx.fail("roi must have ", 2 * rank, " values for tf_crop_and_resize");
  // Innermost axis first (the order does not change the result).
  for (int64_t axis = rank - 1; x && axis >= 0; --axis) {
    int64_t in = type.getDimSize(axis);
    double scale, outLength;
    int64_t out;
    if (!scales.empty()) {
      scale = scales[axis];
      if (!(scale > 0))
        return ctx.fail("scales must be positive, got ", scale, " on axis ", axis);
      outLength = double(in) * scale;
      out = static_cast<int64_t>(std::floor(outLength));
    } else {
      out = sizes[axis];
      if (out <= 0)
        return ctx.fail("sizes must be positive, got ", out, " on axis ", axis);
      scale = double(out) / double(in);
      outLength = double(out);
    }
    std::pair<double, double> axisRoi{0, 1};
    if (!roi.empty())
      axisRoi = {roi[axis], roi[rank + axis]};
    x = resizeAxis(ctx, x, axis, out, scale, outLength, axisRoi, m);
  }
  return ctx.setOutput(0, x);
}

LogicalResult importResize(ImportContext &ctx) {
  ResizeMode m;
  m.mode = ctx.stringAttr("mode", "nearest");
  if (ctx.opset() < 11) {
    // Resize-10: X, scales; Upsample's semantics.
    m.transform = "asymmetric";
    m.nearest = "floor";
    auto scales = constantFloats(ctx, 1, "scales");
    return scales ? resize(ctx, m, *scales, {}, {}) : failure();
  }
  m.transform = ctx.stringAttr("coordinate_transformation_mode", "half_pixel");
  m.nearest = ctx.stringAttr("nearest_mode", "round_prefer_floor");
  m.cubicA = ctx.floatAttr("cubic_coeff_a", -0.75f);
  m.excludeOutside = ctx.intAttr("exclude_outside", 0) != 0;
  m.extrapolation = ctx.floatAttr("extrapolation_value", 0.0f);
  if (ctx.attr("antialias") && ctx.intAttr("antialias", 0) != 0)
    return ctx.unsupported("antialias is not supported");
  if (ctx.attr("axes"))
    return ctx.unsupported("the axes attribute is not supported");
  if (ctx.stringAttr("keep_aspect_ratio_policy", "stretch") != "stretch")
    return ctx.unsupported("keep_aspect_ratio_policy other than stretch is not supported");
  SmallVector<double> roi;
  if (m.transform == "tf_crop_and_resize") {
    auto given = constantFloats(ctx, 1, "roi");
    if (!given)
      return failure();
    roi = *given;
  }
  auto scales = constantFloats(ctx, 2, "scales");
  if (!scales)
    return failure();
  SmallVector<int64_t> sizes;
  if (ctx.hasInput(3)) {
    auto given = ctx.constantInts(3, "sizes");
    if (!given)
      return failure();
    sizes = *given;
  }
  return resize(ctx, m, *scales, sizes, roi);
}

// Upsample-7 has scales as an attribute, Upsample-9 as input 1.
LogicalResult importUpsample(ImportContext &ctx) {
  ResizeMode m;
  m.mode = ctx.stringAttr("mode", "nearest");
  m.transform = "asymmetric";
  m.nearest = "floor";
  if (ctx.opset() >= 9) {
    auto scales = constantFloats(ctx, 1, "scales");
    return scales ? resize(ctx, m, *scales, {}, {}) : failure();
  }
  const auto *attr = ctx.attr("scales");
  if (!attr)
    return ctx.fail("the scales attribute is missing");
  return resize(ctx, m, SmallVector<double>(attr->floats().begin(), attr->floats().end()), {},
                {});
}

} // namespace

void registerResizeHandlers(HandlerRegistry &r) {
  r.add("Resize", 10, importResize);
  r.add("Upsample", 7, importUpsample);
}

} // namespace trc::import
