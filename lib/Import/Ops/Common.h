//===- Common.h - building blocks the op handlers share ---------*- C++ -*-===//
//
// Small compositions of core trc ops that several ONNX op families need:
// iotas, comparisons, reductions with ONNX's axes/keepdims conventions,
// index wrapping, the windows of spatial ops (kernel offsets, spatial
// padding), and element-wise indexing along one axis (GatherElements,
// ScatterElements, TopK, ...) expressed as trc.gather / trc.scatter_add on
// the flattened tensor, so that those ops need no core op of their own and
// differentiate through the gather/scatter_add VJP rules.
//
// Every function returns null after recording an error on the node when a
// build fails (as ImportContext::build does).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_OPS_COMMON_H
#define TRC_LIB_IMPORT_OPS_COMMON_H

#include "../ImportContext.h"

#include <numeric>

namespace trc::import {

inline mlir::RankedTensorType typeOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType());
}

inline int64_t product(llvm::ArrayRef<int64_t> dims) {
  return std::accumulate(dims.begin(), dims.end(), int64_t(1), std::multiplies<>());
}

/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

/// An iota of `shape` along `dim` with element type `elem` (i64 by default).
mlir::Value iota(ImportContext &ctx, llvm::ArrayRef<int64_t> shape, int64_t dim,
                 mlir::Type elem = {});

/// trc.compare of two values of one shape (an i1 tensor).
mlir::Value compare(ImportContext &ctx, CompareDirection direction, mlir::Value a,
                    mlir::Value b);
/// trc.compare against a scalar constant broadcast to `a`'s shape.
mlir::Value compareWith(ImportContext &ctx, CompareDirection direction, mlir::Value a,
                        double value);
mlir::Value select(ImportContext &ctx, mlir::Value pred, mlir::Value onTrue,
                   mlir::Value onFalse);
/// A constant with `like`'s type, every element `value`.
mlir::Value splatLike(ImportContext &ctx, mlir::Value like, double value);

/// trc.reduce over `dims` (a set; the result drops them).
mlir::Value reduce(ImportContext &ctx, ReduceKind kind, mlir::Value x,
                   llvm::ArrayRef<int64_t> dims);
/// `reduced` (x reduced over `dims`) broadcast back to `shape`.
mlir::Value expandReduced(ImportContext &ctx, mlir::Value reduced,
                          llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> dims);
/// `shape` with the dims in `dims` set to 1 (ONNX keepdims).
llvm::SmallVector<int64_t> keptShape(llvm::ArrayRef<int64_t> shape,
                                     llvm::ArrayRef<int64_t> dims);

/// Integer indices (any integer type) as i64 with negative values wrapped
/// by `size` (i < 0 ? i + size : i).
mlir::Value wrapIndices(ImportContext &ctx, mlir::Value indices, int64_t size);

/// Linear (row-major) indices into a tensor of `dataShape` for an index
/// tensor `indices` (i64, already wrapped, shape I of the same rank) that
/// replaces coordinate `axis`: the position of element i is
/// (i_0, ..., indices[i], ..., i_{r-1}). The shape I may be smaller than
/// `dataShape` on the other axes.
mlir::Value linearIndicesAlong(ImportContext &ctx, llvm::ArrayRef<int64_t> dataShape,
                               mlir::Value indices, int64_t axis);

/// out[i] = data[i_0, ..., indices[i], ...] along `axis` (ONNX
/// GatherElements) with wrapped i64 indices: trc.gather on flat data.
mlir::Value gatherAlong(ImportContext &ctx, mlir::Value data, mlir::Value indices,
                        int64_t axis);

/// Adds `updates` (shape of `indices`) into `data` at the positions of
/// `indices` along `axis` (ONNX ScatterElements reduction add): trc.scatter_add
/// on flat data.
mlir::Value scatterAddAlong(ImportContext &ctx, mlir::Value data, mlir::Value indices,
                            mlir::Value updates, int64_t axis);

/// ONNX ScatterElements without reduction: `updates` replace the elements of
/// `data` at the positions of `indices` (distinct, as ONNX requires).
mlir::Value scatterAlong(ImportContext &ctx, mlir::Value data, mlir::Value indices,
                         mlir::Value updates, int64_t axis);

/// The index of the largest (or smallest) element along `axis`: the first
/// one, or the last with `last`; i64, the axis dropped.
mlir::Value argExtremum(ImportContext &ctx, mlir::Value x, int64_t axis, bool largest,
                        bool last);

/// Input 0 when it is a float tensor; null after an error (a missing
/// input, or "the input must be a float tensor, got T").
mlir::Value floatInput(ImportContext &ctx);

/// The values of a constant scalar input of any numeric type (OneHot's
/// depth, Range's limits...).
std::optional<double> constantNumber(ImportContext &ctx, int input, llvm::StringRef what);

/// Spatial-op attributes (Conv, ConvTranspose, pooling): `name` as `count`
/// integers, `fill` when absent; an error when the length differs.
std::optional<llvm::SmallVector<int64_t>> spatialInts(ImportContext &ctx,
                                                      llvm::StringRef name, size_t count,
                                                      int64_t fill);

/// Values of one rank concatenated along `axis` (already normalized); an
/// error when ranks or element types differ.
mlir::Value concatAlong(ImportContext &ctx, llvm::ArrayRef<mlir::Value> values,
                        int64_t axis);

/// `x` cut along `axis` into consecutive pieces of `sizes` (which must add up
/// to the axis' size): Split, SplitToSequence. Empty after an error.
llvm::SmallVector<mlir::Value> splitAlong(ImportContext &ctx, mlir::Value x,
                                          int64_t axis, llvm::ArrayRef<int64_t> sizes);

/// Every offset of a window of `kernel` sizes, row-major (Conv's im2col,
/// ConvTranspose's placements, pooling's window slices).
llvm::SmallVector<llvm::SmallVector<int64_t>> kernelOffsets(llvm::ArrayRef<int64_t> kernel);

/// x [N, C, spatial...] padded with `value` by `low`/`high` on the spatial
/// dims (non-negative); x itself when every pad is 0.
mlir::Value padSpatial(ImportContext &ctx, mlir::Value x, llvm::ArrayRef<int64_t> low,
                       llvm::ArrayRef<int64_t> high, double value = 0);

} // namespace trc::import

#endif
