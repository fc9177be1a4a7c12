//===- PrintMemoryPlan.cpp - test-trc-print-memory-plan -----------------===//
//
// Prints trc::MemoryPlan of a bufferized function (see Passes.td). The IR is
// unchanged. Precondition: bufferized IR.
//
//===----------------------------------------------------------------------===//
#include "trc/Analysis/MemoryPlan.h"
#include "trc/AnalysisPasses.h"

namespace trc {
#define GEN_PASS_DEF_TESTPRINTMEMORYPLAN
#include "AnalysisPasses.h.inc"
} // namespace trc

namespace {
/// A module pass, so that the functions print whole and in order (a
/// function pass's instances run in parallel and interleave their lines).
struct TestPrintMemoryPlan
    : trc::impl::TestPrintMemoryPlanBase<TestPrintMemoryPlan> {
  void runOnOperation() override {
    bool broken = false;
    getOperation().walk([&](mlir::func::FuncOp fn) {
      if (fn.isExternal())
        return;
      auto plan = trc::MemoryPlan::compute(fn);
      llvm::outs() << "@" << fn.getName() << ": ";
      plan.print(llvm::outs());
      std::string problem = plan.verify();
      if (!problem.empty()) {
        fn.emitError("invalid memory plan: ") << problem;
        broken = true;
      }
    });
    if (broken)
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace
