//===- Reshard.h - collectives that move a value between shardings -*- C++ -*-===//
//
// What trc-partition inserts where a value's sharding differs from what its
// user computes in: a partial resolved by all-reduce (or reduce-scatter
// when the target splits a dim), a split dim all-gathered, a whole dim
// sliced to this rank's part (no communication). Dim collectives are built
// from the 1-D trc collectives with transposes and reshapes around them,
// block splits included. Also the rank-dependent offset of this rank's part
// of a split dim, for masked lookups.
// Preconditions: `value` is per-rank (already partitioned); axes map to
// communicator groups (today only `tensor`).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PARALLEL_RESHARD_H
#define TRC_PARALLEL_RESHARD_H

#include "trc/Parallel/Sharding.h"

#include "mlir/IR/Builders.h"

namespace trc::parallel {

/// The permutation moving dim `d` of a rank-`rank` tensor to the front,
/// the others in order: a dim collective's layout (its 1-D chunk per rank).
llvm::SmallVector<int64_t> dimToFront(int64_t d, int64_t rank);

/// The communicator group a grid axis' collectives run on, or failure.
mlir::FailureOr<CollectiveGroup> groupOfAxis(llvm::StringRef axis);

/// `value` (sharded as `from`) as `to`. Fails (with an error at `loc`)
/// on a change it cannot make: a whole value made partial.
mlir::FailureOr<mlir::Value> reshard(mlir::OpBuilder &b, mlir::Location loc,
                                     mlir::Value value, const Sharding &from,
                                     const Sharding &to, const Grid &grid);

/// This rank's row of a constant [shards, perRank] i64 table (row-major
/// `table`), sliced by its index in `group` (no communication): the
/// rank-dependent indices and offsets a partitioned program reads.
mlir::Value rankRowOf(mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<int64_t> table,
                      int64_t perRank, CollectiveGroup group, int64_t shards);

/// This rank's first index along a dim of size `fullSize` split over
/// `axis` in one block, in every element of a tensor of integer `type`.
mlir::Value partOffset(mlir::OpBuilder &b, mlir::Location loc, llvm::StringRef axis,
                       int64_t fullSize, const Grid &grid, mlir::RankedTensorType type);

} // namespace trc::parallel

#endif // TRC_PARALLEL_RESHARD_H
