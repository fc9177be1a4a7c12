//===- FusionPlannerEpilogues.cpp - matrix product epilogues ----------------===//
//
// Fusion planner phases (the overview is in FusionPlanner.cpp):
//   A. Matmul epilogues
//   D. GELU after recomputation
//
//===----------------------------------------------------------------------===//
#include "FusionPlannerImpl.h"

namespace trc::fusion::detail {

//===----------------------------------------------------------------------===//
// A. Matmul epilogues
//===----------------------------------------------------------------------===//

Operation *Planner::onlyUser(Value v) {
  if (!v.hasOneUse())
    return nullptr;
  Operation *user = *v.user_begin();
  int g = ownerOf(user);
  if (g < 0 || groups[g].cls != OpClass::Elementwise || groups[g].members.size() != 1)
    return nullptr;
  return user;
}

bool Planner::isBias(Value v, RankedTensorType resultType) {
  auto b = v.getDefiningOp<BroadcastInDimOp>();
  if (!b || resultType.getRank() == 0)
    return false;
  auto in = cast<RankedTensorType>(b.getOperand().getType());
  return in.getRank() == 1 && in.getDimSize(0) == resultType.getShape().back() &&
         b.getBroadcastDimensions() == ArrayRef<int64_t>{resultType.getRank() - 1};
}

void Planner::absorb(int g, Operation *op) {
  int old = ownerOf(op);
  if (old >= 0 && old != g)
    mergeInto(g, old);
}

void Planner::planEpilogues() {
  for (int g = 0, e = groups.size(); g < e; ++g) {
    Group &m = groups[g];
    if (!m.alive || m.cls != OpClass::Matmul)
      continue;
    auto type = cast<RankedTensorType>(m.finalValue.getType());
    if (!isa<FloatType>(type.getElementType()))
      continue;
    Value cur = m.finalValue;
    // alpha * A B
    if (auto mul = dyn_cast_or_null<MulOp>(onlyUser(cur))) {
      Value other = mul.getLhs() == cur ? mul.getRhs() : mul.getLhs();
      if (other != cur && isImmediate(other)) {
        auto dense = cast<DenseElementsAttr>(other.getDefiningOp<ConstantOp>().getValue());
        groups[g].alpha = dense.getSplatValue<APFloat>().convertToDouble();
        absorb(g, mul);
        cur = mul.getResult();
      }
    }
    // + bias, + residual (C with beta = 1), either order
    while (auto add = dyn_cast_or_null<AddOp>(onlyUser(cur))) {
      Value other = add.getLhs() == cur ? add.getRhs() : add.getLhs();
      if (other == cur)
        break;
      if (!groups[g].bias && isBias(other, type)) {
        groups[g].bias = true;
      } else if (!groups[g].accumulate && !isImmediate(other) &&
                 !other.getDefiningOp<BroadcastInDimOp>() &&
                 !other.getDefiningOp<IotaOp>()) {
        groups[g].accumulate = true;
      } else {
        break;
      }
      absorb(g, add);
      cur = add.getResult();
    }
    groups[g].finalValue = cur;
    // gelu, its input possibly also written (gelu_aux)
    if (auto match = matchGelu(cur, [](OpOperand &) { return false; })) {
      bool free = llvm::all_of(match->ops, [&](Operation *op) {
        int o = ownerOf(op);
        return o >= 0 && groups[o].cls == OpClass::Elementwise && groups[o].members.size() == 1;
      });
      if (free)
        takeGelu(g, *match);
    }
  }
}

void Planner::takeGelu(int g, const GeluMatch &match) {
  for (Operation *op : match.ops)
    absorb(g, op);
  groups[g].gelu = true;
  groups[g].finalValue = match.ops.back()->getResult(0);
}

//===----------------------------------------------------------------------===//
// D. GELU after recomputation
//===----------------------------------------------------------------------===//

bool Planner::readsFromMemory(Operation *def, Operation *user) {
  OpClass c = classify(user);
  if (user->hasTrait<OpTrait::IsTerminator>())
    return true;
  if ((c == OpClass::Broadcast && ownerOf(user) < 0) || isa<ReshapeOp>(user))
    return llvm::any_of(user->getUsers(),
                        [&](Operation *u) { return readsFromMemory(def, u); });
  int o = ownerOf(user);
  if (o < 0 || (!deadMembers.contains(user) && !groups[o].dupSet.contains(def)))
    return true;
  if (auto it = dupIn.find(user); it != dupIn.end())
    for (int h : it->second)
      if (!deadDups.contains({h, user}) && !groups[h].dupSet.contains(def))
        return true;
  return false;
}

void Planner::extendEpiloguesWithGelu() {
  settleLiveness();
  for (int g = 0, e = groups.size(); g < e; ++g) {
    Group &m = groups[g];
    if (!m.alive || m.cls != OpClass::Matmul || m.gelu || !m.finalValue)
      continue;
    auto match = matchGelu(m.finalValue, [&](OpOperand &use) {
      Operation *def = use.get().getDefiningOp();
      return def && !readsFromMemory(def, use.getOwner());
    });
    if (!match)
      continue;
    // The GELU must be all of one group that reads only the epilogue's value.
    int ge = ownerOf(match->ops.front());
    if (ge < 0 || !groups[ge].mergeable())
      continue;
    Traffic t = traffic(viewOf({ge}));
    OpSet matched(match->ops.begin(), match->ops.end());
    bool exact = t.live.size() == match->ops.size() &&
                 llvm::all_of(t.live, [&](Operation *op) { return matched.contains(op); }) &&
                 t.inputs.size() == 1 && t.inputs[0] == m.finalValue;
    if (!exact)
      continue;
    takeGelu(g, *match);
  }
}

} // namespace trc::fusion::detail
