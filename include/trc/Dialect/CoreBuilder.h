//===- CoreBuilder.h - core trc ops built at one location -------*- C++ -*-===//
//
// A small builder for the rewrites that expand an op into core trc ops
// (trc-decompose-composites, trc-ring-attention): splats, reductions that
// keep or drop their dims, batched products, element-wise arithmetic.
// Preconditions: static shapes; `b` has its insertion point set.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DIALECT_COREBUILDER_H
#define TRC_DIALECT_COREBUILDER_H

#include "trc/Dialect/Trc.h"

#include "mlir/IR/Builders.h"

namespace trc {

struct CoreBuilder {
  mlir::OpBuilder &b;
  mlir::Location loc;

  mlir::RankedTensorType type(mlir::Value v) {
    return mlir::cast<mlir::RankedTensorType>(v.getType());
  }

  mlir::Value splat(mlir::RankedTensorType t, double v) {
    mlir::Attribute a = mlir::isa<mlir::FloatType>(t.getElementType())
                            ? mlir::Attribute(b.getFloatAttr(t.getElementType(), v))
                            : mlir::Attribute(b.getIntegerAttr(t.getElementType(),
                                                               static_cast<int64_t>(v)));
    return b.create<ConstantOp>(loc, mlir::SplatElementsAttr::get(t, a));
  }
  mlir::Value like(mlir::Value v, double c) { return splat(type(v), c); }

  /// Reduces `dims` away.
  mlir::Value reduce(ReduceKind kind, mlir::Value x, llvm::ArrayRef<int64_t> dims) {
    llvm::SmallVector<int64_t> kept;
    for (int64_t i = 0; i < type(x).getRank(); ++i)
      if (!llvm::is_contained(dims, i))
        kept.push_back(type(x).getDimSize(i));
    return b.create<ReduceOp>(loc, mlir::RankedTensorType::get(kept, type(x).getElementType()),
                              kind, x, dims);
  }
  /// Broadcasts a reduction result back over the reduced `dims` of `shape`.
  mlir::Value expand(mlir::Value r, mlir::RankedTensorType shape, llvm::ArrayRef<int64_t> dims) {
    llvm::SmallVector<int64_t> map;
    for (int64_t i = 0; i < shape.getRank(); ++i)
      if (!llvm::is_contained(dims, i))
        map.push_back(i);
    return b.create<BroadcastInDimOp>(
        loc, mlir::RankedTensorType::get(shape.getShape(), type(r).getElementType()), r, map);
  }
  /// reduce then broadcast back: the shape of `x`.
  mlir::Value reduceKeep(ReduceKind kind, mlir::Value x, llvm::ArrayRef<int64_t> dims) {
    return expand(reduce(kind, x, dims), type(x), dims);
  }

  mlir::Value convert(mlir::Value x, mlir::Type element) {
    if (type(x).getElementType() == element)
      return x;
    return b.create<ConvertOp>(loc, type(x).clone(element), x);
  }
  /// A batched product of rank-r operands over batch dims [0, r-2),
  /// contracting lhs dim `lc` with rhs dim `rc`.
  mlir::Value product(mlir::Value lhs, mlir::Value rhs, int64_t lc, int64_t rc) {
    int64_t rank = type(lhs).getRank();
    llvm::SmallVector<int64_t> batch = llvm::to_vector(llvm::seq<int64_t>(0, rank - 2));
    llvm::SmallVector<int64_t> shape(type(lhs).getShape().take_front(rank - 2));
    shape.push_back(type(lhs).getDimSize(lc == rank - 1 ? rank - 2 : rank - 1));
    shape.push_back(type(rhs).getDimSize(rc == rank - 1 ? rank - 2 : rank - 1));
    return b.create<DotGeneralOp>(loc, type(lhs).clone(shape), lhs, rhs, batch, batch,
                                  llvm::ArrayRef<int64_t>{lc}, llvm::ArrayRef<int64_t>{rc});
  }

  mlir::Value add(mlir::Value x, mlir::Value y) { return b.create<AddOp>(loc, x, y); }
  mlir::Value sub(mlir::Value x, mlir::Value y) { return b.create<SubOp>(loc, x, y); }
  mlir::Value mul(mlir::Value x, mlir::Value y) { return b.create<MulOp>(loc, x, y); }
  mlir::Value div(mlir::Value x, mlir::Value y) { return b.create<DivOp>(loc, x, y); }
  mlir::Value max(mlir::Value x, mlir::Value y) { return b.create<MaxOp>(loc, x, y); }
  mlir::Value exp(mlir::Value x) { return b.create<ExpOp>(loc, x); }
  mlir::Value log(mlir::Value x) { return b.create<LogOp>(loc, x); }
};

} // namespace trc

#endif // TRC_DIALECT_COREBUILDER_H
