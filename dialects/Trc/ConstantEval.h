//===- ConstantEval.h - evaluates trc ops on constant operands --*- C++ -*-===//
//
// Compile-time evaluation shared by the folders: data movement (gather,
// slice, transpose, broadcast, concatenate), conversion, comparison and
// selection over DenseElementsAttr. These are what shape subgraphs of
// dynamic-axes exports reduce to once input shapes are static. Results over
// kMaxFoldElements elements are not folded (left to run time).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DIALECTS_TRC_CONSTANTEVAL_H
#define TRC_DIALECTS_TRC_CONSTANTEVAL_H

#include "trc/Dialect/Trc.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace trc::eval {

constexpr int64_t kMaxFoldElements = int64_t(1) << 20;

/// A constant of `type` whose element i is `source`'s element `sourceIndex(i)`.
mlir::Attribute remap(mlir::DenseElementsAttr source, mlir::RankedTensorType type,
                      llvm::function_ref<int64_t(int64_t)> sourceIndex);

/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

mlir::Attribute convert(mlir::DenseElementsAttr source, mlir::RankedTensorType type);
mlir::Attribute compare(CompareDirection direction, mlir::DenseElementsAttr lhs,
                        mlir::DenseElementsAttr rhs, mlir::RankedTensorType type);
mlir::Attribute select(mlir::DenseElementsAttr pred, mlir::DenseElementsAttr onTrue,
                       mlir::DenseElementsAttr onFalse);
mlir::Attribute concatenate(llvm::ArrayRef<mlir::DenseElementsAttr> inputs,
                            int64_t dimension, mlir::RankedTensorType type);

} // namespace trc::eval

#endif
