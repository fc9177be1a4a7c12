//===- OffloadActivations.cpp - trc-offload-activations --------------------===//
//
// Moves the activations @main_grad keeps to host memory after their forward
// and back before their backward (see Passes.td and
// include/trc/Training/Offload.h), recording the decisions on the module.
// Preconditions: trc-autodiff has run (@main_grad: forward, then backward),
// trc-recompute too when it runs; not split into pipeline stages.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "trc/Training/Offload.h"

#include "mlir/IR/Builders.h"

namespace trc {
#define GEN_PASS_DEF_OFFLOADACTIVATIONS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

struct OffloadActivations : trc::impl::OffloadActivationsBase<OffloadActivations> {
  using OffloadActivationsBase::OffloadActivationsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto grad = module.lookupSymbol<func::FuncOp>("main_grad");
    if (!grad || grad.getBody().empty() || !grad.getBody().hasOneBlock()) {
      module.emitError("trc-offload-activations needs @main_grad with one block: run "
                       "trc-autodiff first");
      return signalPassFailure();
    }
    trc::offload::Options options;
    options.horizon = horizon;
    options.minBytes = minBytes;
    std::string error;
    FailureOr<trc::offload::Plan> plan = trc::offload::planOffload(grad, options, error);
    if (failed(plan)) {
      grad.emitError("trc-offload-activations: ") << error;
      return signalPassFailure();
    }
    trc::offload::rewrite(grad, *plan);
    Builder b(module.getContext());
    module->setAttr(trc::abi::kOffloadPlanAttr, trc::offload::describe(b, *plan));
  }
};

} // namespace
