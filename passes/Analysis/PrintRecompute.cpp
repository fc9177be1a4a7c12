//===- PrintRecompute.cpp - test-trc-print-recompute -----------------------===//
//
// Prints the decisions trc-recompute recorded on the module (see Passes.td).
// Precondition: trc-recompute has run; the IR is left unchanged.
//
//===----------------------------------------------------------------------===//
#include "trc/AnalysisPasses.h"
#include "PlanAttributes.h"
#include "trc/Training/Recompute.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace trc {
#define GEN_PASS_DEF_TESTPRINTRECOMPUTE
#include "AnalysisPasses.h.inc"
} // namespace trc

using namespace mlir;

namespace {

using trc::floatOf;
using trc::intOf;

struct TestPrintRecompute : trc::impl::TestPrintRecomputeBase<TestPrintRecompute> {
  void runOnOperation() override {
    auto plan = getOperation()->getAttrOfType<DictionaryAttr>(trc::abi::kRecomputePlanAttr);
    if (!plan) {
      getOperation().emitError("no trc.recompute_plan: run trc-recompute first");
      return signalPassFailure();
    }
    llvm::raw_ostream &os = llvm::outs();
    auto policy = plan.getAs<StringAttr>("policy");
    os << "recompute: policy " << (policy ? policy.getValue() : "?");
    if (int64_t budget = intOf(plan, "budget"))
      os << " budget " << budget << " B";
    os << "\n";
    auto layers = plan.getAs<ArrayAttr>("layers");
    for (auto [i, attr] : llvm::enumerate(layers ? layers.getValue() : ArrayRef<Attribute>{})) {
      auto layer = cast<DictionaryAttr>(attr);
      auto kept = layer.getAs<DenseI64ArrayAttr>("kept").asArrayRef();
      auto flops = layer.getAs<DenseF64ArrayAttr>("flops").asArrayRef();
      os << "layer " << i << ": ops " << intOf(layer, "ops") << " choice "
         << layer.getAs<StringAttr>("choice").getValue();
      if (layer.getAs<BoolAttr>("fused_attention").getValue())
        os << " (fused attention)";
      os << " kept keep " << kept[0] << " selective " << kept[1] << " full " << kept[2]
         << " B redo selective " << llvm::format("%.3g", flops[1]) << " full "
         << llvm::format("%.3g", flops[2]) << " FLOPs\n";
    }
    os << "groups " << intOf(plan, "groups") << ", cloned ops " << intOf(plan, "cloned_ops")
       << "\n";
    int64_t before = intOf(plan, "peak_before"), after = intOf(plan, "peak_after");
    os << "estimated peak: " << before << " B before, " << after << " B after ("
       << llvm::format("%.3f", before ? double(after) / double(before) : 1.0) << ")\n";
    double step = floatOf(plan, "step_flops"), redone = floatOf(plan, "recomputed_flops");
    os << "matrix FLOPs: step " << llvm::format("%.4g", step) << ", recomputed "
       << llvm::format("%.4g", redone) << " ("
       << llvm::format("%.3f", step > 0 ? (step + redone) / step : 1.0) << "x)\n";
  }
};

} // namespace
