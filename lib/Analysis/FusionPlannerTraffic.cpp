//===- FusionPlannerTraffic.cpp - what a candidate kernel reads and writes ---===//
//
// Fusion planner phases (the overview is in FusionPlanner.cpp):
//   Views, inputs, outputs and bytes
//
//===----------------------------------------------------------------------===//
#include "FusionPlannerImpl.h"

#include <algorithm>

namespace trc::fusion::detail {

//===----------------------------------------------------------------------===//
// Views, inputs, outputs and bytes
//===----------------------------------------------------------------------===//

View Planner::viewOf(ArrayRef<int> ids, ArrayRef<Operation *> extraDups) {
  View v;
  for (int g : ids) {
    v.groups.push_back(g);
    v.fusible = v.fusible && groups[g].fusible();
    for (Operation *op : groups[g].members)
      if (v.set.insert(op).second)
        v.ops.push_back(op);
    for (Operation *op : groups[g].dups)
      if (v.set.insert(op).second) {
        v.ops.push_back(op);
        v.dups.insert(op);
      }
  }
  for (Operation *op : extraDups)
    if (v.set.insert(op).second) {
      v.ops.push_back(op);
      v.dups.insert(op);
    }
  sortOps(v.ops);
  return v;
}

bool Planner::readerNeedsValue(Operation *producer, Operation *user) {
  int g = ownerOf(user);
  return g < 0 || !groups[g].dupSet.contains(producer);
}

bool Planner::instanceReads(int g, Operation *user, Operation *producer, const View &view) {
  if (llvm::is_contained(view.groups, g))
    return false; // inside the view
  if (groups[g].dupSet.contains(producer))
    return false; // g recomputes the producer too
  return !deadDups.contains({g, user});
}

bool Planner::readOutside(Value v, Operation *producer, const View &view) {
  for (Operation *user : v.getUsers()) {
    if (user->hasTrait<OpTrait::IsTerminator>())
      return true;
    if (auto it = dupIn.find(user); it != dupIn.end())
      for (int g : it->second)
        if (instanceReads(g, user, producer, view))
          return true;
    if (view.set.contains(user))
      continue;
    OpClass c = classify(user);
    if (c == OpClass::Broadcast) {
      if (ownerOf(user) >= 0)
        return true; // a broadcast that stays a kernel reads it
      if (readOutside(user->getResult(0), producer, view))
        return true;
      continue;
    }
    if (isa<ReshapeOp>(user)) {
      if (readOutside(user->getResult(0), producer, view))
        return true;
      continue;
    }
    if (deadMembers.contains(user))
      continue;
    if (readerNeedsValue(producer, user))
      return true;
  }
  return false;
}

void Planner::expand(Value w, const View &view, llvm::SetVector<Value> &inputs,
                     llvm::SetVector<Operation *> *copied) {
  Operation *def = w.getDefiningOp();
  if (def && view.set.contains(def))
    return;
  if (isImmediate(w)) {
    if (copied)
      copied->insert(def);
    return;
  }
  if (def && (classify(def) == OpClass::Broadcast ||
              (isa<ReshapeOp>(def) && derivedInside(def->getOperand(0), view)))) {
    if (copied)
      copied->insert(def);
    for (Value operand : def->getOperands())
      expand(operand, view, inputs, copied);
    return;
  }
  inputs.insert(w);
}

bool Planner::derivedInside(Value v, const View &view) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  if (view.set.contains(def))
    return true;
  if (isa<BroadcastInDimOp, ReshapeOp>(def))
    return derivedInside(def->getOperand(0), view);
  return false;
}

Planner::Traffic Planner::traffic(const View &view) {
  Traffic t;
  OpSet live;
  for (Operation *op : llvm::reverse(view.ops)) {
    bool needed = false;
    for (Value r : op->getResults()) {
      bool outside = !view.dups.contains(op) && readOutside(r, op, view);
      if (outside)
        t.outputs.push_back(r);
      needed = needed || outside ||
               llvm::any_of(r.getUsers(), [&](Operation *u) {
                 return live.contains(u) || usedThroughCopy(u, live, view);
               });
    }
    if (needed)
      live.insert(op);
  }
  std::reverse(t.outputs.begin(), t.outputs.end());
  for (Operation *op : view.ops) {
    if (!live.contains(op))
      continue;
    t.live.push_back(op);
    bool expands = view.fusible && expandsOperands(op);
    for (Value operand : op->getOperands()) {
      if (expands) {
        expand(operand, view, t.inputs, &t.copied);
        continue;
      }
      Operation *def = operand.getDefiningOp();
      if (def && view.set.contains(def))
        continue;
      t.inputs.insert(operand);
    }
  }
  SmallVector<Value> inputs(t.inputs.begin(), t.inputs.end());
  t.bytes = kernelBytes(inputs, t.outputs);
  return t;
}

bool Planner::usedThroughCopy(Operation *user, const OpSet &live, const View &view) {
  if (!view.fusible || view.set.contains(user) ||
      (classify(user) != OpClass::Broadcast && !isa<ReshapeOp>(user)))
    return false;
  for (OpOperand &use : user->getResult(0).getUses()) {
    Operation *u = use.getOwner();
    if ((live.contains(u) && expandsOperands(u)) || usedThroughCopy(u, live, view))
      return true;
  }
  return false;
}

int64_t Planner::bytesOf(ArrayRef<int> ids, ArrayRef<Operation *> extraDups) {
  return traffic(viewOf(ids, extraDups)).bytes;
}

} // namespace trc::fusion::detail
