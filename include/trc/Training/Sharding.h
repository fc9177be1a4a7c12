//===- Sharding.h - flat shards of tensors split over a process group ------===//
//
// The layout trc-data-parallel and trc-build-train-step share for sharded
// (ZeRO) tensors: a tensor of n elements split over `shards` ranks is
// flattened in row-major order, padded with zeros to shards * c elements
// (c = ceil(n / shards)), and rank i of the group holds elements
// [i * c, (i + 1) * c). Attributes on function arguments and results:
//   trc.shard_degree = G : i64        the value is such a shard
//   trc.shard_of = array<i64: ...>    the full tensor's shape
// Preconditions: statically shaped tensors; shards >= 1.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TRAINING_SHARDING_H
#define TRC_TRAINING_SHARDING_H

#include "trc/Abi/AttrNames.h"
#include "trc/Dialect/Trc.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace trc::training {

// On a shard's argument or gradient result (trc/Abi/AttrNames.h).
using abi::kShardDegreeAttr;
using abi::kShardOfAttr;

/// Elements of one rank's shard of an n-element tensor.
int64_t shardElements(int64_t n, int64_t shards);

/// The 1-D type of one rank's shard of `full`.
mlir::RankedTensorType shardType(mlir::RankedTensorType full, int64_t shards);

/// `x` flattened and zero-padded to shards * shardElements(n) elements.
mlir::Value flattenPadded(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                          int64_t shards);

/// This rank's shard of the full tensor `x` (no communication).
mlir::Value localShard(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       int64_t shards);

/// The full tensor of type `full` from every rank's shard (an all-gather
/// over the shard group, padding dropped).
mlir::Value gatherFull(mlir::OpBuilder &b, mlir::Location loc, mlir::Value shard,
                       int64_t shards, mlir::RankedTensorType full);

/// 1-D [start, start + count) of a 1-D tensor.
mlir::Value slice1d(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x, int64_t start,
                    int64_t count);

/// `x` reshaped to `type` (no op when it already has it).
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                      mlir::RankedTensorType type);

/// Marks argument/result attributes of a shard of `full` over `shards`.
mlir::NamedAttrList shardAttributes(mlir::Builder &b, mlir::RankedTensorType full,
                                    int64_t shards);

/// ZeRO-3: the arguments of `fn` that are trainable parameters (`trc.param`
/// naming one of `trainable`) become this rank's shard over `shards` ranks
/// (marked with shardAttributes), and each use all-gathers the full tensor
/// right before it, so it is freed after that use. Layout-only ops between a
/// parameter and its users (the importer transposes weight matrices once at
/// entry) are cloned per use, so a matrix is not gathered once and kept for
/// the whole program. `fn`'s type follows its new arguments.
void shardParameterArguments(mlir::func::FuncOp fn, const llvm::StringSet<> &trainable,
                             int64_t shards);

} // namespace trc::training

#endif // TRC_TRAINING_SHARDING_H
