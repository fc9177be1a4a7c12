//===- VjpContraction.cpp - VJP rules of dot_general and reduce -----------===//
//
// dot_general: each operand's gradient is another dot_general of the result
// gradient with the other operand, contracting over that operand's free
// dimensions; the product comes out as (batch, free, the operand's
// contracting dims in the other operand's order), and one transpose (none
// for plain matrix products) restores the operand's dimension order.
//
// reduce: sum broadcasts the gradient back; max and min route it to every
// element equal to the result (all ties get it); prod divides the product
// by each element where no element is zero, and otherwise gives the lone
// zero the product of the others (two or more zeros: all zero).
//
//===----------------------------------------------------------------------===//
#include "VjpRules.h"

using namespace mlir;

namespace trc::autodiff {

static SmallVector<int64_t> freeDims(int64_t rank, ArrayRef<int64_t> batch,
                                     ArrayRef<int64_t> contract) {
  SmallVector<int64_t> free;
  for (int64_t i = 0; i < rank; ++i)
    if (!llvm::is_contained(batch, i) && !llvm::is_contained(contract, i))
      free.push_back(i);
  return free;
}

static SmallVector<int64_t> inversePermutation(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = static_cast<int64_t>(i);
  return inverse;
}

/// dims of `other` in increasing order that are in `otherContract`, each
/// mapped to its partner in `mineContract`.
static SmallVector<int64_t> partnersInOrder(ArrayRef<int64_t> otherContract,
                                            ArrayRef<int64_t> mineContract) {
  SmallVector<std::pair<int64_t, int64_t>> pairs;
  for (auto [o, m] : llvm::zip_equal(otherContract, mineContract))
    pairs.push_back({o, m});
  llvm::sort(pairs);
  return llvm::map_to_vector(pairs, [](auto p) { return p.second; });
}

LogicalResult vjp(DotGeneralOp op, VjpContext &c) {
  Value lhs = op.getLhs(), rhs = op.getRhs(), g = c.grad;
  auto lb = op.getLhsBatchingDims(), rb = op.getRhsBatchingDims();
  auto lc = op.getLhsContractingDims(), rc = op.getRhsContractingDims();
  auto lt = VjpBuilder::type(lhs), rt = VjpBuilder::type(rhs);
  auto lf = freeDims(lt.getRank(), lb, lc), rf = freeDims(rt.getRank(), rb, rc);
  int64_t nb = lb.size(), nlf = lf.size(), nrf = rf.size();
  // Positions of the batch, lhs-free and rhs-free dims in g.
  auto gBatch = llvm::to_vector(llvm::seq<int64_t>(0, nb));
  auto gLhsFree = llvm::to_vector(llvm::seq<int64_t>(nb, nb + nlf));
  auto gRhsFree = llvm::to_vector(llvm::seq<int64_t>(nb + nlf, nb + nlf + nrf));
  Type elem = lt.getElementType();

  auto product = [&](Value a, Value b, ArrayRef<int64_t> ab, ArrayRef<int64_t> bb,
                     ArrayRef<int64_t> ac, ArrayRef<int64_t> bc,
                     ArrayRef<int64_t> resultDimsInOperand,
                     RankedTensorType operand) {
    // Result shape of dot_general(a, b): batch, a's free, b's free.
    SmallVector<int64_t> shape;
    for (int64_t d : resultDimsInOperand)
      shape.push_back(operand.getDimSize(d));
    Value p = c.b.create<DotGeneralOp>(c.loc, RankedTensorType::get(shape, elem), a, b,
                                       ab, bb, ac, bc);
    return c.transpose(p, inversePermutation(resultDimsInOperand));
  };

  if (c.wants(0)) {
    // dot(g, rhs) contracting rhs's free dims: batch, lhs free, then rhs's
    // contracting dims in rhs order, i.e. their lhs partners.
    SmallVector<int64_t> dims(lb);
    llvm::append_range(dims, lf);
    llvm::append_range(dims, partnersInOrder(rc, lc));
    c.setGrad(0, product(g, rhs, gBatch, rb, gRhsFree, rf, dims, lt));
  }
  if (c.wants(1)) {
    // dot(lhs, g) contracting lhs's free dims: batch, lhs's contracting dims
    // in lhs order (their rhs partners), then rhs free.
    SmallVector<int64_t> dims(rb);
    llvm::append_range(dims, partnersInOrder(lc, rc));
    llvm::append_range(dims, rf);
    c.setGrad(1, product(lhs, g, lb, gBatch, lf, gLhsFree, dims, rt));
  }
  return success();
}

LogicalResult vjp(ReduceOp op, VjpContext &c) {
  Value x = op.getOperand();
  auto t = VjpBuilder::type(x);
  auto dims = op.getDimensions();
  Value g = c.expand(c.grad, t, dims);
  switch (op.getKind()) {
  case ReduceKind::Sum:
    c.setGrad(0, g);
    return success();
  case ReduceKind::Max:
  case ReduceKind::Min: {
    Value hit = c.compare(CompareDirection::EQ, x, c.expand(op.getResult(), t, dims));
    c.setGrad(0, c.select(hit, g, c.like(x, 0.0)));
    return success();
  }
  case ReduceKind::Prod: {
    Value zero = c.like(x, 0.0), one = c.like(x, 1.0);
    Value isZero = c.compare(CompareDirection::EQ, x, zero);
    Value nonZero = c.select(isZero, one, x);
    Value others = c.expand(c.reduce(ReduceKind::Prod, nonZero, dims), t, dims);
    Value zeros = c.expand(c.reduce(ReduceKind::Sum, c.select(isZero, one, zero), dims),
                           t, dims);
    Value noZero = c.compare(CompareDirection::EQ, zeros, zero);
    Value oneZero = c.compare(CompareDirection::EQ, zeros, one);
    // others / x where no element is zero; at the lone zero, the product of
    // the rest; 0 everywhere else.
    Value atZero = c.select(oneZero, others, zero);
    Value elsewhere = c.select(noZero, c.div(others, nonZero), zero);
    c.setGrad(0, c.mul(g, c.select(isZero, atZero, elsewhere)));
    return success();
  }
  }
  return op.emitOpError("has an unknown reduction kind");
}

} // namespace trc::autodiff
