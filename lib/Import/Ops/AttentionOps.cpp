//===- AttentionOps.cpp - ONNX Attention (opset 23) --------------------------===//
//
// Attention: Y = softmax(scale * Q K^T + bias) V per head, from 4-D
// [batch, heads, seq, head] or 3-D [batch, seq, heads*head] inputs
// (q_num_heads / kv_num_heads), with past_key/past_value appended along the
// sequence (present_key/present_value out), grouped-query attention (each
// of kv_num_heads heads serves q_num_heads/kv_num_heads consecutive query
// heads), is_causal (query i attends keys j <= i + past), a boolean (true:
// attend) or additive float mask, and softcap (softcap * tanh(s / softcap)).
// Without a mask or softcap it becomes trc.attention (the fused op, with the
// causal mask as its boolean mask); otherwise its decomposition, where rows
// with no key to attend give 0 as ONNX defines. qk_matmul_output is not
// supported.
//
//===----------------------------------------------------------------------===//
#include "Common.h"

#include "../HandlerRegistry.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace trc::import {
namespace {

/// x as [batch, heads, seq, head]: 4-D as it is, 3-D [batch, seq,
/// heads*head] split into `heads` (> 0) and transposed.
Value toHeads(ImportContext &ctx, Value x, int64_t heads, const char *what) {
  auto type = typeOf(x);
  if (type.getRank() == 4)
    return x;
  if (type.getRank() != 3 || heads <= 0 || type.getDimSize(2) % heads)
    return ctx.fail(what, " must be 4-D, or 3-D with a head count dividing its last axis (",
                    shapeString(type.getShape()), ", ", heads, " heads)"),
           Value();
  int64_t b = type.getDimSize(0), s = type.getDimSize(1), h = type.getDimSize(2) / heads;
  Value split = ctx.reshape(x, {b, s, heads, h});
  return split ? ctx.build<TransposeOp>(RankedTensorType::get({b, heads, s, h}, type.getElementType()),
                                        split, ArrayRef<int64_t>{0, 2, 1, 3})
               : Value();
}

/// [batch, kvHeads, seq, head] -> [batch, kvHeads*reps, seq, head], head h
/// being kv head h / reps (grouped-query attention).
Value repeatHeads(ImportContext &ctx, Value x, int64_t reps) {
  if (reps == 1)
    return x;
  auto shape = typeOf(x).getShape();
  int64_t b = shape[0], h = shape[1], s = shape[2], d = shape[3];
  Value wide = ctx.broadcastTo(ctx.reshape(x, {b, h, 1, s, d}), {b, h, reps, s, d});
  return wide ? ctx.reshape(wide, {b, h * reps, s, d}) : Value();
}

/// [q, kv] booleans: key j may be attended by query i (j <= i + offset).
Value causalMask(ImportContext &ctx, int64_t q, int64_t kv, int64_t offset) {
  Value rows = iota(ctx, {q, kv}, 0), cols = iota(ctx, {q, kv}, 1);
  Value shifted = ctx.build<AddOp>(rows, ctx.splat(typeOf(rows), double(offset)));
  return compare(ctx, CompareDirection::LE, cols, shifted);
}

/// Batched [.., m, k] x [.., n, k] (transposeRhs) or [.., k, n] over the two
/// leading axes.
Value batchedProduct(ImportContext &ctx, Value a, Value b, bool transposeRhs) {
  auto ta = typeOf(a), tb = typeOf(b);
  SmallVector<int64_t> shape{ta.getDimSize(0), ta.getDimSize(1), ta.getDimSize(2),
                             transposeRhs ? tb.getDimSize(2) : tb.getDimSize(3)};
  return ctx.build<DotGeneralOp>(RankedTensorType::get(shape, ta.getElementType()), a, b,
                                 ArrayRef<int64_t>{0, 1}, ArrayRef<int64_t>{0, 1},
                                 ArrayRef<int64_t>{3},
                                 ArrayRef<int64_t>{transposeRhs ? 3 : 2});
}

LogicalResult importAttention(ImportContext &ctx) {
  Value q = floatInput(ctx), k = ctx.input(1), v = ctx.input(2);
  if (!q || !k || !v)
    return failure();
  if (ctx.wantsOutput(3))
    return ctx.unsupported("qk_matmul_output is not supported");
  int64_t precision = ctx.intAttr("softmax_precision", 0);
  if (precision != 0 && precision != onnx::TensorProto::FLOAT)
    return ctx.unsupported("softmax_precision other than float32 is not supported");
  const int64_t inputRank = typeOf(q).getRank();
  if (typeOf(k).getRank() != inputRank || typeOf(v).getRank() != inputRank)
    return ctx.fail("Q, K and V must have the same rank");
  const int64_t qHeadsAttr = ctx.intAttr("q_num_heads", 0);
  const int64_t kvHeadsAttr = ctx.intAttr("kv_num_heads", 0);
  q = toHeads(ctx, q, qHeadsAttr, "Q");
  k = k ? toHeads(ctx, k, kvHeadsAttr, "K") : Value();
  v = v ? toHeads(ctx, v, kvHeadsAttr, "V") : Value();
  if (!q || !k || !v)
    return failure();

  // The cache: past keys and values come first along the sequence.
  int64_t past = 0;
  if (ctx.hasInput(4) != ctx.hasInput(5))
    return ctx.fail("past_key and past_value must be given together");
  if (ctx.hasInput(4)) {
    Value pastKey = ctx.input(4), pastValue = ctx.input(5);
    if (!pastKey || !pastValue)
      return failure();
    past = typeOf(pastKey).getDimSize(2);
    k = concatAlong(ctx, {pastKey, k}, 2);
    v = concatAlong(ctx, {pastValue, v}, 2);
    if (!k || !v)
      return failure();
  }
  if ((ctx.wantsOutput(1) && failed(ctx.setOutput(1, k))) ||
      (ctx.wantsOutput(2) && failed(ctx.setOutput(2, v))))
    return failure();

  auto qType = typeOf(q), kType = typeOf(k), vType = typeOf(v);
  const int64_t batch = qType.getDimSize(0), qHeads = qType.getDimSize(1);
  const int64_t qLen = qType.getDimSize(2), head = qType.getDimSize(3);
  const int64_t kvHeads = kType.getDimSize(1), kvLen = kType.getDimSize(2);
  if (kType.getDimSize(0) != batch || vType.getDimSize(0) != batch ||
      kType.getDimSize(3) != head || vType.getDimSize(1) != kvHeads ||
      vType.getDimSize(2) != kvLen || qHeads % kvHeads)
    return ctx.fail("Q ", shapeString(qType.getShape()), ", K ", shapeString(kType.getShape()),
                    " and V ", shapeString(vType.getShape()),
                    " do not fit together (query heads must be a multiple of key/value heads)");
  k = repeatHeads(ctx, k, qHeads / kvHeads);
  v = repeatHeads(ctx, v, qHeads / kvHeads);
  if (!k || !v)
    return failure();
  const double scale = ctx.attr("scale") ? double(ctx.floatAttr("scale", 1))
                                         : 1.0 / std::sqrt(double(head));
  const double softcap = ctx.floatAttr("softcap", 0);
  const bool causal = ctx.intAttr("is_causal", 0) != 0;
  const int64_t valueHead = vType.getDimSize(3);
  Type elem = qType.getElementType();
  auto outType = RankedTensorType::get({batch, qHeads, qLen, valueHead}, elem);
  const double minusInf = -std::numeric_limits<double>::infinity();

  Value y;
  if (!ctx.hasInput(3) && softcap <= 0) {
    Value mask = causal ? ctx.reshape(causalMask(ctx, qLen, kvLen, past), {1, 1, qLen, kvLen})
                        : Value();
    if (causal && !mask)
      return failure();
    y = ctx.build<AttentionOp>(outType, q, k, v, mask, llvm::APFloat(scale),
                               llvm::APFloat(minusInf), /*fill_where_true=*/false);
  } else {
    SmallVector<int64_t> scoresShape{batch, qHeads, qLen, kvLen};
    auto scoresType = RankedTensorType::get(scoresShape, elem);
    Value scores = batchedProduct(ctx, q, k, /*transposeRhs=*/true);
    if (!scores)
      return failure();
    scores = ctx.build<MulOp>(scores, ctx.splat(scoresType, scale));
    if (softcap > 0)
      scores = ctx.build<MulOp>(
          ctx.build<TanhOp>(ctx.build<DivOp>(scores, ctx.splat(scoresType, softcap))),
          ctx.splat(scoresType, softcap));
    // The bias: 0 where a key may be attended, -inf (or the float mask).
    Value bias = ctx.splat(scoresType, 0);
    if (ctx.hasInput(3)) {
      Value mask = ctx.input(3);
      if (!mask)
        return failure();
      if (typeOf(mask).getRank() >= 1 && typeOf(mask).getShape().back() != kvLen)
        return ctx.fail("attn_mask's last axis ", typeOf(mask).getShape().back(),
                        " must be the key length ", kvLen);
      mask = ctx.broadcastTo(mask, scoresShape);
      if (!mask)
        return failure();
      bias = typeOf(mask).getElementType().isInteger(1)
                 ? select(ctx, mask, bias, ctx.splat(scoresType, minusInf))
                 : ctx.build<AddOp>(bias, mask);
    }
    if (causal) {
      Value allowed = ctx.broadcastTo(causalMask(ctx, qLen, kvLen, past), scoresShape);
      bias = allowed ? select(ctx, allowed, bias, ctx.splat(scoresType, minusInf)) : Value();
    }
    if (!bias || !scores)
      return failure();
    Value probabilities =
        ctx.build<SoftmaxOp>(scoresType, ctx.build<AddOp>(scores, bias), int64_t(3));
    // A row with no key to attend gives 0 (its softmax would be NaN).
    Value best = reduce(ctx, ReduceKind::Max, bias, {3});
    Value none = best ? compareWith(ctx, CompareDirection::EQ, best, minusInf) : Value();
    Value wideNone = none ? expandReduced(ctx, none, scoresShape, {3}) : Value();
    if (!probabilities || !wideNone)
      return failure();
    probabilities = select(ctx, wideNone, ctx.splat(scoresType, 0), probabilities);
    y = batchedProduct(ctx, probabilities, v, /*transposeRhs=*/false);
  }
  if (!y)
    return failure();
  if (inputRank == 4)
    return ctx.setOutput(0, y);
  Value back = ctx.build<TransposeOp>(RankedTensorType::get({batch, qLen, qHeads, valueHead}, elem),
                                      y, ArrayRef<int64_t>{0, 2, 1, 3});
  return ctx.setOutput(0, back ? ctx.reshape(back, {batch, qLen, qHeads * valueHead}) : Value());
}

} // namespace

void registerAttentionHandlers(HandlerRegistry &r) { r.add("Attention", 23, importAttention); }

} // namespace trc::import
