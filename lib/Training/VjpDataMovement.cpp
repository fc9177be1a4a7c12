//===- VjpDataMovement.cpp - VJP rules of ops that move elements ----------===//
//
// Each rule moves the gradient back to where the elements came from:
// broadcast_in_dim sums over the broadcast dims, transpose applies the
// inverse permutation, reshape reshapes back, reverse reverses again,
// concatenate slices, pad slices the interior (the padding value gets the
// sum of the border), gather scatter-adds into zeros (repeated indices sum),
// scatter_add gathers. slice pads with zeros: stride 1 is one trc.pad; a
// stride s > 1 first interleaves s - 1 zeros after each element (reshape to
// [n, 1], pad to [n, s], reshape to [n * s]).
//
//===----------------------------------------------------------------------===//
#include "VjpRules.h"

using namespace mlir;

namespace trc::autodiff {

LogicalResult vjp(BroadcastInDimOp op, VjpContext &c) {
  c.setGrad(0, c.unbroadcast(c.grad, VjpBuilder::type(op.getOperand()),
                             op.getBroadcastDimensions()));
  return success();
}

LogicalResult vjp(TransposeOp op, VjpContext &c) {
  auto perm = op.getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  c.setGrad(0, c.transpose(c.grad, inverse));
  return success();
}

LogicalResult vjp(ReshapeOp op, VjpContext &c) {
  c.setGrad(0, c.reshape(c.grad, VjpBuilder::type(op.getOperand()).getShape()));
  return success();
}

// The barrier returns its operand: so does its gradient (the barrier is the
// forward's, to keep CSE off it; the backward needs none).
LogicalResult vjp(OptimizationBarrierOp, VjpContext &c) {
  c.setGrad(0, c.grad);
  return success();
}

LogicalResult vjp(SliceOp op, VjpContext &c) {
  auto in = VjpBuilder::type(op.getOperand());
  auto out = op.getType();
  if (out.getNumElements() == 0) {
    c.setGrad(0, c.zeros(in));
    return success();
  }
  auto start = op.getStartIndices(), strides = op.getStrides();
  int64_t rank = in.getRank();
  Value g = c.grad;
  // extent[d]: how many operand elements from start[d] on g covers.
  SmallVector<int64_t> extent(out.getShape());
  for (int64_t d = 0; d < rank; ++d) {
    int64_t n = out.getDimSize(d), s = strides[d];
    if (s == 1 || n == 1)
      continue;
    SmallVector<int64_t> shape(VjpBuilder::type(g).getShape());
    SmallVector<int64_t> split(shape);
    split.insert(split.begin() + d + 1, 1);
    SmallVector<int64_t> low(rank + 1, 0), high(rank + 1, 0);
    high[d + 1] = s - 1;
    g = c.padZeros(c.reshape(g, split), low, high);
    shape[d] = n * s;
    g = c.reshape(g, shape);
    extent[d] = n * s;
  }
  // The last element's trailing zeros may run past the operand: trim them.
  SmallVector<int64_t> trimmed(extent);
  for (int64_t d = 0; d < rank; ++d)
    trimmed[d] = std::min(extent[d], in.getDimSize(d) - start[d]);
  if (trimmed != extent)
    g = c.slice(g, SmallVector<int64_t>(rank, 0), trimmed, SmallVector<int64_t>(rank, 1));
  SmallVector<int64_t> high;
  for (int64_t d = 0; d < rank; ++d)
    high.push_back(in.getDimSize(d) - start[d] - trimmed[d]);
  c.setGrad(0, c.padZeros(g, start, high));
  return success();
}

LogicalResult vjp(ReverseOp op, VjpContext &c) {
  c.setGrad(0, c.b.create<ReverseOp>(c.loc, c.grad, op.getDimensions()));
  return success();
}

LogicalResult vjp(ConcatenateOp op, VjpContext &c) {
  int64_t dim = op.getDimension(), offset = 0;
  auto shape = op.getType().getShape();
  for (auto [i, input] : llvm::enumerate(op.getInputs())) {
    int64_t size = VjpBuilder::type(input).getDimSize(dim);
    if (c.wants(i)) {
      SmallVector<int64_t> start(shape.size(), 0), limit(shape);
      start[dim] = offset;
      limit[dim] = offset + size;
      c.setGrad(i, c.slice(c.grad, start, limit, SmallVector<int64_t>(shape.size(), 1)));
    }
    offset += size;
  }
  return success();
}

LogicalResult vjp(PadOp op, VjpContext &c) {
  auto in = VjpBuilder::type(op.getOperand());
  auto low = op.getEdgePaddingLow();
  SmallVector<int64_t> limit;
  for (int64_t d = 0; d < in.getRank(); ++d)
    limit.push_back(low[d] + in.getDimSize(d));
  SmallVector<int64_t> ones(in.getRank(), 1);
  Value interior = c.slice(c.grad, low, limit, ones);
  c.setGrad(0, interior);
  if (c.wants(1)) {
    auto all = llvm::to_vector(llvm::seq<int64_t>(0, in.getRank()));
    c.setGrad(1, c.sub(c.reduce(ReduceKind::Sum, c.grad, all),
                       c.reduce(ReduceKind::Sum, interior, all)));
  }
  return success();
}

LogicalResult vjp(GatherOp op, VjpContext &c) {
  auto in = VjpBuilder::type(op.getOperand());
  c.setGrad(0, c.b.create<ScatterAddOp>(c.loc, in, c.zeros(in), op.getIndices(), c.grad,
                                        op.getAxis()));
  return success();
}

LogicalResult vjp(ScatterAddOp op, VjpContext &c) {
  c.setGrad(0, c.grad);
  if (c.wants(2))
    c.setGrad(2, c.b.create<GatherOp>(c.loc, op.getUpdates().getType(), c.grad,
                                      op.getIndices(), op.getAxis()));
  return success();
}

} // namespace trc::autodiff
