//===- ShardContextParallel.cpp - trc-shard-context-parallel ---------------===//
//
// Context parallelism (see Passes.td): the token sequences are split over
// the grid's `context` axis. The seeds are the graph inputs of the token
// ids' [batch, sequence] shape (ids, targets, masks), split on the
// sequence; propagation carries the split through every op that keeps
// positions apart (embeddings, norms, projections, the MLP) and stops at
// the ops that mix them: attention's keys and values are gathered whole
// (its rule keeps the key positions whole; the scores' product keeps the
// query positions, the first operand's), and the gradients of keys and
// values are reduce-scattered back. The loss is decomposed into sums, so
// its rows stay split and only scalars are reduced; the parameters'
// gradients are partial sums over the axis, summed where they are returned.
// After trc-shard-tensor-parallel the two layouts are found apart and
// combined value by value (each axis splits its own factors: heads, MLP
// width and vocabulary over `tensor`, positions over `context`), so the
// partitioned step is Megatron's layout on each rank's positions.
// With balance the positions are split head-tail (a mirrored split of two
// blocks, Sharding.h) and each attention whose mask is proven causal
// (CausalMask.h) is tagged with the chunk it hides later keys by.
// Preconditions: @main_grad (after autodiff), static shapes; no sequence
// parallelism (it splits the positions over `tensor`).
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Parallel/CausalMask.h"
#include "trc/Passes.h"
#include "ShardingSeeds.h"

namespace trc {
#define GEN_PASS_DEF_SHARDCONTEXTPARALLEL
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;
using namespace trc::parallel;

namespace {

/// The function argument `v` is, through layout ops; null if none.
BlockArgument argumentBehind(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<TransposeOp, ConvertOp, ReshapeOp>(def))
      return {};
    v = def->getOperand(0);
  }
  return dyn_cast<BlockArgument>(v);
}

/// The token ids: a graph input that indexes a parameter table (the token
/// embedding), [batch, sequence, ...].
BlockArgument tokenIds(func::FuncOp func, const llvm::SetVector<Operation *> &forward) {
  for (Operation *op : forward) {
    auto gather = dyn_cast<GatherOp>(op);
    if (!gather)
      continue;
    BlockArgument table = argumentBehind(gather.getOperand());
    BlockArgument ids = argumentBehind(gather.getIndices());
    if (table && ids && func.getArgAttr(table.getArgNumber(), trc::abi::kParamAttr) &&
        func.getArgAttr(ids.getArgNumber(), trc::abi::kInputAttr) &&
        tensorType(ids).getRank() >= 2)
      return ids;
  }
  return {};
}

/// Attention in the forward: fused, or a softmax over the last dim of
/// rank-4+ scores.
bool hasAttention(const llvm::SetVector<Operation *> &forward) {
  return llvm::any_of(forward, [](Operation *op) {
    if (isa<AttentionOp>(op))
      return true;
    auto softmax = dyn_cast<SoftmaxOp>(op);
    if (!softmax)
      return false;
    int64_t rank = tensorType(softmax.getOperand()).getRank();
    return rank >= 4 && axisFromFront(softmax.getAxis(), rank) == rank - 1;
  });
}

/// Every annotated value of `func` with its sharding; the annotations are
/// removed.
DenseMap<Value, Sharding> takeShardings(func::FuncOp func) {
  DenseMap<Value, Sharding> taken;
  for (BlockArgument arg : func.getArguments())
    if (std::optional<Sharding> s = readSharding(arg)) {
      taken[arg] = *s;
      func.removeArgAttr(arg.getArgNumber(), kShardingAttr);
    }
  func.walk([&](Operation *op) {
    for (Value r : op->getResults())
      if (std::optional<Sharding> s = readSharding(r))
        taken[r] = *s;
    op->removeAttr(kShardingAttr);
  });
  return taken;
}

/// The tensor-parallel layout `tensor` with the positions' split `context`;
/// nullopt where both split one dim or both are partial sums.
std::optional<Sharding> combine(const Sharding &tensor, const Sharding &context) {
  if (tensor.dims.size() != context.dims.size() || (tensor.partial() && context.partial()))
    return std::nullopt;
  Sharding out = tensor;
  for (size_t d = 0; d < out.dims.size(); ++d) {
    if (!context.dims[d].split())
      continue;
    if (out.dims[d].split())
      return std::nullopt;
    out.dims[d] = context.dims[d];
  }
  if (context.partial()) {
    out.partialAxis = context.partialAxis;
    out.partialKind = context.partialKind;
  }
  return out;
}

/// Tags each attention (forward and gradient) whose mask hides every key
/// in a later chunk of `chunk` positions, and whose fill takes a hidden key
/// out of the softmax (exp(fill - max) is 0 in f32), with the chunk.
void tagCausalAttention(func::FuncOp func, int64_t chunk) {
  DenseMap<Value, bool> proven[2]; // per fill side, per mask
  auto tag = [&](Operation *op, Value mask, bool fillWhereTrue, double fill) {
    if (!mask || fill > -1e4)
      return;
    auto [it, fresh] = proven[fillWhereTrue].try_emplace(mask, false);
    if (fresh)
      it->second = hidesLaterChunks(func, mask, fillWhereTrue, chunk);
    if (it->second)
      op->setAttr(trc::abi::kCausalChunkAttr,
                  IntegerAttr::get(IntegerType::get(op->getContext(), 64), chunk));
  };
  func.walk([&](Operation *op) {
    if (auto a = dyn_cast<AttentionOp>(op))
      tag(a, a.getMask(), a.getFillWhereTrue(), a.getMaskFill().convertToDouble());
    else if (auto g = dyn_cast<AttentionGradOp>(op))
      tag(g, g.getMask(), g.getFillWhereTrue(), g.getMaskFill().convertToDouble());
  });
}

struct ShardContextParallel : trc::impl::ShardContextParallelBase<ShardContextParallel> {
  using ShardContextParallelBase::ShardContextParallelBase;

  /// Every value's two shardings combined (its tensor-parallel one whole
  /// where it had none); fails naming the op where they collide.
  LogicalResult combineLayouts(func::FuncOp func, const DenseMap<Value, Sharding> &tensorLayout) {
    auto merge = [&](Value v, Location loc) -> LogicalResult {
      Sharding context = readSharding(v).value_or(Sharding::whole(tensorType(v).getRank()));
      auto it = tensorLayout.find(v);
      if (it == tensorLayout.end())
        return success();
      std::optional<Sharding> both = combine(it->second, context);
      if (!both)
        return emitError(loc, "trc-shard-context-parallel: the tensor-parallel sharding ")
               << it->second.str() << " and the context split " << context.str()
               << " of one value collide";
      writeSharding(v, *both);
      return success();
    };
    for (BlockArgument arg : func.getArguments())
      if (failed(merge(arg, func.getLoc())))
        return failure();
    WalkResult walk = func.walk([&](Operation *op) {
      for (Value r : op->getResults())
        if (failed(merge(r, op->getLoc())))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (degree < 1) {
      module.emitError("trc-shard-context-parallel: degree must be at least 1, got ")
          << static_cast<long long>(degree);
      return signalPassFailure();
    }
    auto func = module.lookupSymbol<func::FuncOp>("main_grad");
    if (!func || func.isExternal()) {
      module.emitError("trc-shard-context-parallel needs @main_grad (run it after trc-autodiff)");
      return signalPassFailure();
    }
    Grid grid = setGridAxis(module, kContextAxis, degree);
    if (degree == 1)
      return;
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (ret.getNumOperands() == 0) {
      func.emitError("trc-shard-context-parallel: @main_grad returns nothing");
      return signalPassFailure();
    }
    llvm::SetVector<Operation *> forward = ancestors(ret.getOperand(0));
    BlockArgument ids = tokenIds(func, forward);
    if (!ids) {
      func.emitError("trc-shard-context-parallel: no token ids (a graph input that indexes an "
                     "embedding table): context parallelism splits token sequences");
      return signalPassFailure();
    }
    if (!hasAttention(forward)) {
      func.emitError("trc-shard-context-parallel: the model has no attention: context "
                     "parallelism splits attention's sequence (use data parallelism)");
      return signalPassFailure();
    }
    auto idsType = tensorType(ids);
    auto inputName = [&](BlockArgument arg) {
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), trc::abi::kInputAttr);
      return name ? name.getValue().str() : "#" + std::to_string(arg.getArgNumber());
    };
    int64_t sequence = idsType.getDimSize(1);
    int64_t chunks = balance ? 2 * degree : degree;
    if (sequence % chunks) {
      func.emitError("trc-shard-context-parallel: input '")
          << inputName(ids) << "': sequence length " << sequence << " is not divisible by "
          << (balance ? "2 x " : "") << "context degree " << static_cast<long long>(degree)
          << (balance ? " (the head-tail split of causal load balancing)" : "");
      return signalPassFailure();
    }
    if (balance)
      tagCausalAttention(func, sequence / chunks);
    // Parameters are replicated over the axis (a causal-mask buffer that a
    // slice reads is sliced on each rank, not handed out in parts).
    SmallVector<std::pair<Value, Sharding>> contextSeeds;
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), trc::abi::kParamAttr))
        contextSeeds.push_back({arg, Sharding::whole(tensorType(arg).getRank())});
    // Every graph input laid out like the ids (targets, attention masks).
    for (BlockArgument arg : func.getArguments()) {
      if (!func.getArgAttr(arg.getArgNumber(), trc::abi::kInputAttr))
        continue;
      auto type = tensorType(arg);
      if (type.getRank() < 2 || type.getDimSize(0) != idsType.getDimSize(0) ||
          type.getDimSize(1) != sequence)
        continue;
      Sharding s = Sharding::whole(type.getRank());
      s.dims[1] = balance ? DimSplit{std::string(kContextAxis), 2, /*mirrored=*/true}
                          : DimSplit{std::string(kContextAxis), 1};
      contextSeeds.push_back({arg, s});
    }
    // A mean loss is not a sum of per-rank means: its sums are split instead.
    SmallVector<Operation *> losses;
    for (Operation *op : forward)
      if (isa<CrossEntropyOp>(op))
        losses.push_back(op);
    if (failed(decomposeComposites(&getContext(), losses))) {
      func.emitError("trc-shard-context-parallel: decomposing the loss failed");
      return signalPassFailure();
    }
    // The tensor-parallel layout, if any, is set aside while the positions'
    // split propagates alone, then the two are combined.
    DenseMap<Value, Sharding> tensorLayout = takeShardings(func);
    for (auto &[value, sharding] : contextSeeds)
      writeSharding(value, sharding);
    if (failed(propagateShardings(func, grid)))
      return signalPassFailure();
    if (!tensorLayout.empty() && failed(combineLayouts(func, tensorLayout)))
      return signalPassFailure();
    groupPartialSums(func);
  }
};

} // namespace
