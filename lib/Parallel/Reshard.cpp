//===- Reshard.cpp - collectives between shardings (Reshard.h) -------------===//
//
// A dim collective along dim d of blocks k over t ranks works on the
// layout [k, t, c, rest] of the full tensor (c = the block's chunk per
// rank): rank r's part is [k, c, rest] at index r of the t axis. Moving t
// to the front makes every rank's part one contiguous 1-D chunk, which is
// what trc.all_gather, trc.reduce_scatter and trc.shard_slice take. A
// mirrored split (Sharding.h's DimSplit) hands its odd blocks' chunks out
// in reverse: there the reorder is a gather of [k * t] chunks by a constant
// table instead of the transpose.
//
//===----------------------------------------------------------------------===//
#include "trc/Parallel/Reshard.h"

using namespace mlir;

namespace trc::parallel {
namespace {

Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, tensorType(v).getElementType());
  if (type == v.getType())
    return v;
  // A reshape of a reshape is one (the inner one, if it was only this
  // collective's step, goes).
  if (auto inner = v.getDefiningOp<ReshapeOp>()) {
    Value source = inner.getOperand();
    Value out = type == source.getType() ? source
                                         : b.create<ReshapeOp>(loc, type, source).getResult();
    if (inner->use_empty())
      inner->erase();
    return out;
  }
  return b.create<ReshapeOp>(loc, type, v);
}

Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, int64_t(perm.size()))))
    return v;
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(tensorType(v).getShape()[p]);
  return b.create<TransposeOp>(loc, RankedTensorType::get(shape, tensorType(v).getElementType()),
                               v, perm);
}

enum class DimCollective { Gather, Slice, ReduceScatter };

/// A constant 1-D i64 tensor of `values`.
Value i64Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({int64_t(values.size())}, b.getI64Type());
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, values));
}

/// Rows of the chunk table [k * t, c, rest] reordered by `from[i]` (the
/// source row of row i).
Value reorderChunks(OpBuilder &b, Location loc, Value chunks, ArrayRef<int64_t> from) {
  return b.create<GatherOp>(loc, chunks.getType(), chunks, i64Constant(b, loc, from), 0);
}

/// The collective along dim d (see the file comment). For Gather `v` is the
/// rank's part; for Slice and ReduceScatter the whole (or partial) tensor.
Value alongDim(OpBuilder &b, Location loc, Value v, int64_t d, const DimSplit &split, int64_t t,
               CollectiveGroup group, DimCollective what, CollectiveReduction reduction) {
  RankedTensorType type = tensorType(v);
  int64_t rank = type.getRank(), blocks = split.blocks;
  SmallVector<int64_t> toFront = dimToFront(d, rank), rest;
  for (int64_t i = 1; i < rank; ++i)
    rest.push_back(type.getShape()[toFront[i]]);
  SmallVector<int64_t> fromFront(rank);
  for (int64_t i = 0; i < rank; ++i)
    fromFront[toFront[i]] = i;
  Type element = type.getElementType();
  Value front = transpose(b, loc, v, toFront);
  int64_t restSize = 1;
  for (int64_t s : rest)
    restSize *= s;
  auto concat = [](std::initializer_list<int64_t> head, ArrayRef<int64_t> tail) {
    SmallVector<int64_t> s(head);
    s.append(tail.begin(), tail.end());
    return s;
  };
  auto perm4 = [&](bool swap) {
    SmallVector<int64_t> p{swap ? 1 : 0, swap ? 0 : 1, 2};
    for (int64_t i = 0; i < int64_t(rest.size()); ++i)
      p.push_back(3 + i);
    return p;
  };
  if (what == DimCollective::Gather) {
    int64_t c = type.getShape()[d] / blocks;
    Value flat = reshape(b, loc, front, {blocks * c * restSize});
    Value all = b.create<AllGatherOp>(
        loc, RankedTensorType::get({t * blocks * c * restSize}, element), flat, group, t);
    Value ordered;
    if (split.mirrored) {
      // Full chunk (block bl, part p) is rank r's chunk bl with
      // chunkOf(bl, r) = p: row r * k + bl of the gathered [t * k] chunks.
      SmallVector<int64_t> from;
      for (int64_t bl = 0; bl < blocks; ++bl)
        for (int64_t p = 0; p < t; ++p)
          from.push_back(split.chunkOf(bl, p, t) * blocks + bl);
      ordered = reorderChunks(b, loc, reshape(b, loc, all, concat({t * blocks, c}, rest)), from);
    } else {
      Value byRank = reshape(b, loc, all, concat({t, blocks, c}, rest));
      ordered = blocks == 1 ? byRank : transpose(b, loc, byRank, perm4(true));
    }
    Value merged = reshape(b, loc, ordered, concat({blocks * t * c}, rest));
    return transpose(b, loc, merged, fromFront);
  }
  int64_t c = type.getShape()[d] / (blocks * t);
  Value ordered;
  if (split.mirrored) {
    // Rank r's chunk bl is full chunk (bl, chunkOf(bl, r)).
    SmallVector<int64_t> from;
    for (int64_t r = 0; r < t; ++r)
      for (int64_t bl = 0; bl < blocks; ++bl)
        from.push_back(bl * t + split.chunkOf(bl, r, t));
    ordered = reorderChunks(b, loc, reshape(b, loc, front, concat({blocks * t, c}, rest)), from);
  } else {
    Value byBlock = reshape(b, loc, front, concat({blocks, t, c}, rest));
    ordered = blocks == 1 ? byBlock : transpose(b, loc, byBlock, perm4(true));
  }
  Value flat = reshape(b, loc, ordered, {t * blocks * c * restSize});
  auto partType = RankedTensorType::get({blocks * c * restSize}, element);
  Value part = what == DimCollective::Slice
                   ? b.create<ShardSliceOp>(loc, partType, flat, group, t).getResult()
                   : b.create<ReduceScatterOp>(loc, partType, flat, reduction, group, t)
                         .getResult();
  Value merged = reshape(b, loc, part, concat({blocks * c}, rest));
  return transpose(b, loc, merged, fromFront);
}

} // namespace

SmallVector<int64_t> dimToFront(int64_t d, int64_t rank) {
  SmallVector<int64_t> perm{d};
  for (int64_t i = 0; i < rank; ++i)
    if (i != d)
      perm.push_back(i);
  return perm;
}

FailureOr<CollectiveGroup> groupOfAxis(StringRef axis) {
  if (axis == kTensorAxis)
    return CollectiveGroup::Tensor;
  if (axis == kContextAxis)
    return CollectiveGroup::Context;
  return failure();
}

FailureOr<Value> reshard(OpBuilder &b, Location loc, Value value, const Sharding &from,
                         const Sharding &to, const Grid &grid) {
  if (from == to)
    return value;
  auto group = [&](StringRef axis) -> FailureOr<CollectiveGroup> {
    FailureOr<CollectiveGroup> g = groupOfAxis(axis);
    if (failed(g))
      emitError(loc) << "trc-partition: grid axis '" << axis << "' has no communicator group";
    return g;
  };
  Sharding cur = from;
  if (cur.partial() && !(to.partial() && to.partialAxis == cur.partialAxis &&
                         to.partialKind == cur.partialKind)) {
    FailureOr<CollectiveGroup> g = group(cur.partialAxis);
    if (failed(g))
      return failure();
    int64_t t = grid.size(cur.partialAxis);
    int64_t d = to.dimSplitOver(cur.partialAxis);
    if (d >= 0 && !cur.dims[d].split() && cur.partialKind == CollectiveReduction::Sum) {
      // Sequence parallelism's reduce-scatter: the sum and the split in one.
      value = alongDim(b, loc, value, d, to.dims[d], t, *g,
                       DimCollective::ReduceScatter, CollectiveReduction::Sum);
      cur.dims[d] = to.dims[d];
    } else {
      value = b.create<AllReduceOp>(loc, value, cur.partialKind, *g);
    }
    cur = cur.withoutPartial();
  }
  if (to.partial() && !cur.partial()) {
    emitError(loc) << "trc-partition: cannot make a whole value " << cur.str() << " into "
                   << to.str();
    return failure();
  }
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    if (!cur.dims[d].split() || cur.dims[d] == to.dims[d])
      continue;
    FailureOr<CollectiveGroup> g = group(cur.dims[d].axis);
    if (failed(g))
      return failure();
    value = alongDim(b, loc, value, int64_t(d), cur.dims[d], grid.size(cur.dims[d].axis), *g,
                     DimCollective::Gather,
                     CollectiveReduction::Sum);
    cur.dims[d] = DimSplit{};
  }
  for (size_t d = 0; d < cur.dims.size(); ++d) {
    if (cur.dims[d] == to.dims[d])
      continue;
    FailureOr<CollectiveGroup> g = group(to.dims[d].axis);
    if (failed(g))
      return failure();
    value = alongDim(b, loc, value, int64_t(d), to.dims[d], grid.size(to.dims[d].axis), *g,
                     DimCollective::Slice, CollectiveReduction::Sum);
    cur.dims[d] = to.dims[d];
  }
  return value;
}

Value rankRowOf(OpBuilder &b, Location loc, ArrayRef<int64_t> table, int64_t perRank,
                CollectiveGroup group, int64_t shards) {
  return b.create<ShardSliceOp>(loc, RankedTensorType::get({perRank}, b.getI64Type()),
                                i64Constant(b, loc, table), group, shards);
}

Value partOffset(OpBuilder &b, Location loc, StringRef axis, int64_t fullSize,
                 const Grid &grid, RankedTensorType type) {
  int64_t t = grid.size(axis);
  SmallVector<int64_t> starts;
  for (int64_t r = 0; r < t; ++r)
    starts.push_back(r * (fullSize / t));
  auto i64 = b.getI64Type();
  Value mine = rankRowOf(b, loc, starts, 1, *groupOfAxis(axis), t);
  Value offset = reshape(b, loc, mine, {});
  if (type.getElementType() != i64)
    offset = b.create<ConvertOp>(loc, RankedTensorType::get({}, type.getElementType()), offset);
  return b.create<BroadcastInDimOp>(loc, type, offset, ArrayRef<int64_t>{});
}

} // namespace trc::parallel
