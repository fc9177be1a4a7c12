//===- FusionPlannerDuplication.cpp - recomputing producers in consumers ----===//
//
// Fusion planner phases (the overview is in FusionPlanner.cpp):
//   C. Duplication
//
//===----------------------------------------------------------------------===//
#include "FusionPlannerImpl.h"

namespace trc::fusion::detail {

//===----------------------------------------------------------------------===//
// C. Duplication
//===----------------------------------------------------------------------===//

SmallVector<Operation *> Planner::chainFor(Value input, const Traffic &t) {
  SmallVector<Operation *> chain;
  SmallVector<Value> stack{input};
  OpSet seen;
  while (!stack.empty()) {
    Value v = stack.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || isImmediate(v))
      continue;
    if (v != input && t.inputs.contains(v))
      continue; // read already
    OpClass c = classify(def);
    if (c == OpClass::Broadcast) {
      for (Value operand : def->getOperands())
        stack.push_back(operand);
      continue;
    }
    int o = ownerOf(def);
    if (c != OpClass::Elementwise || o < 0 || !groups[o].mergeable())
      continue; // read as an input (the cost decides whether that pays)
    if (!seen.insert(def).second)
      continue;
    chain.push_back(def);
    if (chain.size() > options.maxDuplicateOps)
      return {};
    for (Value operand : def->getOperands())
      stack.push_back(operand);
  }
  sortOps(chain);
  return chain;
}

void Planner::duplicate() {
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (int g = 0, e = groups.size(); g < e; ++g) {
      if (!groups[g].mergeable())
        continue;
      // Each success changes g's inputs: look again.
      for (int attempt = 0; attempt < 16 && duplicateOne(g); ++attempt)
        changed = true;
    }
    if (!changed)
      return;
  }
}

bool Planner::duplicateOne(int g) {
  Traffic t = traffic(viewOf({g}));
  for (Value input : t.inputs) {
    Operation *def = input.getDefiningOp();
    if (!def || classify(def) != OpClass::Elementwise)
      continue;
    SmallVector<Operation *> chain = chainFor(input, t);
    if (!chain.empty() && tryDuplicate(g, chain))
      return true;
  }
  return false;
}

bool Planner::tryDuplicate(int g, ArrayRef<Operation *> chain) {
  // Groups whose traffic may change: g and the owners of the chain's ops
  // and of what the chain reads.
  llvm::SmallSetVector<int, 8> affected;
  affected.insert(g);
  for (Operation *op : chain) {
    affected.insert(ownerOf(op));
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (int o = ownerOf(def); o >= 0)
          affected.insert(o);
  }
  View with = viewOf({g}, chain);
  if (!domainOf(with))
    return false;
  int64_t before = 0;
  for (int a : affected)
    before += bytesOf({a});
  // Apply, measure, and undo when it does not pay.
  Group &group = groups[g];
  SmallVector<Operation *> added;
  for (Operation *op : chain)
    if (group.dupSet.insert(op).second) {
      group.dups.push_back(op);
      dupIn[op].push_back(g);
      added.push_back(op);
    }
  sortOps(group.dups);
  int64_t after = 0;
  for (int a : affected)
    after += bytesOf({a});
  if (!added.empty() && duplicationPays(before - after, chain, options.cost))
    return true;
  for (Operation *op : added) {
    group.dupSet.erase(op);
    llvm::erase(dupIn[op], g);
  }
  llvm::erase_if(group.dups, [&](Operation *op) { return llvm::is_contained(added, op); });
  return false;
}

} // namespace trc::fusion::detail
