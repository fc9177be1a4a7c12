//===- FusionPlanner.cpp - which ops of a function run as one kernel ------===//
//
// Every kernel op starts as a group of its own. Then, in order:
//
//  A. Matmul epilogues: a dot_general takes what cuBLASLt can apply to its
//     result: a constant scale (alpha), a bias add (a vector broadcast along
//     the rows), a residual add (beta = 1 with C the residual) and a GELU,
//     in that order. The GELU's input may also be used elsewhere (gelu_aux:
//     the library writes it too); other intermediates may not.
//  B. Greedy merging of elementwise and reduction groups: producer-consumer
//     pairs, and siblings reading the same large input, best byte savings
//     first. A merged group must have one iteration domain (a shape S and
//     reduced dimensions D: its ops work on S or on S without D, reductions
//     reduce D, broadcasts map S without D back onto S) and may not create a
//     cycle between groups.
//  C. Duplication: a chain of cheap elementwise producers is recomputed in
//     a consumer group when the bytes saved (the intermediate no longer read,
//     and no longer written when no one else reads it) exceed the cost of
//     recomputing it.
//  D. A GELU left as its own group after C (in training its intermediates
//     are read by the backward pass until C recomputes them there) joins the
//     epilogue of the matrix product that feeds it.
//
// broadcast_in_dim, iota and splat constants are never kernels inside a
// group: every group that reads one copies it and reads its operand instead.
//
// The planner's state is FusionPlannerImpl.h; this file sets it up and
// writes the plan, and each phase has its file: FusionPlannerEpilogues.cpp
// (A, D), FusionPlannerMerging.cpp (B), FusionPlannerDuplication.cpp (C),
// over the group graph (FusionPlannerGraph.cpp), the bytes a candidate
// kernel moves (FusionPlannerTraffic.cpp) and its iteration domain
// (FusionPlannerDomains.cpp).
//
//===----------------------------------------------------------------------===//
#include "FusionPlannerImpl.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>

using namespace mlir;

namespace trc::fusion {
namespace detail {

//===----------------------------------------------------------------------===//
// Setup
//===----------------------------------------------------------------------===//

bool Planner::expandsOperands(Operation *op) {
  OpClass c = classify(op);
  return c == OpClass::Elementwise || c == OpClass::Reduction;
}

bool Planner::materialized(Operation *bcast, llvm::DenseSet<Operation *> &memo) {
  for (Operation *user : bcast->getUsers()) {
    if (user->hasTrait<OpTrait::IsTerminator>() || !expandsOperands(user)) {
      if (classify(user) == OpClass::Broadcast && !memo.contains(user))
        continue; // a broadcast of a broadcast that is itself copied
      return true;
    }
  }
  return false;
}

int Planner::newGroup(OpClass cls, Operation *op) {
  groups.emplace_back();
  Group &g = groups.back();
  g.cls = cls;
  g.members.push_back(op);
  owner[op] = groups.size() - 1;
  return groups.size() - 1;
}

void Planner::init() {
  unsigned i = 0;
  SmallVector<Operation *> broadcasts;
  for (Operation &op : block) {
    index[&op] = i++;
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    OpClass c = classify(&op);
    if (c == OpClass::Free) {
      // Reshapes are views a group may copy; an op that reads values
      // (a call) still orders the groups around it.
      if (isa<ReshapeOp>(op) || op.getNumOperands() == 0)
        continue;
      c = OpClass::Opaque;
    }
    if (c == OpClass::Broadcast) {
      broadcasts.push_back(&op);
      continue;
    }
    if (op.getNumRegions() || op.getNumResults() != 1 ||
        !isa<RankedTensorType>(op.getResult(0).getType()))
      c = c == OpClass::Elementwise || c == OpClass::Reduction || c == OpClass::Matmul
              ? OpClass::Opaque
              : c;
    int g = newGroup(c, &op);
    if (c == OpClass::Matmul)
      groups[g].finalValue = op.getResult(0);
  }
  // Broadcasts some non-group op reads whole stay kernels (latest first,
  // so a broadcast of a broadcast knows whether its reader stays).
  llvm::DenseSet<Operation *> kept;
  for (Operation *b : llvm::reverse(broadcasts))
    if (materialized(b, kept)) {
      kept.insert(b);
      newGroup(OpClass::Broadcast, b);
    }
  for (Group &g : groups)
    sortOps(g.members);
  for (int g = 0, e = groups.size(); g < e; ++g)
    for (int s : successorsOf(g))
      addEdge(g, s);
}

//===----------------------------------------------------------------------===//
// The plan
//===----------------------------------------------------------------------===//

void Planner::settleLiveness() {
  for (int round = 0; round < 64; ++round) {
    bool changed = false;
    for (int g = 0, e = groups.size(); g < e; ++g) {
      if (!groups[g].alive || !groups[g].fusible())
        continue;
      Traffic t = traffic(viewOf({g}));
      OpSet live(t.live.begin(), t.live.end());
      for (Operation *op : groups[g].members)
        if (!live.contains(op) && deadMembers.insert(op).second)
          changed = true;
      for (Operation *op : groups[g].dups)
        if (!live.contains(op) && deadDups.insert({g, op}).second)
          changed = true;
    }
    if (!changed)
      return;
  }
}

FusionPlan Planner::finish() {
  settleLiveness();
  FusionPlan plan;
  // Ops no one reads any more (every reader recomputes them) go away.
  for (Operation &op : block)
    if (deadMembers.contains(&op))
      plan.erased.push_back(&op);
  for (int g = 0, e = groups.size(); g < e; ++g) {
    Group &group = groups[g];
    if (!group.alive || !group.fusible())
      continue;
    View view = viewOf({g});
    Traffic t = traffic(view);
    if (t.live.empty())
      continue;
    size_t kernels = t.live.size() +
                     llvm::count_if(t.copied, [](Operation *op) { return !isa<ConstantOp>(op); });
    if (kernels < 2)
      continue;
    PlannedFusion f;
    bool reduction = false, product = false;
    for (Operation *op : t.live) {
      OpClass c = classify(op);
      reduction = reduction || c == OpClass::Reduction;
      product = product || c == OpClass::Matmul;
    }
    f.kind = product     ? FusionKind::MatmulEpilogue
             : reduction ? FusionKind::Reduction
                         : FusionKind::Elementwise;
    if (product) {
      f.epilogue = group.bias && group.gelu ? "bias_gelu"
                   : group.bias             ? "bias"
                   : group.gelu             ? "gelu"
                                            : "none";
      f.alpha = group.alpha;
      f.accumulate = group.accumulate;
      if (group.gelu) {
        // The pre-activation also written: the GELU's input is an output.
        Value final = group.finalValue;
        f.geluAux = llvm::any_of(t.outputs, [&](Value v) { return v != final; });
      }
    }
    SmallVector<Operation *> body(t.live.begin(), t.live.end());
    body.append(t.copied.begin(), t.copied.end());
    sortOps(body);
    f.bodyOps = std::move(body);
    f.outputs = t.outputs;
    for (Operation *op : t.live)
      if (!view.dups.contains(op))
        plan.erased.push_back(op);
    plan.fusions.push_back(std::move(f));
  }
  return plan;
}

} // namespace detail

FusionPlan planFusion(Block &block, const FusionOptions &options) {
  return detail::Planner(block, options).run();
}

} // namespace trc::fusion
