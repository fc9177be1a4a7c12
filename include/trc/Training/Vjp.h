//===- Vjp.h - vector-Jacobian product rules of trc ops ---------*- C++ -*-===//
//
// What the VJP rules of trc ops are written with, and how they are attached.
// Each differentiable trc op implements VjpOpInterface
// (dialects/Trc/TrcInterfaces.td) through an external model that calls its
// rule; registerVjpRules attaches them all (trc::registerAllDialects does it
// for every tool). A rule reads the op (its operands and result are forward
// values that stay live) and the gradient of the loss with respect to its
// result, and emits trc ops computing the gradient with respect to each
// operand the caller wants. Rules are grouped by op family (lib/Training/):
//   VjpElementwise.cpp  unary/binary elementwise, select, convert
//   VjpContraction.cpp  dot_general, reduce
//   VjpDataMovement.cpp broadcast_in_dim, transpose, reshape, slice, reverse,
//                       concatenate, pad, gather, scatter_add
//   VjpComposite.cpp    softmax, log_softmax, layer_norm, gelu, cross_entropy,
//                       attention
// Contract of a rule: it is called only when at least one operand is wanted;
// it sets a gradient (of the operand's exact type) for wanted operands only,
// and leaves an operand's gradient null when it is identically zero. It may
// emitError and fail when the op's attributes make it non-differentiable.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TRAINING_VJP_H
#define TRC_TRAINING_VJP_H

#include "trc/Dialect/Trc.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/DenseMap.h"

namespace trc::autodiff {

/// Splat constants already built, by value: one op per constant. (Every
/// op of the backward pass is inserted at one point in order, so a constant
/// built earlier dominates the ops built later.)
using ConstantCache = llvm::DenseMap<mlir::Attribute, mlir::Value>;

/// Builds core trc ops at one location, folding as it goes (x * 1, x + 0,
/// identity transposes/reshapes and constant arithmetic disappear).
class VjpBuilder {
public:
  VjpBuilder(mlir::OpBuilder &b, mlir::Location loc, ConstantCache *constants = nullptr)
      : b(b), loc(loc), constants(constants) {}

  mlir::OpBuilder &b;
  mlir::Location loc;
  ConstantCache *constants;

  static mlir::RankedTensorType type(mlir::Value v) {
    return mlir::cast<mlir::RankedTensorType>(v.getType());
  }

  /// A splat constant of type `t`.
  mlir::Value splat(mlir::RankedTensorType t, double v);
  /// A splat constant of `v`'s type.
  mlir::Value like(mlir::Value v, double c) { return splat(type(v), c); }
  mlir::Value zeros(mlir::RankedTensorType t) { return splat(t, 0.0); }

  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value div(mlir::Value x, mlir::Value y);
  mlir::Value neg(mlir::Value x);
  /// x * c for a constant c.
  mlir::Value scale(mlir::Value x, double c) { return mul(x, like(x, c)); }
  template <typename OpT> mlir::Value unary(mlir::Value x) {
    return b.createOrFold<OpT>(loc, x);
  }

  /// Elementwise comparison (an i1 tensor of `x`'s shape).
  mlir::Value compare(CompareDirection direction, mlir::Value x, mlir::Value y);
  mlir::Value select(mlir::Value pred, mlir::Value onTrue, mlir::Value onFalse);
  /// `x` converted to element type `element`.
  mlir::Value convert(mlir::Value x, mlir::Type element);

  /// Reduces `dims` away (nothing emitted when `dims` is empty).
  mlir::Value reduce(ReduceKind kind, mlir::Value x, llvm::ArrayRef<int64_t> dims);
  /// Broadcasts `x` to `shape` (x's dim i -> result dim dims[i]).
  mlir::Value broadcast(mlir::Value x, llvm::ArrayRef<int64_t> shape,
                        llvm::ArrayRef<int64_t> dims);
  /// Broadcasts the result of reducing `reducedDims` of a `full`-shaped
  /// tensor back to `full`'s shape.
  mlir::Value expand(mlir::Value reduced, mlir::RankedTensorType full,
                     llvm::ArrayRef<int64_t> reducedDims);
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  /// Result dim i is x's dim perm[i]; nothing emitted for the identity. A
  /// dot_general not used yet whose result only swaps its two free-dimension
  /// groups is rebuilt with its operands swapped instead.
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> perm);
  mlir::Value slice(mlir::Value x, llvm::ArrayRef<int64_t> start,
                    llvm::ArrayRef<int64_t> limit, llvm::ArrayRef<int64_t> strides);
  /// Pads with zeros (nothing emitted when all padding is zero).
  mlir::Value padZeros(mlir::Value x, llvm::ArrayRef<int64_t> low,
                       llvm::ArrayRef<int64_t> high);

  /// x + y for two gradient contributions to one value. Zero-padded pieces
  /// covering disjoint ranges of one dimension (the gradients of slices that
  /// split a tensor, e.g. attention's q, k and v) are joined with one
  /// concatenate instead of padded and added.
  mlir::Value accumulate(mlir::Value x, mlir::Value y);

  /// The adjoint of broadcast_in_dim: sums `grad` (of the broadcast's result
  /// shape) over the dims the broadcast created or stretched, reshaped to
  /// `operand`'s type.
  mlir::Value unbroadcast(mlir::Value grad, mlir::RankedTensorType operand,
                          llvm::ArrayRef<int64_t> broadcastDims);
};

/// What a rule sees and fills.
class VjpContext : public VjpBuilder {
public:
  VjpContext(mlir::OpBuilder &b, mlir::Operation *op, mlir::Value grad,
             llvm::ArrayRef<bool> wanted, ConstantCache *constants = nullptr)
      : VjpBuilder(b, op->getLoc(), constants), grad(grad), wanted_(wanted),
        operandGrads_(op->getNumOperands()) {}

  /// d loss / d (the op's result).
  mlir::Value grad;

  bool wants(unsigned operand) const { return wanted_[operand]; }
  /// Records d loss / d (operand); ignored when that operand is not wanted.
  void setGrad(unsigned operand, mlir::Value g) {
    if (wanted_[operand])
      operandGrads_[operand] = g;
  }
  llvm::ArrayRef<mlir::Value> operandGrads() const { return operandGrads_; }

  /// trc-autodiff's recompute-statistics: normalizations recompute their
  /// forward statistics behind a barrier rather than share the forward's.
  bool recomputeStatistics = true;

private:
  llvm::ArrayRef<bool> wanted_;
  llvm::SmallVector<mlir::Value> operandGrads_;
};

/// Attaches every VJP rule to its op (VjpOpInterface external models, applied
/// when the trc dialect is loaded). Idempotent.
void registerVjpRules(mlir::DialectRegistry &registry);

} // namespace trc::autodiff

#endif // TRC_TRAINING_VJP_H
