//===- PrintStageWork.cpp - trc-print-stage-work --------------------------===//
//
// Prints trc/Parallel/StageWork.h's count of a staged @main_grad (see
// Passes.td). FLOPs and bytes print as whole numbers, so tests can check
// them exactly. The IR is unchanged.
// Precondition: @main_grad's ops carry trc.stage (trc-pipeline-stages,
// trc-autodiff) and it was not split.
//
//===----------------------------------------------------------------------===//
#include "trc/AnalysisPasses.h"
#include "trc/Parallel/StageWork.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace trc {
#define GEN_PASS_DEF_PRINTSTAGEWORK
#include "AnalysisPasses.h.inc"
} // namespace trc

using namespace mlir;

namespace {

void print(llvm::raw_ostream &os, const char *name, const trc::plan::PhaseWork &w) {
  os << " " << name << ": products " << w.products.size() << " flops "
     << llvm::format("%.0f", w.productFlops()) << " kernels "
     << llvm::format("%.0f", w.kernels) << " bytes " << llvm::format("%.0f", w.kernelBytes)
     << " comm " << w.collectives.size() << " bytes " << llvm::format("%.0f", w.commBytes())
     << ";";
}

struct PrintStageWork : trc::impl::PrintStageWorkBase<PrintStageWork> {
  void runOnOperation() override {
    auto grad = getOperation().lookupSymbol<func::FuncOp>("main_grad");
    if (!grad || grad.getBody().empty()) {
      getOperation().emitError("trc-print-stage-work needs @main_grad (run the training "
                               "pipeline with stop-at-gradients=true)");
      return signalPassFailure();
    }
    FailureOr<trc::parallel::StageHomes> homes =
        trc::parallel::findStageHomes(grad, std::numeric_limits<int64_t>::max());
    if (failed(homes))
      return signalPassFailure();
    trc::plan::CompiledWork work = trc::parallel::summarizeStageWork(grad, *homes);
    if (work.stages.empty()) {
      grad.emitError("no op carries trc.stage: run the training pipeline with pipeline-stages");
      return signalPassFailure();
    }
    llvm::raw_ostream &os = llvm::outs();
    for (auto [s, stage] : llvm::enumerate(work.stages)) {
      os << "stage " << s << ":";
      print(os, "F", stage.phase(trc::plan::WorkPhase::Forward));
      print(os, "B", stage.phase(trc::plan::WorkPhase::Backward));
      print(os, "W", stage.phase(trc::plan::WorkPhase::Weights));
      os << " params " << llvm::format("%.0f", stage.paramElements) << " ("
         << llvm::format("%.0f", stage.paramBytes) << " B) in "
         << llvm::format("%.0f", stage.paramTensors) << " stash "
         << llvm::format("%.0f", stage.stashBytes) << " B sends "
         << llvm::format("%.0f", stage.sendBytes) << " B\n";
    }
    os << "unstaged:";
    print(os, "ops", work.unstaged);
    os << " state updates " << llvm::format("%.0f", work.stateUpdates) << "\n";
  }
};

} // namespace
