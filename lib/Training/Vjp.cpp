//===- Vjp.cpp - the builder helpers the VJP rules share -------------------===//
//
// VjpBuilder (include/trc/Training/Vjp.h): builders fold through the trc
// folders, so rules may write the general formula and let identities (x * 1,
// transposes by the identity...) vanish.
//
//===----------------------------------------------------------------------===//
#include "trc/Training/Vjp.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace trc::autodiff {

Value VjpBuilder::splat(RankedTensorType t, double v) {
  Type elem = t.getElementType();
  Attribute a = isa<FloatType>(elem)
                    ? Attribute(b.getFloatAttr(elem, v))
                    : Attribute(b.getIntegerAttr(elem, static_cast<int64_t>(v)));
  auto value = SplatElementsAttr::get(t, a);
  if (!constants)
    return b.create<ConstantOp>(loc, value);
  Value &cached = (*constants)[value];
  if (!cached)
    cached = b.create<ConstantOp>(loc, value);
  return cached;
}

Value VjpBuilder::add(Value x, Value y) { return b.createOrFold<AddOp>(loc, x, y); }
Value VjpBuilder::sub(Value x, Value y) { return b.createOrFold<SubOp>(loc, x, y); }
Value VjpBuilder::mul(Value x, Value y) { return b.createOrFold<MulOp>(loc, x, y); }
Value VjpBuilder::div(Value x, Value y) { return b.createOrFold<DivOp>(loc, x, y); }
Value VjpBuilder::neg(Value x) { return b.createOrFold<NegOp>(loc, x); }

Value VjpBuilder::compare(CompareDirection direction, Value x, Value y) {
  auto pred = RankedTensorType::get(type(x).getShape(), b.getI1Type());
  return b.createOrFold<CompareOp>(loc, pred, direction, x, y);
}

Value VjpBuilder::select(Value pred, Value onTrue, Value onFalse) {
  return b.createOrFold<SelectOp>(loc, onTrue.getType(), pred, onTrue, onFalse);
}

Value VjpBuilder::convert(Value x, Type element) {
  if (type(x).getElementType() == element)
    return x;
  return b.createOrFold<ConvertOp>(loc, type(x).clone(element), x);
}

Value VjpBuilder::reduce(ReduceKind kind, Value x, ArrayRef<int64_t> dims) {
  if (dims.empty())
    return x;
  SmallVector<int64_t> kept;
  for (int64_t i = 0; i < type(x).getRank(); ++i)
    if (!llvm::is_contained(dims, i))
      kept.push_back(type(x).getDimSize(i));
  return b.createOrFold<ReduceOp>(loc, type(x).clone(kept), kind, x, dims);
}

Value VjpBuilder::broadcast(Value x, ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
  return b.createOrFold<BroadcastInDimOp>(loc, type(x).clone(shape), x, dims);
}

Value VjpBuilder::expand(Value reduced, RankedTensorType full,
                         ArrayRef<int64_t> reducedDims) {
  SmallVector<int64_t> kept;
  for (int64_t i = 0; i < full.getRank(); ++i)
    if (!llvm::is_contained(reducedDims, i))
      kept.push_back(i);
  return broadcast(reduced, full.getShape(), kept);
}

Value VjpBuilder::reshape(Value x, ArrayRef<int64_t> shape) {
  if (type(x).getShape() == shape)
    return x;
  return b.createOrFold<ReshapeOp>(loc, type(x).clone(shape), x);
}

/// dot_general(a, b) gives (batch, a free, b free); dot_general(b, a) gives
/// (batch, b free, a free). Returns the swapped product when `x` is a
/// product nothing uses yet and `perm` is exactly that swap, else null.
/// The original product is left for trc-autodiff's final clean-up (another
/// gradient may still refer to it); the swapped one is placed beside it.
static Value swappedProduct(OpBuilder &b, Value x, ArrayRef<int64_t> perm) {
  auto dot = x.getDefiningOp<DotGeneralOp>();
  if (!dot || !x.use_empty())
    return {};
  int64_t nb = dot.getLhsBatchingDims().size();
  int64_t nlf = dot.getLhs().getType().getRank() - nb -
                static_cast<int64_t>(dot.getLhsContractingDims().size());
  int64_t rank = static_cast<int64_t>(perm.size());
  SmallVector<int64_t> swap = llvm::to_vector(llvm::seq<int64_t>(0, nb));
  llvm::append_range(swap, llvm::seq<int64_t>(nb + nlf, rank));
  llvm::append_range(swap, llvm::seq<int64_t>(nb, nb + nlf));
  if (ArrayRef<int64_t>(swap) != perm)
    return {};
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(dot.getType().getDimSize(p));
  // Right after the original, not here: a weight's gradient is the
  // transpose of its transposed image's, and the image's VJP comes last in
  // the backward (the image is made at the top of the forward). Built here,
  // every layer's weight gradient would wait for the end of the backward,
  // holding each layer's activations and output gradients until then.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(dot);
  auto swapped = b.create<DotGeneralOp>(
      dot.getLoc(), dot.getType().clone(shape), dot.getRhs(), dot.getLhs(),
      dot.getRhsBatchingDims(), dot.getLhsBatchingDims(), dot.getRhsContractingDims(),
      dot.getLhsContractingDims());
  // Its stage and phase (trc-autodiff's marks) are the original's.
  swapped->setDiscardableAttrs(dot->getDiscardableAttrDictionary());
  return swapped;
}

Value VjpBuilder::transpose(Value x, ArrayRef<int64_t> perm) {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return x;
  if (Value swapped = swappedProduct(b, x, perm))
    return swapped;
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type(x).getDimSize(p));
  return b.createOrFold<TransposeOp>(loc, type(x).clone(shape), x, perm);
}

Value VjpBuilder::slice(Value x, ArrayRef<int64_t> start, ArrayRef<int64_t> limit,
                        ArrayRef<int64_t> strides) {
  SmallVector<int64_t> shape;
  for (size_t i = 0; i < start.size(); ++i)
    shape.push_back(limit[i] <= start[i]
                        ? 0
                        : (limit[i] - start[i] + strides[i] - 1) / strides[i]);
  return b.createOrFold<SliceOp>(loc, type(x).clone(shape), x, start, limit, strides);
}

Value VjpBuilder::padZeros(Value x, ArrayRef<int64_t> low, ArrayRef<int64_t> high) {
  if (llvm::all_of(low, [](int64_t v) { return v == 0; }) &&
      llvm::all_of(high, [](int64_t v) { return v == 0; }))
    return x;
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < type(x).getRank(); ++i)
    shape.push_back(type(x).getDimSize(i) + low[i] + high[i]);
  Value zero = splat(RankedTensorType::get({}, type(x).getElementType()), 0.0);
  return b.create<PadOp>(loc, type(x).clone(shape), x, zero, low, high);
}

/// `v` is trc.pad of a zero constant; returns that pad, else null.
static PadOp zeroPad(Value v) {
  auto pad = v.getDefiningOp<PadOp>();
  SplatElementsAttr value;
  if (!pad || !matchPattern(pad.getPaddingValue(), m_Constant(&value)))
    return {};
  Attribute zero = value.getSplatValue<Attribute>();
  if (auto f = dyn_cast<FloatAttr>(zero); f && f.getValue().isZero())
    return pad;
  return {};
}

Value VjpBuilder::accumulate(Value x, Value y) {
  PadOp pa = zeroPad(x), pb = zeroPad(y);
  if (!pa || !pb)
    return add(x, y);
  auto la = pa.getEdgePaddingLow(), ha = pa.getEdgePaddingHigh();
  auto lb = pb.getEdgePaddingLow(), hb = pb.getEdgePaddingHigh();
  // One dimension where the pieces differ; identical padding elsewhere.
  int64_t rank = type(x).getRank(), dim = -1;
  for (int64_t d = 0; d < rank; ++d) {
    if (la[d] == lb[d] && ha[d] == hb[d])
      continue;
    if (dim >= 0)
      return add(x, y);
    dim = d;
  }
  if (dim < 0)
    return add(x, y);
  if (lb[dim] < la[dim]) {
    std::swap(pa, pb);
    std::swap(la, lb);
    std::swap(ha, hb);
  }
  Value first = pa.getOperand(), second = pb.getOperand();
  int64_t gap = lb[dim] - (la[dim] + type(first).getDimSize(dim));
  if (gap < 0)
    return add(x, y); // overlapping pieces
  // Pieces in order, flattening a concatenate built by an earlier merge.
  SmallVector<Value> pieces;
  auto append = [&](Value v, PadOp pad) {
    auto concat = v.getDefiningOp<ConcatenateOp>();
    if (concat && concat.getDimension() == dim && v.hasOneUse() &&
        *v.user_begin() == pad && pad.getResult().use_empty())
      llvm::append_range(pieces, concat.getInputs());
    else
      pieces.push_back(v);
  };
  append(first, pa);
  if (gap > 0) {
    SmallVector<int64_t> shape(type(first).getShape());
    shape[dim] = gap;
    pieces.push_back(zeros(type(first).clone(shape)));
  }
  append(second, pb);
  SmallVector<int64_t> shape(type(first).getShape());
  shape[dim] = 0;
  for (Value p : pieces)
    shape[dim] += type(p).getDimSize(dim);
  Value joined = b.create<ConcatenateOp>(loc, type(first).clone(shape), pieces, dim);
  SmallVector<int64_t> low(la), high(ha);
  high[dim] = hb[dim];
  return padZeros(joined, low, high);
}

Value VjpBuilder::unbroadcast(Value grad, RankedTensorType operand,
                              ArrayRef<int64_t> broadcastDims) {
  auto result = type(grad);
  SmallVector<int64_t> summed;
  for (int64_t d = 0; d < result.getRank(); ++d) {
    auto it = llvm::find(broadcastDims, d);
    if (it == broadcastDims.end()) {
      summed.push_back(d);
      continue;
    }
    int64_t k = it - broadcastDims.begin();
    if (operand.getDimSize(k) == 1 && result.getDimSize(d) != 1)
      summed.push_back(d);
  }
  return reshape(reduce(ReduceKind::Sum, grad, summed), operand.getShape());
}

} // namespace trc::autodiff
