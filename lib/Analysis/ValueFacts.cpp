//===- ValueFacts.cpp - small facts about values and ops -------------------===//
//
// See include/trc/Analysis/ValueFacts.h.
//
//===----------------------------------------------------------------------===//
#include "trc/Analysis/ValueFacts.h"
#include "trc/Analysis/ElementBytes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace trc::analysis {

std::string nodeOf(Location loc) {
  if (auto named = dyn_cast<NameLoc>(loc))
    return named.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string name = nodeOf(inner); !name.empty())
        return name;
  if (auto site = dyn_cast<CallSiteLoc>(loc))
    return nodeOf(site.getCallee());
  return "";
}

int64_t tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  return storageBytes(t);
}

SmallVector<Value> inputsOf(Operation &op) {
  SmallVector<Value> inputs(op.getOperands());
  if (op.getNumRegions()) {
    llvm::SetVector<Value> captured;
    getUsedValuesDefinedAbove(op.getRegions(), captured);
    inputs.append(captured.begin(), captured.end());
  }
  return inputs;
}

Operation *topLevelIn(Operation *user, Block &body) {
  while (user && user->getBlock() != &body)
    user = user->getParentOp();
  return user;
}

} // namespace trc::analysis
