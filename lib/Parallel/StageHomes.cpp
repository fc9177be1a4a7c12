//===- StageHomes.cpp - the stage and phase of every op of @main_grad -----===//
//
// See trc/Parallel/StageHomes.h.
//
//===----------------------------------------------------------------------===//
#include "trc/Parallel/StageHomes.h"

#include "trc/Abi/AttrNames.h"
#include "trc/Analysis/ValueFacts.h"

using namespace mlir;

namespace trc::parallel {
namespace {

/// B or W: backward work another stage, or a B op of its own stage, reads
/// is B; the rest is W. Visited last to first, so users are settled.
void separateWeightGradients(Block &body, StageHomes &homes) {
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    auto it = homes.of.find(&op);
    if (it == homes.of.end() || it->second.phase != StagePhase::Backward)
      continue;
    StageHome &home = it->second;
    bool inputWork = false;
    for (Operation *user : op.getUsers()) {
      while (user && user->getBlock() != &body)
        user = user->getParentOp();
      StageHome used = homes.lookup(user);
      if (used.stage >= 0 && (used.stage != home.stage || used.phase == StagePhase::Backward))
        inputWork = true;
    }
    if (!inputWork)
      home.phase = StagePhase::Weights;
  }
}

} // namespace

FailureOr<StageHomes> findStageHomes(func::FuncOp grad, int64_t stages) {
  StageHomes homes;
  bool failedAny = false;
  Block &body = grad.getBody().front();
  for (Operation &op : body.without_terminator()) {
    StageHome home;
    if (auto stage = op.getAttrOfType<IntegerAttr>(abi::kStageAttr);
        stage && op.getNumOperands() != 0) {
      home.stage = stage.getInt();
      home.phase = op.hasAttr(abi::kBackwardAttr) ? StagePhase::Backward : StagePhase::Forward;
    } else if (op.getNumOperands() != 0 || op.getNumRegions() != 0) {
      // An op a pass between trc-autodiff and here added runs with the
      // latest op it reads.
      Operation *latest = nullptr;
      for (Value v : analysis::inputsOf(op))
        if (Operation *def = v.getDefiningOp(); def && homes.lookup(def).stage >= 0)
          if (!latest || latest->isBeforeInBlock(def))
            latest = def;
      if (latest)
        home = homes.lookup(latest);
    }
    if (home.stage >= stages) {
      op.emitError("stage ") << home.stage << " is outside the module's " << stages
                             << " stages";
      failedAny = true;
    }
    homes.of[&op] = home;
    if (home.phase == StagePhase::Forward &&
        llvm::all_of(analysis::inputsOf(op), [&](Value v) {
          if (auto arg = dyn_cast<BlockArgument>(v))
            return bool(grad.getArgAttr(arg.getArgNumber(), abi::kParamAttr));
          Operation *def = v.getDefiningOp();
          return homes.parameterOnly.contains(def) || (def && def->getNumOperands() == 0);
        }))
      homes.parameterOnly.insert(&op);
  }
  if (failedAny)
    return failure();
  separateWeightGradients(body, homes);
  return homes;
}

} // namespace trc::parallel
