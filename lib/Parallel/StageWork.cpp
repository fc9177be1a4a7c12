//===- StageWork.cpp - count a staged training step's work ----------------===//
//
// See trc/Parallel/StageWork.h.
//
//===----------------------------------------------------------------------===//
#include "trc/Parallel/StageWork.h"

#include "trc/Abi/AttrNames.h"
#include "trc/Analysis/FusionCostModel.h"
#include "trc/Analysis/Layers.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Dialect/Trc.h"
#include "trc/Parallel/Sharding.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace trc::parallel {
namespace {

double dims(RankedTensorType t, ArrayRef<int64_t> which) {
  double n = 1;
  for (int64_t d : which)
    n *= double(t.getDimSize(d));
  return n;
}

plan::ProductShape productOf(DotGeneralOp dot) {
  auto lhs = cast<RankedTensorType>(dot.getLhs().getType());
  auto rhs = cast<RankedTensorType>(dot.getRhs().getType());
  plan::ProductShape p;
  p.batch = dims(lhs, dot.getLhsBatchingDims());
  p.k = dims(lhs, dot.getLhsContractingDims());
  p.m = double(lhs.getNumElements()) / (p.batch * p.k);
  p.n = double(rhs.getNumElements()) / (p.batch * p.k);
  return p;
}

/// softmax(q k^T) v over [batch..., T, d] queries and [batch..., S, d]
/// keys: the scores (T x d by d x S) and the context (T x S by S x d).
void attentionProducts(Value q, Value k, int products, plan::PhaseWork &w) {
  auto qt = cast<RankedTensorType>(q.getType());
  auto kt = cast<RankedTensorType>(k.getType());
  double T = double(qt.getDimSize(qt.getRank() - 2)), d = double(qt.getDimSize(qt.getRank() - 1));
  double S = double(kt.getDimSize(kt.getRank() - 2));
  double batch = double(qt.getNumElements()) / (T * d);
  for (int i = 0; i < products; ++i)
    w.products.push_back(i % 2 == 0 ? plan::ProductShape{T, S, d, batch}
                                     : plan::ProductShape{T, d, S, batch});
}

double bytesOf(Value v) { return double(fusion::tensorBytes(v.getType())); }

/// Counts `op` into `w`.
void count(Operation *op, plan::PhaseWork &w) {
  if (auto dot = dyn_cast<DotGeneralOp>(op)) {
    w.products.push_back(productOf(dot));
    return;
  }
  if (auto a = dyn_cast<AttentionOp>(op))
    return attentionProducts(a.getQ(), a.getK(), 2, w);
  if (auto a = dyn_cast<AttentionGradOp>(op))
    return attentionProducts(a.getQ(), a.getK(), 5, w);
  auto collective = [&](plan::CommKind kind, CollectiveGroup group) {
    w.collectives.push_back({kind, stringifyCollectiveGroup(group).str(),
                             std::max(bytesOf(op->getOperand(0)), bytesOf(op->getResult(0)))});
  };
  if (auto c = dyn_cast<AllReduceOp>(op))
    return collective(plan::CommKind::AllReduce, c.getGroup());
  if (auto c = dyn_cast<AllGatherOp>(op))
    return collective(plan::CommKind::AllGather, c.getGroup());
  if (auto c = dyn_cast<ReduceScatterOp>(op))
    return collective(plan::CommKind::ReduceScatter, c.getGroup());
  if (auto c = dyn_cast<CollectivePermuteOp>(op))
    return collective(plan::CommKind::Permute, c.getGroup());
  if (auto c = dyn_cast<BroadcastFromOp>(op))
    return collective(plan::CommKind::Other, c.getGroup());
  if (!fusion::isKernel(op))
    return;
  w.kernels += 1;
  w.kernelBytes += double(fusion::unfusedBytes(op));
}

} // namespace

plan::CompiledWork summarizeStageWork(func::FuncOp grad, const StageHomes &homes) {
  plan::CompiledWork out;
  Block &body = grad.getBody().front();
  auto at = [&](int64_t s) -> plan::StageWork & {
    if (out.stages.size() <= size_t(s))
      out.stages.resize(size_t(s) + 1);
    return out.stages[size_t(s)];
  };
  llvm::DenseSet<std::pair<unsigned, int64_t>> paramSeen;
  llvm::StringSet<> trained; // parameters with a gradient
  for (unsigned r = 1; r < grad.getNumResults(); ++r)
    if (auto name = grad.getResultAttrOfType<StringAttr>(r, abi::kGradOfAttr))
      trained.insert(name.getValue());
  llvm::DenseSet<std::pair<Value, int64_t>> stashed;
  llvm::DenseSet<Value> sent;
  // The gradients' sums over the context axis: trc-data-parallel folds
  // them into its buckets, priced with the data axis' reduction.
  llvm::DenseSet<Operation *> dataReduced;
  for (unsigned r : contextSummedGradients(grad))
    dataReduced.insert(body.getTerminator()->getOperand(r).getDefiningOp());
  for (Operation &op : body.without_terminator()) {
    if (dataReduced.contains(&op))
      continue;
    StageHome home = homes.lookup(&op);
    if (home.stage < 0) {
      count(&op, out.unstaged);
      continue;
    }
    plan::StageWork &stage = at(home.stage);
    count(&op, stage.phases[int(home.phase)]);
    if (home.phase == StagePhase::Forward)
      stage.forwardCost += analysis::opCost(&op);
    for (Value v : analysis::inputsOf(op)) {
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        auto name = grad.getArgAttrOfType<StringAttr>(arg.getArgNumber(), abi::kParamAttr);
        if (arg.getOwner() != &body || !name || !trained.contains(name.getValue()))
          continue;
        // A parameter belongs to the stage of its copy (trc-pipeline-stages
        // tags each), however many pieces read it (a recomputed layer's
        // later piece reads the earlier piece's weights again); an untagged
        // one to its first reader. Frozen ones (masks, running statistics)
        // are not counted: no gradient, no optimizer state.
        auto owner = grad.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), abi::kStageAttr);
        int64_t s = owner ? owner.getInt() : home.stage;
        if (paramSeen.insert({arg.getArgNumber(), owner ? s : -1}).second) {
          plan::StageWork &holder = at(s);
          holder.paramBytes += bytesOf(arg);
          holder.paramElements += double(cast<RankedTensorType>(arg.getType()).getNumElements());
          holder.paramTensors += 1;
        }
        continue;
      }
      // A forward value a later phase reads is stashed by the reading stage
      // (another stage's value is received by its forward, then stashed: a
      // recomputed piece's input); one a later stage's forward reads is sent
      // (once each; the pricing's pipeline constants count these sends).
      StageHome from = homes.lookup(v.getDefiningOp());
      if (from.stage < 0 || from.phase != StagePhase::Forward ||
          homes.parameterOnly.contains(v.getDefiningOp()))
        continue;
      if (from.stage <= home.stage && home.phase != StagePhase::Forward &&
          stashed.insert({v, home.stage}).second)
        stage.stashBytes += bytesOf(v);
      if (from.stage < home.stage && home.phase == StagePhase::Forward && sent.insert(v).second)
        at(from.stage).sendBytes += bytesOf(v);
    }
  }
  for (unsigned r = 1; r < grad.getNumResults(); ++r)
    if (grad.getResultAttr(r, abi::kUpdateAttr))
      out.stateUpdates += 1;
  return out;
}

} // namespace trc::parallel
