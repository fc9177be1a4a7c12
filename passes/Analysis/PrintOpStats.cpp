//===- PrintOpStats.cpp - test-trc-print-op-stats ----------------------===//
//
// Prints op counts and parameter totals of a module (see Passes.td).
// Precondition: none; the IR is left unchanged.
//
//===----------------------------------------------------------------------===//
#include "trc/AnalysisPasses.h"
#include "trc/Analysis/ElementBytes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"
#include <map>

namespace trc {
#define GEN_PASS_DEF_TESTPRINTOPSTATS
#include "AnalysisPasses.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct ParameterTotals {
  int64_t count = 0, elements = 0, bytes = 0;
  void add(RankedTensorType type) {
    ++count;
    elements += type.getNumElements();
    bytes += trc::storageBytes(type);
  }
};

struct TestPrintOpStats
    : trc::impl::TestPrintOpStatsBase<TestPrintOpStats> {
  void runOnOperation() override {
    std::map<std::string, int64_t> counts; // sorted, so the output is stable
    ParameterTotals trainable, frozen;
    getOperation()->walk([&](Operation *op) {
      if (auto param = dyn_cast<trc::ParameterOp>(op)) {
        (param.isTrainable() ? trainable : frozen).add(param.getTensorType());
        return;
      }
      if (op->getDialect() && op->getDialect()->getNamespace() == "trc")
        ++counts[op->getName().getStringRef().str()];
    });
    auto &os = llvm::outs();
    os << "ops:";
    for (auto &[name, n] : counts)
      os << " " << name << "=" << n;
    os << "\nparameters: " << trainable.count << " trainable (" << trainable.elements
       << " elements, " << trainable.bytes << " bytes), " << frozen.count
       << " frozen (" << frozen.elements << " elements, " << frozen.bytes
       << " bytes)\n";
    markAllAnalysesPreserved();
  }
};
} // namespace
