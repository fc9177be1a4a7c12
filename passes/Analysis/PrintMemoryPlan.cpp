//===- PrintMemoryPlan.cpp - test-trc-print-memory-plan -----------------===//
//
// Prints trc::MemoryPlan of a bufferized function (see Passes.td). The IR is
// unchanged. Precondition: bufferized IR.
//
//===----------------------------------------------------------------------===//
#include "trc/Analysis/MemoryPlan.h"
#include "trc/Passes.h"

namespace trc {
#define GEN_PASS_DEF_TESTPRINTMEMORYPLAN
#include "Passes.h.inc"
} // namespace trc

namespace {
struct TestPrintMemoryPlan
    : trc::impl::TestPrintMemoryPlanBase<TestPrintMemoryPlan> {
  void runOnOperation() override {
    auto plan = trc::MemoryPlan::compute(getOperation());
    llvm::outs() << "@" << getOperation().getName() << ": ";
    plan.print(llvm::outs());
    std::string broken = plan.verify();
    if (!broken.empty()) {
      getOperation().emitError("invalid memory plan: ") << broken;
      return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }
};
} // namespace
