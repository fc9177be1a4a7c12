//===- PropagateSharding.cpp - trc-propagate-sharding ----------------------===//
//
// The pass around trc::parallel::propagateShardings (see Passes.td and
// include/trc/Parallel/Sharding.h). Functions with no annotation at all are
// left alone. Preconditions: the module's trc.grid names the seeds' axes.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "trc/Parallel/Sharding.h"

namespace trc {
#define GEN_PASS_DEF_PROPAGATESHARDING
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

bool annotated(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments())
    if (trc::parallel::readSharding(arg))
      return true;
  bool any = false;
  func.walk([&](Operation *op) { any |= op->hasAttr(trc::parallel::kShardingAttr); });
  return any;
}

struct PropagateSharding : trc::impl::PropagateShardingBase<PropagateSharding> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !annotated(func))
      return;
    auto module = func->getParentOfType<ModuleOp>();
    if (failed(trc::parallel::propagateShardings(func, trc::parallel::Grid::read(module))))
      signalPassFailure();
  }
};

} // namespace
