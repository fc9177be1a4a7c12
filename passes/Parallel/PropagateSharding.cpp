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

struct PropagateSharding : trc::impl::PropagateShardingBase<PropagateSharding> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !trc::parallel::hasShardings(func))
      return;
    auto module = func->getParentOfType<ModuleOp>();
    if (failed(trc::parallel::propagateShardings(func, trc::parallel::Grid::read(module))))
      signalPassFailure();
  }
};

} // namespace
