//===- ShardTensorParallel.cpp - trc-shard-tensor-parallel -----------------===//
//
// Seeds Megatron's layout from the structure of the training step (see
// Passes.td), then propagates. The seeds are activations, not parameters:
// attention heads, the MLP's inner width, the loss' vocabulary and the
// embedding tables of that size; propagation carries them back to the
// weights (QKV and fc column-parallel, out-projection and proj
// row-parallel) and through the backward pass. Only the forward part of
// @main_grad (the ops the loss depends on) is searched for seeds.
// Attention is found fused (trc.attention) or not (a softmax over the last
// dim of batched q . k^T scores). Preconditions: static shapes.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Passes.h"
#include "ShardingSeeds.h"

#include "mlir/IR/Matchers.h"

namespace trc {
#define GEN_PASS_DEF_SHARDTENSORPARALLEL
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;
using namespace trc::parallel;

namespace {

/// Whether v is a function argument marked `attr`, seen through the ops
/// OpTs (layout ops that keep what the value is).
template <typename... OpTs>
bool fromArgument(Value v, StringRef attr) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<OpTs...>(def))
      return false;
    v = def->getOperand(0);
  }
  auto arg = cast<BlockArgument>(v);
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func && func.getArgAttr(arg.getArgNumber(), attr);
}

/// A parameter (the importer transposes weight matrices once at entry;
/// mixed precision converts).
bool fromParameter(Value v) {
  return fromArgument<TransposeOp, ConvertOp, ReshapeOp>(v, trc::abi::kParamAttr);
}

/// A graph input (`trc.input`): the token ids, possibly reshaped or cut.
bool fromGraphInput(Value v) {
  return fromArgument<TransposeOp, ConvertOp, ReshapeOp, SliceOp>(v, trc::abi::kInputAttr);
}

/// Whether `v` comes from products with parameters through same-shape
/// elementwise ops only used there (gelu(x W1 + b1), silu(x Wg) * (x Wu)):
/// an MLP's inner activation. The region must be closed: every forward use
/// of its values stays inside it (or is the row product `user`), which the
/// residual stream is not (a norm's input is also added to the next
/// residual), so a projection after an elementwise norm is not taken for
/// a row product.
bool fromColumnProduct(Value v, Operation *user, const llvm::SetVector<Operation *> &forward) {
  SmallVector<Value> work{v};
  DenseSet<Operation *> region;
  SmallVector<Value> values;
  bool product = false;
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    Operation *def = x.getDefiningOp();
    if (!def)
      return false; // an argument: not an activation of this layer
    values.push_back(x);
    region.insert(def);
    if (auto dot = dyn_cast<DotGeneralOp>(def)) {
      if (!fromParameter(dot.getRhs()) && !fromParameter(dot.getLhs()))
        return false;
      product = true;
      continue;
    }
    bool elementwise = def->hasTrait<OpTrait::Elementwise>() ||
                       isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp, NegOp, TanhOp,
                           LogisticOp, ErfOp, ExpOp, GeluOp, ConvertOp, SelectOp>(def);
    if (!elementwise)
      return false;
    // Biases, scales and constants broadcast in from outside: not the path.
    for (Value operand : def->getOperands())
      if (isa<RankedTensorType>(operand.getType()) &&
          tensorType(operand).getShape() == tensorType(x).getShape() &&
          !operand.getDefiningOp<ConstantOp>() && !operand.getDefiningOp<BroadcastInDimOp>())
        work.push_back(operand);
  }
  for (Value x : values)
    for (Operation *u : x.getUsers())
      if (u != user && forward.contains(u) && !region.contains(u))
        return false;
  return product;
}

struct Seeder {
  int64_t degree;
  DenseMap<Value, Sharding> seeds;
  bool failedSeed = false;

  void split(Value v, int64_t dim) {
    Sharding s = Sharding::whole(tensorType(v).getRank());
    s.dims[dim] = DimSplit{std::string(kTensorAxis), 1};
    seeds.try_emplace(v, s);
  }

  bool divides(Operation *op, int64_t size, StringRef what) {
    if (size % degree == 0)
      return true;
    op->emitError("trc-shard-tensor-parallel: ")
        << what << " " << size << " is not divisible by tensor degree " << degree;
    failedSeed = true;
    return false;
  }

  /// Key/value heads before grouped-query attention repeats them (a
  /// broadcast that grows the tensor on the way from the projection).
  static int64_t unrepeatedHeads(Value kv, int64_t heads) {
    Value v = kv;
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<TransposeOp, ReshapeOp, ConvertOp, BroadcastInDimOp>(def))
        break;
      if (auto b = dyn_cast<BroadcastInDimOp>(def)) {
        int64_t in = tensorType(b.getOperand()).getNumElements(), out = tensorType(b).getNumElements();
        if (out > in && out % in == 0 && heads % (out / in) == 0)
          return heads / (out / in);
      }
      v = def->getOperand(0);
    }
    return heads;
  }

  void attention(AttentionOp op) {
    int64_t rank = tensorType(op.getQ()).getRank(), heads = rank - 3;
    if (heads < 0)
      return;
    // Megatron's rule for grouped-query attention: the key/value groups
    // must divide too (each rank its own groups).
    int64_t kvHeads = tensorType(op.getK()).getDimSize(heads);
    if (!divides(op, tensorType(op.getQ()).getDimSize(heads), "attention heads") ||
        !divides(op, unrepeatedHeads(op.getK(), kvHeads), "attention key/value heads") ||
        !divides(op, unrepeatedHeads(op.getV(), kvHeads), "attention key/value heads"))
      return;
    for (Value v : {op.getQ(), op.getK(), op.getV(), op.getResult()})
      split(v, heads);
  }

  /// Unfused attention: softmax over the last dim of [.., heads, q, k]
  /// scores made by a batched product q . k^T (through the scale, mask and
  /// bias ops): split the heads.
  void scores(SoftmaxOp op) {
    auto type = tensorType(op.getOperand());
    int64_t rank = type.getRank(), axis = axisFromFront(op.getAxis(), rank);
    if (rank < 4 || axis != rank - 1)
      return;
    Value v = op.getOperand();
    DotGeneralOp product;
    for (int hops = 0; hops < 8 && !product; ++hops) {
      Operation *def = v.getDefiningOp();
      if (!def)
        return;
      if ((product = dyn_cast<DotGeneralOp>(def)))
        break;
      // Elementwise ops on the scores: follow the operand of the scores' shape.
      Value next;
      for (Value operand : def->getOperands())
        if (isa<RankedTensorType>(operand.getType()) &&
            tensorType(operand).getShape() == type.getShape() &&
            !operand.getDefiningOp<BroadcastInDimOp>() && !operand.getDefiningOp<ConstantOp>())
          next = next ? next : operand;
      if (!next || !(def->hasTrait<OpTrait::Elementwise>() ||
                     isa<AddOp, SubOp, MulOp, DivOp, SelectOp, ConvertOp>(def)))
        return;
      v = next;
    }
    if (!product || product.getLhsBatchingDims().size() < 2 ||
        product.getLhsBatchingDims().size() != size_t(rank - 2))
      return;
    int64_t heads = rank - 3;
    if (!divides(op, type.getDimSize(heads), "attention heads") ||
        !divides(op, unrepeatedHeads(product.getRhs(), type.getDimSize(heads)),
                 "attention key/value heads"))
      return;
    split(op.getOperand(), heads);
    split(op.getResult(), heads);
  }

  void rowProduct(DotGeneralOp op, const llvm::SetVector<Operation *> &forward) {
    // x [.., f] . W [f, h] with x from a column product: split f.
    if (op.getLhsContractingDims().size() != 1 || !fromParameter(op.getRhs()) ||
        !op.getLhsBatchingDims().empty())
      return;
    if (!fromColumnProduct(op.getLhs(), op, forward))
      return;
    int64_t dim = op.getLhsContractingDims()[0];
    if (divides(op, tensorType(op.getLhs()).getDimSize(dim), "MLP width"))
      split(op.getLhs(), dim);
  }
};

struct ShardTensorParallel : trc::impl::ShardTensorParallelBase<ShardTensorParallel> {
  using ShardTensorParallelBase::ShardTensorParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (degree < 1) {
      module.emitError("trc-shard-tensor-parallel: degree must be at least 1, got ")
          << static_cast<long long>(degree);
      return signalPassFailure();
    }
    auto func = module.lookupSymbol<func::FuncOp>("main_grad");
    if (!func)
      func = module.lookupSymbol<func::FuncOp>("main");
    if (!func || func.isExternal()) {
      module.emitError("trc-shard-tensor-parallel needs @main_grad or @main");
      return signalPassFailure();
    }
    Grid grid = setGridAxis(module, kTensorAxis, degree);
    if (degree == 1)
      return;

    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (ret.getNumOperands() == 0) {
      func.emitError("trc-shard-tensor-parallel: @") << func.getSymName() << " returns nothing";
      return signalPassFailure();
    }
    Seeder seeder{degree};
    // The vocabulary: the loss' classes, decomposed so that the split
    // class dim reduces with all-reduces instead of being gathered.
    llvm::SetVector<Operation *> forward = ancestors(ret.getOperand(0));
    int64_t vocab = 0;
    Operation *loss = nullptr;
    SmallVector<Operation *> toDecompose;
    for (Operation *op : forward)
      if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
        vocab = tensorType(ce.getLogits()).getDimSize(1);
        loss = op;
      }
    if (vocab && vocab % degree) {
      loss->emitWarning("trc-shard-tensor-parallel: vocabulary ")
          << vocab << " is not divisible by tensor degree " << static_cast<long long>(degree)
          << ": the embedding and the loss stay whole on every rank";
      vocab = 0;
    }
    if (vocab) {
      for (Operation *op : forward)
        if (auto ce = dyn_cast<CrossEntropyOp>(op)) {
          seeder.split(ce.getLogits(), 1);
          toDecompose.push_back(op);
        } else if (auto gather = dyn_cast<GatherOp>(op)) {
          int64_t axis = axisFromFront(gather.getAxis(), tensorType(gather.getOperand()).getRank());
          // Tables looked up by the token ids (a graph input), not by
          // positions made in the graph, even when the sizes coincide.
          if (fromParameter(gather.getOperand()) && fromGraphInput(gather.getIndices()) &&
              tensorType(gather.getOperand()).getDimSize(axis) == vocab)
            seeder.split(gather.getOperand(), axis);
        }
      // Softmaxes over the vocabulary (the loss' gradient). Rank 4 and
      // more are attention scores, whose last dim may happen to be the
      // vocabulary's size.
      auto overVocabulary = [&](Operation *op, Value operand, int64_t axis) {
        auto type = tensorType(operand);
        if (type.getRank() < 4 && type.getDimSize(axisFromFront(axis, type.getRank())) == vocab)
          toDecompose.push_back(op);
      };
      func.walk([&](SoftmaxOp s) { overVocabulary(s, s.getOperand(), s.getAxis()); });
      func.walk([&](LogSoftmaxOp s) { overVocabulary(s, s.getOperand(), s.getAxis()); });
    }
    for (Operation *op : forward) {
      if (auto attention = dyn_cast<AttentionOp>(op))
        seeder.attention(attention);
      else if (auto softmax = dyn_cast<SoftmaxOp>(op))
        seeder.scores(softmax);
      else if (auto dot = dyn_cast<DotGeneralOp>(op))
        seeder.rowProduct(dot, forward);
    }
    if (seeder.failedSeed)
      return signalPassFailure();

    // Seed, then decompose (the seeds are operands of the decomposed ops,
    // which the rewrite keeps), then propagate.
    for (auto &[value, sharding] : seeder.seeds)
      writeSharding(value, sharding);
    if (!toDecompose.empty()) {
      if (failed(decomposeComposites(&getContext(), toDecompose))) {
        func.emitError("trc-shard-tensor-parallel: decomposing the vocabulary-parallel loss failed");
        return signalPassFailure();
      }
      forward = ancestors(ret.getOperand(0)); // the loss' ops were replaced
    }
    // Sequence parallelism has the lower priority: the layer norms' values
    // the tensor-parallel layout has not decided are split on the sequence.
    if (failed(propagateShardings(func, grid, /*finish=*/!sequenceParallel)))
      return signalPassFailure();
    if (sequenceParallel) {
      Seeder sequence{degree};
      for (Operation *op : forward)
        if (auto norm = dyn_cast<LayerNormOp>(op)) {
          int64_t rank = tensorType(norm).getRank();
          int64_t axis = axisFromFront(norm.getAxis(), rank);
          if (axis < 2)
            continue; // no [batch, sequence, ...] layout
          if (!sequence.divides(op, tensorType(norm).getDimSize(axis - 1), "sequence length"))
            return signalPassFailure();
          for (Value v : {norm.getOperand(), norm.getResult()})
            if (!readSharding(v))
              writeSharding(v, [&] {
                Sharding s = Sharding::whole(rank);
                s.dims[axis - 1] = DimSplit{std::string(kTensorAxis), 1};
                return s;
              }());
        }
      if (failed(propagateShardings(func, grid)))
        return signalPassFailure();
    }
    groupPartialSums(func);
  }
};

} // namespace
