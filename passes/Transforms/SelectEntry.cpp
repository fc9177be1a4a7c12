//===- SelectEntry.cpp - trc-select-entry -----------------------------------===//
//
// Keeps @entry as the module's only function, renamed @main, with the
// calls from it inlined (see Passes.td); `--trc-compile="entry=..."`
// (lib/Pipelines/Compile.cpp) runs it before lowering. Precondition: none.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace trc {
#define GEN_PASS_DEF_SELECTENTRY
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct SelectEntry : trc::impl::SelectEntryBase<SelectEntry> {
  using SelectEntryBase::SelectEntryBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(entry);
    if (!fn) {
      module.emitError("trc-select-entry: there is no function @") << entry;
      return signalPassFailure();
    }
    // Public, so that the inliner keeps it even when every call of it is
    // inlined (it erases dead private functions).
    fn.setPublic();
    OpPassManager inliner("builtin.module");
    inliner.addPass(createInlinerPass());
    if (failed(runPipeline(inliner, module)))
      return signalPassFailure();
    fn = module.lookupSymbol<func::FuncOp>(entry);
    for (auto other : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (other != fn)
        other.erase();
    fn.setSymName("main");
  }
};
} // namespace
