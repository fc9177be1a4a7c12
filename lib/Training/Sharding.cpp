//===- Sharding.cpp - flat shards of tensors (include/trc/Training/Sharding.h)
#include "trc/Training/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

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

namespace {

/// A use of a parameter past layout-only ops (the chain from it).
struct FinalUse {
  OpOperand *operand;
  SmallVector<Operation *> chain;
};

bool isLayoutOp(Operation *op) {
  return isa<TransposeOp, ReshapeOp, ConvertOp>(op) && op->getNumOperands() == 1;
}

/// The uses of `v` past layout ops (depth-first, each op once in
/// `layoutOps`, in the order they are reached).
void collectFinalUses(Value v, SmallVector<Operation *> &chain, SmallVector<FinalUse> &out,
                      SmallVector<Operation *> &layoutOps) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (isLayoutOp(user)) {
      if (!llvm::is_contained(layoutOps, user))
        layoutOps.push_back(user);
      chain.push_back(user);
      collectFinalUses(user->getResult(0), chain, out, layoutOps);
      chain.pop_back();
      continue;
    }
    out.push_back({&use, chain});
  }
}

} // namespace

void shardParameterArguments(func::FuncOp fn, const llvm::StringSet<> &trainable,
                             int64_t shards) {
  Builder attrs(fn.getContext());
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto name = fn.getArgAttrOfType<StringAttr>(i, abi::kParamAttr);
    if (!name || !trainable.contains(name.getValue()))
      continue;
    BlockArgument arg = fn.getArgument(i);
    auto full = cast<RankedTensorType>(arg.getType());
    SmallVector<FinalUse> uses;
    SmallVector<Operation *> chain, layoutOps;
    collectFinalUses(arg, chain, uses, layoutOps);
    arg.setType(shardType(full, shards));
    for (FinalUse &use : uses) {
      Operation *consumer = use.operand->getOwner();
      OpBuilder b(consumer);
      Value v = gatherFull(b, consumer->getLoc(), arg, shards, full);
      for (Operation *layout : use.chain) {
        IRMapping map;
        map.map(layout->getOperand(0), v);
        v = b.clone(*layout, map)->getResult(0);
      }
      use.operand->set(v);
    }
    // The original chains are dead now (users first).
    for (Operation *op : llvm::reverse(layoutOps))
      if (op->use_empty())
        op->erase();
    for (const NamedAttribute &attr : shardAttributes(attrs, full, shards))
      fn.setArgAttr(i, attr.getName(), attr.getValue());
  }
  fn.setType(FunctionType::get(fn.getContext(), fn.front().getArgumentTypes(),
                               fn.getResultTypes()));
}

} // namespace trc::training
