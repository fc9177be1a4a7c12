//===- PropagateShardings.cpp - seeds to every value, to a fixpoint --------===//
//
// propagateShardings (include/trc/Parallel/Sharding.h): sweeps the body
// forward then backward, each op filling the values around it that are
// still unknown with what its rule derives from the known ones, until a
// sweep changes nothing. Known values are never overwritten: where two ops
// disagree about a value the first decision stands and trc-partition
// reshards at the other op (solveOpSharding weighs a disagreement inside
// one op by the bytes each side would move). Only informative shardings
// (split or partial) spread; the values nothing reaches end whole. Graph
// inputs (`trc.input`) are whole unless annotated.
//
//===----------------------------------------------------------------------===//
#include "trc/Parallel/Sharding.h"

#include "trc/Abi/AttrNames.h"

using namespace mlir;

namespace trc::parallel {

LogicalResult propagateShardings(func::FuncOp func, const Grid &grid, bool finish) {
  DenseMap<Value, Sharding> known;
  for (BlockArgument arg : func.getArguments()) {
    if (auto s = readSharding(arg))
      known[arg] = *s;
    else if (func.getArgAttr(arg.getArgNumber(), trc::abi::kInputAttr))
      // The trainer feeds every rank the whole batch rows of its data
      // rank: graph inputs stay whole (their users slice what they need).
      known[arg] = Sharding::whole(cast<RankedTensorType>(arg.getType()).getRank());
  }
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front().without_terminator()) {
    for (Value r : op.getResults())
      if (auto s = readSharding(r))
        known[r] = *s;
    auto ruled = dyn_cast<ShardingRuleOpInterface>(&op);
    if (!ruled)
      return op.emitError("'") << op.getName() << "' has no sharding rule";
    ops.push_back(&op);
  }
  auto lookup = [&](Value v) -> std::optional<Sharding> {
    auto it = known.find(v);
    return it == known.end() ? std::nullopt : std::optional<Sharding>(it->second);
  };
  auto sweep = [&](Operation *op) {
    bool changed = false;
    SmallVector<std::optional<Sharding>> operands, results;
    bool anyKnown = false, anyUnknown = false;
    for (Value v : op->getOperands()) {
      operands.push_back(lookup(v));
      (operands.back() ? anyKnown : anyUnknown) = true;
    }
    for (Value v : op->getResults()) {
      results.push_back(lookup(v));
      (results.back() ? anyKnown : anyUnknown) = true;
    }
    if (!anyKnown || !anyUnknown)
      return false;
    ShardingRule rule = cast<ShardingRuleOpInterface>(op).getShardingRule();
    OpSharding solved = solveOpSharding(op, rule, operands, results, grid, false);
    for (auto [v, s, old] : llvm::zip(op->getOperands(), solved.operands, operands))
      if (!old && s.informative() && !s.partial()) {
        known[v] = s;
        changed = true;
      }
    for (auto [v, s, old] : llvm::zip(op->getResults(), solved.results, results))
      if (!old && s.informative()) {
        known[v] = s;
        changed = true;
      }
    return changed;
  };
  for (int round = 0; round < 64; ++round) {
    bool changed = false;
    for (Operation *op : ops)
      changed |= sweep(op);
    for (Operation *op : llvm::reverse(ops))
      changed |= sweep(op);
    if (!changed)
      break;
  }
  auto rankOf = [](Value v) { return cast<RankedTensorType>(v.getType()).getRank(); };
  auto write = [&](Value v) {
    if (std::optional<Sharding> s = lookup(v))
      writeSharding(v, *s);
    else if (finish)
      writeSharding(v, Sharding::whole(rankOf(v)));
  };
  for (BlockArgument arg : func.getArguments())
    write(arg);
  for (Operation *op : ops)
    for (Value r : op->getResults())
      write(r);
  return success();
}

} // namespace trc::parallel
