//===- Partition.cpp - trc-partition ---------------------------------------===//
//
// Rewrites each annotated function in place to per-rank shapes (see
// Passes.td). Walking the body in order, each op asks solveOpSharding what
// its operands must be given its (annotated) results, the operands are
// resharded to that (collectives, include/trc/Parallel/Reshard.h), the op
// is retyped to its rank's part, and where what it then produces differs
// from its annotation the result is resharded too. So the annotations are
// what every value is after this pass, and each op computes exactly as
// propagation planned. Ops whose attributes hold shapes or global indices
// (slice, constant, iota, gather and scatter_add from a split table) get
// their rank's version (an iota is whole, its rule replicated: where a
// split user needs it, it is sliced like any whole value).
// Preconditions: every value annotated (trc-propagate-sharding); the
// grid's axes have communicator groups.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Passes.h"
#include "trc/Parallel/Reshard.h"



namespace trc {
#define GEN_PASS_DEF_PARTITION
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;
using namespace trc::parallel;

namespace {

struct FunctionPartitioner {
  func::FuncOp func;
  const Grid &grid;
  DenseMap<Value, Sharding> current;
  // Resharded copies of each value with their shardings, so a value needed
  // the same way twice moves once.
  DenseMap<Value, SmallVector<std::pair<Sharding, Value>, 2>> copiesOf;
  DenseMap<Value, RankedTensorType> fullTypes; // before retyping
  DenseMap<Operation *, ShardingRule> rules;   // on the full types
  SmallVector<Operation *> replaced; // rebuilt by localize, erased at the end

  Sharding shardingOf(Value v) {
    auto it = current.find(v);
    if (it != current.end())
      return it->second;
    return Sharding::whole(tensorType(v).getRank());
  }

  FailureOr<Value> to(OpBuilder &b, Location loc, Value v, const Sharding &target) {
    Sharding from = shardingOf(v);
    if (from == target)
      return v;
    for (auto &[sharding, copy] : copiesOf.lookup(v))
      if (sharding == target)
        return copy;
    FailureOr<Value> moved = reshard(b, loc, v, from, target, grid);
    if (failed(moved))
      return failure();
    copiesOf[v].push_back({target, *moved});
    current[*moved] = target;
    return *moved;
  }

  /// A cheaper plan for `op` when one of its operands is a partial sum the
  /// plan resolves whole, but an earlier user already had it reduce-
  /// scattered: if the op can take that split copy as it is (a reduction
  /// over the split dim, say), its result is a small partial sum instead of
  /// the operand's whole all-reduce. The copy is reused; the result is
  /// resharded after the op as usual.
  std::optional<OpSharding> reuseSplitCopy(Operation *op, const OpSharding &plan) {
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      Value v = op->getOperand(i);
      Sharding cur = shardingOf(v);
      if (!cur.partial() || plan.operands[i].partial())
        continue;
      for (auto &[split, copy] : copiesOf.lookup(v)) {
        if (split.partial())
          continue;
        SmallVector<std::optional<Sharding>> operands;
        SmallVector<RankedTensorType> types;
        for (unsigned j = 0; j < op->getNumOperands(); ++j) {
          operands.push_back(j == i ? split : plan.operands[j]);
          types.push_back(fullTypes.lookup(op->getOperand(j)));
        }
        if (llvm::any_of(types, [](RankedTensorType t) { return !t; }))
          return std::nullopt;
        SmallVector<std::optional<Sharding>> results(op->getNumResults());
        OpSharding alt = solveOpSharding(op, rules[op], operands, results, grid,
                                         /*resultsFirst=*/false, types);
        bool same = true;
        for (unsigned j = 0; j < op->getNumOperands(); ++j)
          same &= j == i ? alt.operands[j] == split : alt.operands[j] == plan.operands[j];
        // Worth it when the results are smaller than the operand.
        int64_t resultElements = 0;
        for (Value r : op->getResults())
          resultElements += tensorType(r).getNumElements();
        if (same && resultElements < fullTypes.lookup(v).getNumElements())
          return alt;
      }
    }
    return std::nullopt;
  }

  /// indices - offset, clamped to 0 where outside [0, rows), and the mask
  /// of those inside: a lookup into this rank's rows of a split table.
  std::pair<Value, Value> localIndices(OpBuilder &b, Location loc, Value indices,
                                       const DimSplit &split, int64_t fullRows) {
    auto idxType = tensorType(indices);
    int64_t rows = fullRows / grid.size(split.axis);
    Value offsets = partOffset(b, loc, split.axis, fullRows, grid, idxType);
    Value local = b.create<SubOp>(loc, indices, offsets);
    auto splat = [&](int64_t v) -> Value {
      return b.create<ConstantOp>(
          loc, SplatElementsAttr::get(idxType, b.getIntegerAttr(idxType.getElementType(), v)));
    };
    auto pred = RankedTensorType::get(idxType.getShape(), b.getI1Type());
    Value ge = b.create<CompareOp>(loc, pred, CompareDirection::GE, local, splat(0));
    Value lt = b.create<CompareOp>(loc, pred, CompareDirection::LT, local, splat(rows));
    Value inside = b.create<AndOp>(loc, ge, lt);
    Value clamped = b.create<SelectOp>(loc, inside, local, splat(0));
    return {clamped, inside};
  }

  /// The indices' mask stretched to a looked-up shape whose index dims
  /// start at `axis`.
  Value stretch(OpBuilder &b, Location loc, Value inside, RankedTensorType shape,
                int64_t axis) {
    SmallVector<int64_t> dims;
    for (int64_t i = 0; i < tensorType(inside).getRank(); ++i)
      dims.push_back(axis + i);
    return b.create<BroadcastInDimOp>(
        loc, RankedTensorType::get(shape.getShape(), b.getI1Type()), inside, dims);
  }

  Value zerosLike(OpBuilder &b, Location loc, RankedTensorType t) {
    return b.create<ConstantOp>(loc,
                                SplatElementsAttr::get(t, b.getZeroAttr(t.getElementType())));
  }

  /// Retypes `op` to its rank's part (results sharded as `solved`), fixing
  /// the attributes that hold shapes or global indices. Returns the op's
  /// replacement values (the op's own results unless it was rebuilt).
  FailureOr<SmallVector<Value>> localize(Operation *op, const OpSharding &solved) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    SmallVector<RankedTensorType> locals;
    for (auto [r, s] : llvm::zip(op->getResults(), solved.results))
      locals.push_back(localType(tensorType(r), s, grid));

    if (auto gather = dyn_cast<GatherOp>(op)) {
      auto tableType = tensorType(gather.getOperand()); // already local
      int64_t axis = axisFromFront(gather.getAxis(), tableType.getRank());
      const DimSplit &split = solved.operands[0].dims[axis];
      if (split.split()) {
        if (split.blocks != 1)
          return op->emitError("trc-partition: a lookup into a table split in blocks");
        int64_t fullRows = tableType.getDimSize(axis) * grid.size(split.axis);
        auto [clamped, inside] = localIndices(b, loc, gather.getIndices(), split, fullRows);
        Value rows = b.create<GatherOp>(loc, locals[0], gather.getOperand(), clamped,
                                        gather.getAxisAttr());
        Value mask = stretch(b, loc, inside, locals[0], axis);
        Value out = b.create<SelectOp>(loc, mask, rows, zerosLike(b, loc, locals[0]));
        return SmallVector<Value>{out};
      }
    }
    if (auto scatter = dyn_cast<ScatterAddOp>(op)) {
      auto tableType = tensorType(scatter.getOperand());
      int64_t axis = axisFromFront(scatter.getAxis(), tableType.getRank());
      const DimSplit &split = solved.operands[0].dims[axis];
      if (split.split()) {
        if (split.blocks != 1)
          return op->emitError("trc-partition: a scatter into a table split in blocks");
        int64_t fullRows = tableType.getDimSize(axis) * grid.size(split.axis);
        auto [clamped, inside] = localIndices(b, loc, scatter.getIndices(), split, fullRows);
        auto updatesType = tensorType(scatter.getUpdates());
        Value mask = stretch(b, loc, inside, updatesType, axis);
        Value updates = b.create<SelectOp>(loc, mask, scatter.getUpdates(),
                                           zerosLike(b, loc, updatesType));
        Value out = b.create<ScatterAddOp>(loc, locals[0], scatter.getOperand(), clamped,
                                           updates, scatter.getAxisAttr());
        return SmallVector<Value>{out};
      }
    }
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      if (locals[0] != constant.getType()) {
        auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
        if (dense && dense.isSplat()) {
          Value out = b.create<ConstantOp>(loc, dense.resizeSplat(locals[0]));
          return SmallVector<Value>{out};
        }
        // A table (positions, a causal mask): every rank keeps it whole and
        // takes its part (a slice by its index on the axis: no traffic).
        OpBuilder after(op);
        after.setInsertionPointAfter(op);
        FailureOr<Value> part =
            reshard(after, loc, constant.getResult(),
                    Sharding::whole(constant.getType().getRank()), solved.results[0], grid);
        if (failed(part))
          return failure();
        return SmallVector<Value>{*part};
      }
    }
    if (auto slice = dyn_cast<SliceOp>(op)) {
      SmallVector<int64_t> start(slice.getStartIndices()), limit(slice.getLimitIndices());
      for (auto [d, split] : llvm::enumerate(solved.results[0].dims)) {
        if (!split.split())
          continue;
        int64_t t = grid.size(split.axis);
        int64_t size = (limit[d] - start[d]) / t;
        start[d] /= t;
        limit[d] = start[d] + size;
      }
      slice.setStartIndices(start);
      slice.setLimitIndices(limit);
    }
    for (auto [r, t] : llvm::zip(op->getResults(), locals))
      r.setType(t);
    return SmallVector<Value>(op->getResults());
  }

  LogicalResult run() {
    Block &body = func.getBody().front();
    // Each op's plan, made on the full types before anything is retyped
    // (rules read shapes from types).
    DenseMap<Operation *, OpSharding> plans;
    auto annotation = [](Value v) {
      return readSharding(v).value_or(Sharding::whole(tensorType(v).getRank()));
    };
    for (Operation &op : body.without_terminator()) {
      auto ruled = dyn_cast<ShardingRuleOpInterface>(&op);
      if (!ruled)
        return op.emitError("'") << op.getName() << "' has no sharding rule";
      SmallVector<std::optional<Sharding>> operands, results;
      for (Value v : op.getOperands())
        operands.push_back(annotation(v));
      for (Value r : op.getResults())
        results.push_back(annotation(r));
      rules[&op] = ruled.getShardingRule();
      plans[&op] = solveOpSharding(&op, rules[&op], operands, results, grid,
                                   /*resultsFirst=*/true);
      for (Value r : op.getResults())
        fullTypes[r] = tensorType(r);
    }
    // Arguments: their rank's part.
    SmallVector<Type> argTypes;
    for (BlockArgument arg : func.getArguments()) {
      Sharding s = readSharding(arg).value_or(Sharding::whole(tensorType(arg).getRank()));
      current[arg] = s;
      auto full = tensorType(arg);
      fullTypes[arg] = full;
      arg.setType(localType(full, s, grid));
      argTypes.push_back(arg.getType());
      // The runtime hands each rank its part: a parameter's over the
      // tensor axis, a graph input's (the sequence) over the context axis.
      StringRef axis = func.getArgAttr(arg.getArgNumber(), trc::abi::kParamAttr) ? StringRef(kTensorAxis)
                       : func.getArgAttr(arg.getArgNumber(), trc::abi::kInputAttr)
                           ? StringRef(kContextAxis)
                           : StringRef();
      int64_t d = axis.empty() ? -1 : s.dimSplitOver(axis);
      if (d >= 0 && !s.partial()) {
        Builder b(func.getContext());
        func.setArgAttr(arg.getArgNumber(), kSplitAttr,
                        b.getDenseI64ArrayAttr({d, s.dims[d].blocks, grid.size(axis),
                                                int64_t(s.dims[d].mirrored)}));
        func.setArgAttr(arg.getArgNumber(), kSplitOfAttr,
                        b.getDenseI64ArrayAttr(full.getShape()));
      }
    }
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops) {
      OpSharding solved = plans[op];
      if (std::optional<OpSharding> cheaper = reuseSplitCopy(op, solved))
        solved = *cheaper;
      SmallVector<Sharding> assigned;
      for (Value r : op->getResults())
        assigned.push_back(annotation(r));
      OpBuilder b(op);
      for (unsigned i = 0; i < op->getNumOperands(); ++i) {
        FailureOr<Value> v = to(b, op->getLoc(), op->getOperand(i), solved.operands[i]);
        if (failed(v))
          return failure();
        op->setOperand(i, *v);
      }
      FailureOr<SmallVector<Value>> produced = localize(op, solved);
      if (failed(produced))
        return failure();
      for (unsigned i = 0; i < op->getNumResults(); ++i) {
        Value result = op->getResult(i), value = (*produced)[i];
        current[value] = solved.results[i];
        if (solved.results[i] != assigned[i]) {
          OpBuilder after(op->getContext());
          after.setInsertionPointAfterValue(value);
          FailureOr<Value> moved = reshard(after, op->getLoc(), value, solved.results[i],
                                           assigned[i], grid);
          if (failed(moved))
            return failure();
          value = *moved;
          current[value] = assigned[i];
        }
        if (value != result) {
          Operation *def = value.getDefiningOp();
          result.replaceUsesWithIf(value, [&](OpOperand &use) {
            // Not the ops that compute the replacement from the result.
            Operation *user = use.getOwner();
            return user != def && !(def && user->isBeforeInBlock(def));
          });
        }
      }
      op->removeAttr(kShardingAttr);
      if (llvm::any_of(*produced, [&](Value v) { return v.getDefiningOp() != op; }))
        replaced.push_back(op);
    }
    // Returned values: the loss whole, gradients as their parameters.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    DenseMap<StringRef, unsigned> paramArg;
    for (BlockArgument arg : func.getArguments())
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), trc::abi::kParamAttr))
        paramArg[name.getValue()] = arg.getArgNumber();
    OpBuilder b(ret);
    for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
      Value v = ret.getOperand(i);
      Sharding target = Sharding::whole(tensorType(v).getRank());
      if (auto of = func.getResultAttrOfType<StringAttr>(i, trc::abi::kGradOfAttr))
        if (auto it = paramArg.find(of.getValue()); it != paramArg.end())
          target = current[func.getArgument(it->second)];
      FailureOr<Value> moved = to(b, ret.getLoc(), v, target);
      if (failed(moved))
        return failure();
      ret.setOperand(i, *moved);
    }
    for (BlockArgument arg : func.getArguments())
      func.removeArgAttr(arg.getArgNumber(), kShardingAttr);
    func.setType(FunctionType::get(func.getContext(), argTypes, ret.getOperandTypes()));
    // Erased last, so no value in `copiesOf` is freed while it is in use.
    for (Operation *op : replaced)
      if (op->use_empty())
        op->erase();
    return success();
  }
};

struct Partition : trc::impl::PartitionBase<Partition> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    Grid grid = Grid::read(module);
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !hasShardings(func))
        continue;
      FunctionPartitioner partitioner{func, grid};
      if (failed(partitioner.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
