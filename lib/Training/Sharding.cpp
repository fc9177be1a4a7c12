//===- Sharding.cpp - flat shards of tensors (include/trc/Training/Sharding.h)
#include "trc/Training/Sharding.h"

using namespace mlir;

namespace trc::training {

int64_t shardElements(int64_t n, int64_t shards) { return (n + shards - 1) / shards; }

RankedTensorType shardType(RankedTensorType full, int64_t shards) {
  return RankedTensorType::get({shardElements(full.getNumElements(), shards)},
                               full.getElementType());
}

Value reshapeTo(OpBuilder &b, Location loc, Value x, RankedTensorType type) {
  if (x.getType() == type)
    return x;
  return b.create<ReshapeOp>(loc, type, x);
}

Value slice1d(OpBuilder &b, Location loc, Value x, int64_t start, int64_t count) {
  auto type = cast<RankedTensorType>(x.getType());
  if (start == 0 && count == type.getDimSize(0))
    return x;
  auto result = RankedTensorType::get({count}, type.getElementType());
  return b.create<SliceOp>(loc, result, x, ArrayRef<int64_t>{start},
                           ArrayRef<int64_t>{start + count}, ArrayRef<int64_t>{1});
}

Value flattenPadded(OpBuilder &b, Location loc, Value x, int64_t shards) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t n = type.getNumElements(), padded = shards * shardElements(n, shards);
  Value flat = reshapeTo(b, loc, x, RankedTensorType::get({n}, type.getElementType()));
  if (padded == n)
    return flat;
  auto scalar = RankedTensorType::get({}, type.getElementType());
  Value zero = b.create<ConstantOp>(
      loc, SplatElementsAttr::get(scalar, b.getZeroAttr(type.getElementType())));
  return b.create<PadOp>(loc, RankedTensorType::get({padded}, type.getElementType()), flat,
                         zero, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{padded - n});
}

Value localShard(OpBuilder &b, Location loc, Value x, int64_t shards) {
  auto full = cast<RankedTensorType>(x.getType());
  return b.create<ShardSliceOp>(loc, shardType(full, shards), flattenPadded(b, loc, x, shards),
                                CollectiveGroup::Shard, shards);
}

Value gatherFull(OpBuilder &b, Location loc, Value shard, int64_t shards,
                 RankedTensorType full) {
  auto type = cast<RankedTensorType>(shard.getType());
  auto gatheredType =
      RankedTensorType::get({shards * type.getDimSize(0)}, type.getElementType());
  Value gathered =
      b.create<AllGatherOp>(loc, gatheredType, shard, CollectiveGroup::Shard, shards);
  Value flat = slice1d(b, loc, gathered, 0, full.getNumElements());
  return reshapeTo(b, loc, flat, full);
}

NamedAttrList shardAttributes(Builder &b, RankedTensorType full, int64_t shards) {
  NamedAttrList attrs;
  attrs.set(kShardDegreeAttr, b.getI64IntegerAttr(shards));
  attrs.set(kShardOfAttr, b.getDenseI64ArrayAttr(full.getShape()));
  return attrs;
}

} // namespace trc::training
