//===- PrintPipelineSchedule.cpp - test-trc-print-pipeline-schedule -------===//
//
// Prints the pipeline schedule trc-run would run (see Passes.td): the
// runtime's own generator, check and simulator (runtime/train/
// PipelineSchedule.h), so the table printed is the table executed.
// Precondition: none; the IR is left unchanged. Bad options are errors.
//
//===----------------------------------------------------------------------===//
#include "trc/AnalysisPasses.h"
#include "trc/Parallel/Pipeline.h"

#include "runtime/spec/PipelineSchedule.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace trc {
#define GEN_PASS_DEF_TESTPRINTPIPELINESCHEDULE
#include "AnalysisPasses.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct TestPrintPipelineSchedule
    : trc::impl::TestPrintPipelineScheduleBase<TestPrintPipelineSchedule> {
  using TestPrintPipelineScheduleBase::TestPrintPipelineScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fail = [&](const std::string &message) {
      module.emitError("test-trc-print-pipeline-schedule: ") << message;
      signalPassFailure();
    };
    auto staged = module->getAttrOfType<DictionaryAttr>(trc::parallel::kPipelineAttr);
    auto fromModule = [&](const char *key) -> int64_t {
      auto value = staged ? staged.getAs<IntegerAttr>(key) : IntegerAttr();
      return value ? value.getInt() : 1;
    };
    trc::rt::StatusOr<trc::rt::ScheduleKind> kind = trc::rt::parseScheduleKind(schedule);
    if (!kind.ok())
      return fail(std::string(kind.status().message()));
    trc::rt::ScheduleShape shape;
    shape.ranks = int(ranks > 0 ? int64_t(ranks) : fromModule("stages"));
    // The module's chunks go with its ranks.
    shape.chunks = int(chunks > 0 ? int64_t(chunks) : ranks > 0 ? 1 : fromModule("virtual"));
    shape.microbatches = int(microbatches);
    shape.activeMicrobatches = int(active);
    trc::rt::StatusOr<trc::rt::PipelineSchedule> table = trc::rt::makeSchedule(*kind, shape);
    if (!table.ok())
      return fail(std::string(table.status().message()));
    llvm::raw_ostream &os = llvm::outs();
    os << trc::rt::formatSchedule(*table);
    trc::rt::Status checked = trc::rt::checkSchedule(*table);
    os << "check: " << (checked.ok() ? std::string("ok") : std::string(checked.message()))
       << "\n";
    trc::rt::ActionCosts costs;
    if (table->splitsWeights)
      costs.weights = 1; // B = W = F
    trc::rt::StatusOr<trc::rt::SimulatedPipeline> simulated =
        trc::rt::simulateSchedule(*table, costs);
    if (!simulated.ok())
      return fail(std::string(simulated.status().message()));
    os << "bubble: simulated " << llvm::format("%.4f", simulated->bubbleFraction) << ", formula "
       << llvm::format("%.4f", trc::rt::bubbleFormula(*kind, shape)) << "\n";
    os << "in flight:";
    for (int peak : simulated->peakInFlight)
      os << " " << peak;
    os << "\n";
  }
};
} // namespace
