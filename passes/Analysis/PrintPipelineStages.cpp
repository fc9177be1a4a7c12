//===- PrintPipelineStages.cpp - test-trc-print-pipeline-stages -----------===//
//
// Prints each pipeline stage's share of @main (see Passes.td): ops, cost,
// attention layers, parameter bytes read and activation bytes passed on,
// then the balance (largest stage cost over the mean).
// Precondition: trc-pipeline-stages has run; the IR is left unchanged.
//
//===----------------------------------------------------------------------===//
#include "trc/AnalysisPasses.h"
#include "trc/Parallel/Pipeline.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace trc {
#define GEN_PASS_DEF_TESTPRINTPIPELINESTAGES
#include "AnalysisPasses.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct TestPrintPipelineStages
    : trc::impl::TestPrintPipelineStagesBase<TestPrintPipelineStages> {
  void runOnOperation() override {
    auto main = getOperation().lookupSymbol<func::FuncOp>("main");
    if (!main || main.getBody().empty()) {
      getOperation().emitError("test-trc-print-pipeline-stages needs @main");
      return signalPassFailure();
    }
    std::vector<trc::parallel::StageSummary> stages = trc::parallel::summarizeStages(main);
    if (stages.empty()) {
      main.emitError("no op carries trc.stage: run trc-pipeline-stages first");
      return signalPassFailure();
    }
    llvm::raw_ostream &os = llvm::outs();
    double total = 0, largest = 0;
    for (auto [s, stage] : llvm::enumerate(stages)) {
      os << "stage " << s << ": ops " << stage.ops << " cost "
         << llvm::format("%.3g", stage.cost) << " layers " << stage.layers << " params "
         << stage.paramBytes << " B sends " << stage.sendBytes << " B\n";
      total += stage.cost;
      largest = std::max(largest, stage.cost);
    }
    os << "balance: largest stage cost / mean "
       << llvm::format("%.3f", largest / (total / double(stages.size()))) << "\n";
  }
};
} // namespace
