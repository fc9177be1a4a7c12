//===- TrcAttention.cpp - verifiers of the attention ops -------------------===//
//
// Shape rules of dialects/Trc/TrcAttention.td: q [b..., Tq, D], k [b...,
// Tk, D], v [b..., Tk, Dv], one element type; the mask has the scores'
// shape [b..., Tq, Tk] or 1 in dims it is the same along; the result (and the gradient) has q's batch dims,
// Tq and Dv.
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"

using namespace mlir;
using namespace trc;

namespace {
/// The scores' shape [b..., Tq, Tk] if q, k, v fit together, else an error.
FailureOr<SmallVector<int64_t>> verifyOperands(Operation *op, Value qv, Value kv, Value vv,
                                               Value mask) {
  auto q = cast<RankedTensorType>(qv.getType());
  auto k = cast<RankedTensorType>(kv.getType());
  auto v = cast<RankedTensorType>(vv.getType());
  if (q.getRank() < 3)
    return op->emitOpError("expects q of rank 3 or more ([batch..., Tq, D]), got rank ")
           << q.getRank();
  if (k.getRank() != q.getRank() || v.getRank() != q.getRank())
    return op->emitOpError("expects q, k and v of one rank, got ")
           << q.getRank() << ", " << k.getRank() << " and " << v.getRank();
  if (k.getElementType() != q.getElementType() || v.getElementType() != q.getElementType())
    return op->emitOpError("expects q, k and v of one element type");
  int64_t rank = q.getRank();
  if (q.getShape().drop_back(2) != k.getShape().drop_back(2) ||
      q.getShape().drop_back(2) != v.getShape().drop_back(2))
    return op->emitOpError("expects q, k and v with the same batch dimensions");
  if (q.getDimSize(rank - 1) != k.getDimSize(rank - 1))
    return op->emitOpError("q has head size ")
           << q.getDimSize(rank - 1) << " but k has " << k.getDimSize(rank - 1);
  if (k.getDimSize(rank - 2) != v.getDimSize(rank - 2))
    return op->emitOpError("k has ") << k.getDimSize(rank - 2) << " keys but v has "
                                     << v.getDimSize(rank - 2);
  SmallVector<int64_t> scores(q.getShape().drop_back(1));
  scores.push_back(k.getDimSize(rank - 2));
  if (mask) {
    auto maskShape = cast<RankedTensorType>(mask.getType()).getShape();
    bool broadcastable = maskShape.size() == scores.size();
    for (size_t i = 0; broadcastable && i < scores.size(); ++i)
      broadcastable = maskShape[i] == scores[i] || maskShape[i] == 1;
    if (!broadcastable)
      return op->emitOpError("expects a mask of the scores' shape [batch..., Tq, Tk] "
                             "(or 1 in dims it is the same along)");
  }
  return scores;
}

/// [b..., Tq, Dv]: what the forward returns.
SmallVector<int64_t> resultShape(Value q, Value v) {
  SmallVector<int64_t> shape(cast<RankedTensorType>(q.getType()).getShape().drop_back(1));
  shape.push_back(cast<RankedTensorType>(v.getType()).getShape().back());
  return shape;
}
} // namespace

LogicalResult AttentionOp::verify() {
  if (failed(verifyOperands(*this, getQ(), getK(), getV(), getMask())))
    return failure();
  auto expected = RankedTensorType::get(resultShape(getQ(), getV()),
                                        getQ().getType().getElementType());
  if (getType() != expected)
    return emitOpError("result must be ") << expected << ", got " << getType();
  return success();
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyOperands(*this, getQ(), getK(), getV(), getMask())))
    return failure();
  auto expected = RankedTensorType::get(resultShape(getQ(), getV()),
                                        getQ().getType().getElementType());
  if (getResultGrad().getType() != expected)
    return emitOpError("result_grad must be ") << expected << ", got "
                                               << getResultGrad().getType();
  if (getQGrad().getType() != getQ().getType() || getKGrad().getType() != getK().getType() ||
      getVGrad().getType() != getV().getType())
    return emitOpError("gradients must have the types of q, k and v");
  return success();
}
