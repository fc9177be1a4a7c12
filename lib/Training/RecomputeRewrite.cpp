//===- RecomputeRewrite.cpp - cloning the forward into the backward --------===//
//
// rewrite() of include/trc/Training/Recompute.h. The stash values not kept
// are grouped (a layer's values together; a value outside the chain alone);
// each group's ops are cloned, in forward order, right before the first
// backward op reading one of its values, reading kept values and arguments
// through one trc.optimization_barrier each; the backward then reads the
// clones. Constants are read as they are (they are not temporaries).
//
//===----------------------------------------------------------------------===//
#include "trc/Training/Recompute.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Dialect/Trc.h"
#include "trc/Parallel/Pipeline.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace trc::recompute {

namespace {

/// Builds one group's clones before `at`.
struct GroupCloner {
  const StepActivations &a;
  const llvm::DenseSet<Value> &kept;
  OpBuilder b;
  IRMapping map;
  Attribute groupAttr;
  Attribute stage; // of `at`, for pipeline-staged steps
  RewriteSummary &summary;

  GroupCloner(const StepActivations &a, const llvm::DenseSet<Value> &kept, Operation *at,
              int64_t group, RewriteSummary &summary)
      : a(a), kept(kept), b(at), summary(summary) {
    groupAttr = b.getI64IntegerAttr(group);
    stage = at->getAttr(parallel::kStageAttr);
  }

  /// A clone is backward work of the stage that reads it (trc-pipeline-
  /// split reads this), whatever stage its original ran in: a barrier of
  /// the previous stage's output, say, runs where the layer is redone.
  void mark(Operation *op) {
    op->setAttr(abi::kRecomputeAttr, groupAttr);
    if (stage) {
      op->setAttr(parallel::kStageAttr, stage);
      op->setAttr(parallel::kBackwardAttr, b.getUnitAttr());
    }
  }

  Value materialize(Value x) {
    if (Value known = map.lookupOrNull(x))
      return known;
    Operation *def = x.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>())
      return x;
    if (!def || kept.contains(x)) {
      auto barrier = OptimizationBarrierOp::create(b, x.getLoc(), x);
      mark(barrier);
      map.map(x, barrier.getResult());
      return barrier.getResult();
    }
    for (Value in : analysis::inputsOf(*def))
      materialize(in);
    Operation *copy = b.clone(*def, map);
    mark(copy);
    ++summary.clonedOps;
    summary.recomputedFlops += matmulFlops(copy);
    return map.lookup(x);
  }
};

} // namespace

RewriteSummary rewrite(const StepActivations &a, const llvm::DenseSet<Value> &kept) {
  RewriteSummary summary;
  func::FuncOp fn = a.fn;
  Block &body = fn.getBody().front();
  // Groups, in stash order: a layer's values share one; others go alone.
  llvm::MapVector<int64_t, SmallVector<Value>> groups;
  int64_t alone = int64_t(a.layers.size());
  for (Value v : a.stash) {
    if (kept.contains(v))
      continue;
    auto it = a.layerOf.find(v.getDefiningOp());
    int64_t key = it != a.layerOf.end() && it->second >= 0 ? it->second : alone++;
    groups[key].push_back(v);
  }
  auto isBackwardUse = [&](OpOperand &use) {
    Operation *top = analysis::topLevelIn(use.getOwner(), body);
    return top && !a.forward.contains(top) && !top->hasTrait<OpTrait::IsTerminator>() &&
           !top->hasAttr(abi::kRecomputeAttr);
  };
  for (auto &[key, values] : groups) {
    Operation *first = nullptr;
    for (Value v : values)
      for (OpOperand &use : v.getUses())
        if (isBackwardUse(use)) {
          Operation *top = analysis::topLevelIn(use.getOwner(), body);
          if (!first || top->isBeforeInBlock(first))
            first = top;
        }
    if (!first)
      continue;
    GroupCloner cloner(a, kept, first, summary.groups++, summary);
    for (Value v : values) {
      Value copy = cloner.materialize(v);
      v.replaceUsesWithIf(copy, isBackwardUse);
    }
  }
  return summary;
}

} // namespace trc::recompute
