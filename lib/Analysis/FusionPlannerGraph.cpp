//===- FusionPlannerGraph.cpp - the group graph of the fusion planner -------===//
//
// Fusion planner phases (the overview is in FusionPlanner.cpp):
//   Group graph (for cycle checks)
//
//===----------------------------------------------------------------------===//
#include "FusionPlannerImpl.h"

namespace trc::fusion::detail {

//===----------------------------------------------------------------------===//
// Group graph (for cycle checks)
//===----------------------------------------------------------------------===//

void Planner::readersOf(Value v, int self, llvm::SmallSetVector<int, 8> &out) {
  for (Operation *user : v.getUsers()) {
    if (user->hasTrait<OpTrait::IsTerminator>())
      continue;
    int g = ownerOf(user);
    if (g >= 0 && g != self)
      out.insert(g);
    if (classify(user) == OpClass::Broadcast || isa<ReshapeOp>(user))
      readersOf(user->getResult(0), self, out);
  }
}

SmallVector<int> Planner::successorsOf(int g) {
  llvm::SmallSetVector<int, 8> out;
  for (Operation *op : groups[g].members)
    for (Value r : op->getResults())
      readersOf(r, g, out);
  return SmallVector<int>(out.begin(), out.end());
}

void Planner::addEdge(int from, int to) {
  if (from == to)
    return;
  groups[from].succ.insert(to);
  groups[to].pred.insert(from);
}

bool Planner::indirectPath(int from, int to) {
  llvm::DenseSet<int> seen;
  SmallVector<int> stack;
  for (int s : groups[from].succ)
    if (s != to)
      stack.push_back(s);
  while (!stack.empty()) {
    int g = stack.pop_back_val();
    if (g == to)
      return true;
    if (!seen.insert(g).second)
      continue;
    for (int s : groups[g].succ)
      stack.push_back(s);
  }
  return false;
}

void Planner::mergeInto(int a, int b) {
  Group &ga = groups[a], &gb = groups[b];
  for (Operation *op : gb.members) {
    ga.members.push_back(op);
    owner[op] = a;
  }
  sortOps(ga.members);
  for (Operation *op : gb.dups) {
    llvm::erase(dupIn[op], b);
    if (ga.dupSet.insert(op).second) {
      ga.dups.push_back(op);
      dupIn[op].push_back(a);
    }
  }
  sortOps(ga.dups);
  if (gb.cls == OpClass::Reduction)
    ga.cls = OpClass::Reduction;
  for (int p : gb.pred) {
    groups[p].succ.erase(b);
    if (p != a) {
      groups[p].succ.insert(a);
      ga.pred.insert(p);
    }
  }
  for (int s : gb.succ) {
    groups[s].pred.erase(b);
    if (s != a) {
      groups[s].pred.insert(a);
      ga.succ.insert(s);
    }
  }
  ga.succ.erase(a);
  ga.pred.erase(a);
  ga.succ.erase(b);
  ga.pred.erase(b);
  gb.alive = false;
  gb.members.clear();
  gb.dups.clear();
  gb.dupSet.clear();
  gb.succ.clear();
  gb.pred.clear();
}

} // namespace trc::fusion::detail
