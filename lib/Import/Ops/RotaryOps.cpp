//===- RotaryOps.cpp - ONNX RotaryEmbedding (opset 23) ----------------------===//
//
// RotaryEmbedding rotates the first rotary_embedding_dim features of each
// head by the position's angle: with x1, x2 the two halves (or, with
// interleaved, the even and odd features), out = (cos*x1 - sin*x2,
// sin*x1 + cos*x2) in the same layout, the remaining features unchanged.
// Input [batch, heads, seq, head] or [batch, seq, heads*head] (num_heads
// given); cos/sin caches [positions, rotary/2] indexed by position_ids
// [batch, seq], or [batch, seq, rotary/2] without position_ids. A
// composition of slices, a gather, elementwise ops and a concatenation, so
// its gradient is theirs.
//
//===----------------------------------------------------------------------===//
#include "Common.h"

#include "../HandlerRegistry.h"

using namespace mlir;

namespace trc::import {
namespace {

Value sliceLast(ImportContext &ctx, Value x, int64_t begin, int64_t end, int64_t stride) {
  auto type = typeOf(x);
  int64_t rank = type.getRank();
  SmallVector<int64_t> start(rank, 0), limit(type.getShape()), strides(rank, 1);
  start.back() = begin;
  limit.back() = end;
  strides.back() = stride;
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = (end - begin + stride - 1) / stride;
  return ctx.build<SliceOp>(RankedTensorType::get(shape, type.getElementType()), x, start, limit,
                            strides);
}

LogicalResult importRotaryEmbedding(ImportContext &ctx) {
  Value x = floatInput(ctx);
  Value cosCache = ctx.input(1), sinCache = ctx.input(2);
  if (!x || !cosCache || !sinCache)
    return failure();
  auto type = typeOf(x);
  Type elem = type.getElementType();
  const bool interleaved = ctx.intAttr("interleaved", 0) != 0;
  const int64_t rank = type.getRank();
  // Work in [batch, seq, heads, head].
  Value work;
  int64_t batch = type.getDimSize(0), seq, heads, head;
  if (rank == 4) {
    heads = type.getDimSize(1);
    seq = type.getDimSize(2);
    head = type.getDimSize(3);
    work = ctx.build<TransposeOp>(RankedTensorType::get({batch, seq, heads, head}, elem), x,
                                  ArrayRef<int64_t>{0, 2, 1, 3});
  } else if (rank == 3) {
    heads = ctx.intAttr("num_heads", 0);
    seq = type.getDimSize(1);
    if (heads <= 0 || type.getDimSize(2) % heads)
      return ctx.fail("a 3-D input needs num_heads dividing its hidden size ",
                      type.getDimSize(2), ", got ", heads);
    head = type.getDimSize(2) / heads;
    work = ctx.reshape(x, {batch, seq, heads, head});
  } else {
    return ctx.fail("the input must be 3-D or 4-D, got rank ", rank);
  }
  if (!work)
    return failure();
  int64_t rotary = ctx.intAttr("rotary_embedding_dim", 0);
  if (rotary == 0)
    rotary = head;
  if (rotary < 2 || rotary > head || rotary % 2)
    return ctx.fail("rotary_embedding_dim ", rotary, " must be even and at most the head size ",
                    head);
  const int64_t half = rotary / 2;

  // cos, sin: [batch, seq, 1, half].
  auto angles = [&](Value cache) -> Value {
    auto cacheType = typeOf(cache);
    if (cacheType.getElementType() != elem)
      return ctx.fail("cos_cache and sin_cache must have the input's element type"), Value();
    Value rows = cache;
    if (ctx.hasInput(3)) {
      Value positions = ctx.input(3);
      if (!positions)
        return {};
      if (cacheType.getRank() != 2 || typeOf(positions).getShape() != ArrayRef<int64_t>{batch, seq})
        return ctx.fail("with position_ids [", batch, ", ", seq,
                        "] the caches must be [positions, rotary/2]"),
               Value();
      rows = ctx.build<GatherOp>(
          RankedTensorType::get({batch, seq, cacheType.getDimSize(1)}, elem), cache,
          wrapIndices(ctx, positions, cacheType.getDimSize(0)), 0);
    } else if (cacheType.getRank() != 3 || cacheType.getDimSize(0) != batch ||
               cacheType.getDimSize(1) != seq) {
      return ctx.fail("without position_ids the caches must be [", batch, ", ", seq,
                      ", rotary/2]"),
             Value();
    }
    if (!rows)
      return {};
    if (typeOf(rows).getDimSize(2) < half)
      return ctx.fail("the caches hold ", typeOf(rows).getDimSize(2),
                      " angles per position; rotary_embedding_dim/2 = ", half, " needed"),
             Value();
    Value used = sliceLast(ctx, rows, 0, half, 1);
    return used ? ctx.broadcastTo(ctx.reshape(used, {batch, seq, 1, half}),
                                  {batch, seq, heads, half})
                : Value();
  };
  Value cos = angles(cosCache), sin = angles(sinCache);
  if (!cos || !sin)
    return failure();

  Value x1 = interleaved ? sliceLast(ctx, work, 0, rotary, 2) : sliceLast(ctx, work, 0, half, 1);
  Value x2 =
      interleaved ? sliceLast(ctx, work, 1, rotary, 2) : sliceLast(ctx, work, half, rotary, 1);
  if (!x1 || !x2)
    return failure();
  Value real = ctx.build<SubOp>(ctx.build<MulOp>(cos, x1), ctx.build<MulOp>(sin, x2));
  Value imag = ctx.build<AddOp>(ctx.build<MulOp>(sin, x1), ctx.build<MulOp>(cos, x2));
  if (!real || !imag)
    return failure();
  Value rotated;
  if (interleaved) {
    // (real_i, imag_i) pairs back in place: stack on a new last axis, flatten.
    Value pairs = concatAlong(ctx,
                              {ctx.reshape(real, {batch, seq, heads, half, 1}),
                               ctx.reshape(imag, {batch, seq, heads, half, 1})},
                              4);
    rotated = pairs ? ctx.reshape(pairs, {batch, seq, heads, rotary}) : Value();
  } else {
    rotated = concatAlong(ctx, {real, imag}, 3);
  }
  if (!rotated)
    return failure();
  Value out = rotary == head
                  ? rotated
                  : concatAlong(ctx, {rotated, sliceLast(ctx, work, rotary, head, 1)}, 3);
  if (!out)
    return failure();
  if (rank == 3)
    return ctx.setOutput(0, ctx.reshape(out, type.getShape()));
  return ctx.setOutput(0, ctx.build<TransposeOp>(type, out, ArrayRef<int64_t>{0, 2, 1, 3}));
}

} // namespace

void registerRotaryHandlers(HandlerRegistry &r) {
  r.add("RotaryEmbedding", 23, importRotaryEmbedding);
}

} // namespace trc::import
