//===- TrcOps.cpp - verifiers of trc ops -----------------------------------===//
//
// Shape and element-type rules of each op. They are the contract the importer
// and every pass rely on: a verified trc op has a well-defined result.
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace trc;

namespace {
RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  llvm::interleave(shape, [&](int64_t d) { s += std::to_string(d); },
                   [&] { s += ", "; });
  return s + "]";
}

// Checks that `dims` are distinct and in [0, rank).
LogicalResult verifyDimList(Operation *op, StringRef what, ArrayRef<int64_t> dims,
                            int64_t rank) {
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return op->emitOpError() << what << " dimension " << d
                               << " is out of range for rank " << rank;
    if (!seen.insert(d).second)
      return op->emitOpError() << what << " dimension " << d << " is repeated";
  }
  return success();
}

LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError() << "axis " << axis << " is out of range for rank "
                             << rank;
  return success();
}

LogicalResult verifySameElementType(Operation *op, Type a, Type b, StringRef what) {
  if (getElementTypeOrSelf(a) != getElementTypeOrSelf(b))
    return op->emitOpError() << what << " element types differ: "
                             << getElementTypeOrSelf(a) << " vs "
                             << getElementTypeOrSelf(b);
  return success();
}
} // namespace

#define GET_OP_CLASSES
#include "TrcOps.cpp.inc"

//===----------------------------------------------------------------------===//

LogicalResult ParameterOp::verify() {
  if (auto init = getInitialValueAttr()) {
    if (init.getType() != getType())
      return emitOpError() << "initial value of type " << init.getType()
                           << " does not match the parameter type " << getType();
  }
  return success();
}

LogicalResult GetParameterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto param = symbols.lookupNearestSymbolFrom<ParameterOp>(*this, getNameAttr());
  if (!param)
    return emitOpError() << "'" << getName() << "' does not name a trc.parameter";
  if (param.getType() != getType())
    return emitOpError() << "result type " << getType()
                         << " does not match parameter type " << param.getType();
  return success();
}

LogicalResult IotaOp::verify() {
  return verifyAxis(*this, getDimension(), tensorOf(getResult()).getRank());
}

LogicalResult DotGeneralOp::verify() {
  auto lhs = tensorOf(getLhs()), rhs = tensorOf(getRhs());
  if (failed(verifySameElementType(*this, lhs, rhs, "operand")) ||
      failed(verifySameElementType(*this, lhs, getType(), "operand and result")))
    return failure();
  auto lb = getLhsBatchingDims(), rb = getRhsBatchingDims();
  auto lc = getLhsContractingDims(), rc = getRhsContractingDims();
  if (lb.size() != rb.size())
    return emitOpError("lhs and rhs have different numbers of batching dimensions");
  if (lc.size() != rc.size())
    return emitOpError("lhs and rhs have different numbers of contracting dimensions");
  SmallVector<int64_t> lhsUsed(lb), rhsUsed(rb);
  lhsUsed.append(lc.begin(), lc.end());
  rhsUsed.append(rc.begin(), rc.end());
  if (failed(verifyDimList(*this, "lhs", lhsUsed, lhs.getRank())) ||
      failed(verifyDimList(*this, "rhs", rhsUsed, rhs.getRank())))
    return failure();
  SmallVector<int64_t> expected;
  for (auto [l, r] : llvm::zip(lb, rb)) {
    if (lhs.getDimSize(l) != rhs.getDimSize(r))
      return emitOpError() << "batching dimension sizes differ: lhs dim " << l
                           << " is " << lhs.getDimSize(l) << ", rhs dim " << r
                           << " is " << rhs.getDimSize(r);
    expected.push_back(lhs.getDimSize(l));
  }
  for (auto [l, r] : llvm::zip(lc, rc))
    if (lhs.getDimSize(l) != rhs.getDimSize(r))
      return emitOpError() << "contracting dimension sizes differ: lhs dim " << l
                           << " is " << lhs.getDimSize(l) << ", rhs dim " << r
                           << " is " << rhs.getDimSize(r);
  for (int64_t i = 0; i < lhs.getRank(); ++i)
    if (!llvm::is_contained(lhsUsed, i))
      expected.push_back(lhs.getDimSize(i));
  for (int64_t i = 0; i < rhs.getRank(); ++i)
    if (!llvm::is_contained(rhsUsed, i))
      expected.push_back(rhs.getDimSize(i));
  if (ArrayRef<int64_t>(expected) != getType().getShape())
    return emitOpError() << "result shape " << shapeString(getType().getShape())
                         << " does not match the expected " << shapeString(expected);
  return success();
}

LogicalResult ReduceOp::verify() {
  auto in = tensorOf(getOperand());
  if (failed(verifySameElementType(*this, in, getType(), "operand and result")) ||
      failed(verifyDimList(*this, "reduced", getDimensions(), in.getRank())))
    return failure();
  SmallVector<int64_t> expected;
  for (int64_t i = 0; i < in.getRank(); ++i)
    if (!llvm::is_contained(getDimensions(), i))
      expected.push_back(in.getDimSize(i));
  if (ArrayRef<int64_t>(expected) != getType().getShape())
    return emitOpError() << "result shape " << shapeString(getType().getShape())
                         << " does not match the expected " << shapeString(expected);
  return success();
}

LogicalResult BroadcastInDimOp::verify() {
  auto in = tensorOf(getOperand());
  auto out = getType();
  if (failed(verifySameElementType(*this, in, out, "operand and result")))
    return failure();
  auto dims = getBroadcastDimensions();
  if (static_cast<int64_t>(dims.size()) != in.getRank())
    return emitOpError() << "has " << dims.size()
                         << " broadcast dimensions for an operand of rank "
                         << in.getRank();
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= out.getRank())
      return emitOpError() << "broadcast dimension " << d
                           << " is out of range for result rank " << out.getRank();
    if (i > 0 && d <= dims[i - 1])
      return emitOpError("broadcast dimensions must be strictly increasing");
    int64_t size = in.getDimSize(i);
    if (size != 1 && size != out.getDimSize(d))
      return emitOpError() << "operand dimension " << i << " of size " << size
                           << " cannot broadcast to result dimension " << d
                           << " of size " << out.getDimSize(d);
  }
  return success();
}

LogicalResult TransposeOp::verify() {
  auto in = tensorOf(getOperand());
  auto perm = getPermutation();
  if (failed(verifySameElementType(*this, in, getType(), "operand and result")))
    return failure();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOpError() << "permutation has " << perm.size()
                         << " entries for an operand of rank " << in.getRank();
  if (failed(verifyDimList(*this, "permutation", perm, in.getRank())))
    return failure();
  for (auto [i, p] : llvm::enumerate(perm))
    if (getType().getDimSize(i) != in.getDimSize(p))
      return emitOpError() << "result dimension " << i << " has size "
                           << getType().getDimSize(i) << ", expected "
                           << in.getDimSize(p);
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto in = tensorOf(getOperand());
  if (failed(verifySameElementType(*this, in, getType(), "operand and result")))
    return failure();
  if (in.getNumElements() != getType().getNumElements())
    return emitOpError() << "cannot reshape " << in.getNumElements()
                         << " elements into " << getType().getNumElements();
  return success();
}

LogicalResult SliceOp::verify() {
  auto in = tensorOf(getOperand());
  if (failed(verifySameElementType(*this, in, getType(), "operand and result")))
    return failure();
  auto start = getStartIndices(), limit = getLimitIndices(), strides = getStrides();
  int64_t rank = in.getRank();
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(limit.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitOpError() << "needs start, limit and strides of length " << rank;
  for (int64_t i = 0; i < rank; ++i) {
    if (strides[i] <= 0)
      return emitOpError() << "stride " << strides[i] << " in dimension " << i
                           << " is not positive";
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > in.getDimSize(i))
      return emitOpError() << "slice [" << start[i] << ", " << limit[i]
                           << ") is out of bounds for dimension " << i
                           << " of size " << in.getDimSize(i);
    int64_t size = (limit[i] - start[i] + strides[i] - 1) / strides[i];
    if (getType().getDimSize(i) != size)
      return emitOpError() << "result dimension " << i << " has size "
                           << getType().getDimSize(i) << ", expected " << size;
  }
  return success();
}

LogicalResult ReverseOp::verify() {
  return verifyDimList(*this, "reversed", getDimensions(), getType().getRank());
}

LogicalResult ConcatenateOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  auto out = getType();
  int64_t dim = getDimension();
  if (failed(verifyAxis(*this, dim, out.getRank())))
    return failure();
  int64_t total = 0;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    auto t = tensorOf(v);
    if (failed(verifySameElementType(*this, t, out, "input and result")))
      return failure();
    if (t.getRank() != out.getRank())
      return emitOpError() << "input " << i << " has rank " << t.getRank()
                           << ", expected " << out.getRank();
    for (int64_t d = 0; d < out.getRank(); ++d)
      if (d != dim && t.getDimSize(d) != out.getDimSize(d))
        return emitOpError() << "input " << i << " dimension " << d << " has size "
                             << t.getDimSize(d) << ", expected " << out.getDimSize(d);
    total += t.getDimSize(dim);
  }
  if (total != out.getDimSize(dim))
    return emitOpError() << "result dimension " << dim << " has size "
                         << out.getDimSize(dim) << ", inputs sum to " << total;
  return success();
}

LogicalResult PadOp::verify() {
  auto in = tensorOf(getOperand());
  if (failed(verifySameElementType(*this, in, getType(), "operand and result")) ||
      failed(verifySameElementType(*this, in, getPaddingValue().getType(),
                                   "operand and padding value")))
    return failure();
  if (tensorOf(getPaddingValue()).getRank() != 0)
    return emitOpError("padding value must be a scalar tensor");
  auto lo = getEdgePaddingLow(), hi = getEdgePaddingHigh();
  if (static_cast<int64_t>(lo.size()) != in.getRank() ||
      static_cast<int64_t>(hi.size()) != in.getRank())
    return emitOpError() << "needs low and high padding of length " << in.getRank();
  for (int64_t i = 0; i < in.getRank(); ++i) {
    if (lo[i] < 0 || hi[i] < 0)
      return emitOpError() << "negative padding in dimension " << i;
    if (getType().getDimSize(i) != in.getDimSize(i) + lo[i] + hi[i])
      return emitOpError() << "result dimension " << i << " has size "
                           << getType().getDimSize(i) << ", expected "
                           << in.getDimSize(i) + lo[i] + hi[i];
  }
  return success();
}

// Shape of gather's result, shared by gather and scatter_add.
static SmallVector<int64_t> gatherShape(RankedTensorType operand,
                                        RankedTensorType indices, int64_t axis) {
  SmallVector<int64_t> shape(operand.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, operand.getShape().drop_front(axis + 1));
  return shape;
}

LogicalResult GatherOp::verify() {
  auto in = tensorOf(getOperand());
  if (failed(verifySameElementType(*this, in, getType(), "operand and result")) ||
      failed(verifyAxis(*this, getAxis(), in.getRank())))
    return failure();
  auto expected = gatherShape(in, tensorOf(getIndices()), getAxis());
  if (ArrayRef<int64_t>(expected) != getType().getShape())
    return emitOpError() << "result shape " << shapeString(getType().getShape())
                         << " does not match the expected " << shapeString(expected);
  return success();
}

LogicalResult ScatterAddOp::verify() {
  auto in = tensorOf(getOperand());
  if (failed(verifySameElementType(*this, in, getType(), "operand and result")) ||
      failed(verifySameElementType(*this, in, getUpdates().getType(),
                                   "operand and updates")) ||
      failed(verifyAxis(*this, getAxis(), in.getRank())))
    return failure();
  if (in != getType())
    return emitOpError("result type must equal the operand type");
  auto expected = gatherShape(in, tensorOf(getIndices()), getAxis());
  if (ArrayRef<int64_t>(expected) != tensorOf(getUpdates()).getShape())
    return emitOpError() << "updates shape "
                         << shapeString(tensorOf(getUpdates()).getShape())
                         << " does not match the expected " << shapeString(expected);
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}

LogicalResult LayerNormOp::verify() {
  auto in = tensorOf(getOperand());
  if (in != getType())
    return emitOpError("result type must equal the operand type");
  if (failed(verifyAxis(*this, getAxis(), in.getRank())))
    return failure();
  if (getEpsilon().convertToDouble() < 0)
    return emitOpError("epsilon must be non-negative");
  auto normalized = in.getShape().drop_front(getAxis());
  for (Value v : {getScale(), getBias()}) {
    if (!v)
      continue;
    auto t = tensorOf(v);
    if (failed(verifySameElementType(*this, t, in, "scale/bias and operand")))
      return failure();
    if (t.getShape() != normalized)
      return emitOpError() << "scale and bias must have the normalized shape "
                           << shapeString(normalized) << ", got "
                           << shapeString(t.getShape());
  }
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  auto logits = tensorOf(getLogits()), labels = tensorOf(getLabels());
  if (failed(verifySameElementType(*this, logits, getType(), "logits and result")))
    return failure();
  if (logits.getRank() < 2)
    return emitOpError("logits must have rank >= 2 ([N, C, d...])");
  SmallVector<int64_t> expectedLabels{logits.getDimSize(0)};
  llvm::append_range(expectedLabels, logits.getShape().drop_front(2));
  if (ArrayRef<int64_t>(expectedLabels) != labels.getShape())
    return emitOpError() << "labels shape " << shapeString(labels.getShape())
                         << " does not match logits [N, C, d...]: expected "
                         << shapeString(expectedLabels);
  bool perSample = getReduction() == LossReduction::None;
  ArrayRef<int64_t> expected = perSample ? ArrayRef<int64_t>(expectedLabels)
                                         : ArrayRef<int64_t>();
  if (getType().getShape() != expected)
    return emitOpError() << "result shape " << shapeString(getType().getShape())
                         << " does not match the expected " << shapeString(expected);
  return success();
}

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError() << "ratio " << ratio << " is not in [0, 1)";
  return success();
}
