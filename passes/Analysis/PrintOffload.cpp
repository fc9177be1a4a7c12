//===- PrintOffload.cpp - test-trc-print-offload ---------------------------===//
//
// Prints the decisions trc-offload-activations recorded on the module (see
// Passes.td). Precondition: trc-offload-activations has run; the IR is left
// unchanged.
//
//===----------------------------------------------------------------------===//
#include "trc/AnalysisPasses.h"
#include "PlanAttributes.h"
#include "trc/Training/Offload.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

namespace trc {
#define GEN_PASS_DEF_TESTPRINTOFFLOAD
#include "AnalysisPasses.h.inc"
} // namespace trc

using namespace mlir;

namespace {

using trc::intOf;

struct TestPrintOffload : trc::impl::TestPrintOffloadBase<TestPrintOffload> {
  void runOnOperation() override {
    auto plan = getOperation()->getAttrOfType<DictionaryAttr>(trc::abi::kOffloadPlanAttr);
    if (!plan) {
      getOperation().emitError("no trc.offload_plan: run trc-offload-activations first");
      return signalPassFailure();
    }
    llvm::raw_ostream &os = llvm::outs();
    int64_t layers = intOf(plan, "layers");
    auto values = plan.getAs<ArrayAttr>("values");
    os << "offload: horizon " << intOf(plan, "horizon") << ", min-bytes "
       << intOf(plan, "min_bytes") << ", " << layers << " layers\n";
    os << "stash: " << intOf(plan, "stash_values") << " values, " << intOf(plan, "stash_bytes")
       << " B; offloaded " << (values ? values.size() : 0) << " values, "
       << intOf(plan, "offloaded_bytes") << " B\n";
    if (auto perLayer = plan.getAs<DenseI64ArrayAttr>("layer_bytes"))
      for (auto [l, bytes] : llvm::enumerate(perLayer.asArrayRef()))
        os << "layer " << l << ": " << bytes << " B\n";
    for (auto [i, attr] : llvm::enumerate(values ? values.getValue() : ArrayRef<Attribute>{})) {
      auto v = cast<DictionaryAttr>(attr);
      int64_t prefetchLayer = intOf(v, "prefetch_layer");
      os << "value " << i << ": layer " << intOf(v, "layer") << " "
         << v.getAs<TypeAttr>("type").getValue() << " " << intOf(v, "bytes") << " B ("
         << v.getAs<StringAttr>("defined_by").getValue() << " at " << intOf(v, "defined")
         << "): offload " << intOf(v, "offload") << ", wait " << intOf(v, "wait")
         << ", prefetch " << intOf(v, "prefetch") << " (";
      if (prefetchLayer >= layers)
        os << "start of the backward";
      else
        os << "backward of layer " << prefetchLayer;
      os << "), first use " << intOf(v, "first_use");
      if (int64_t views = intOf(v, "views"))
        os << ", " << views << " view" << (views == 1 ? "" : "s");
      os << "\n";
    }
  }
};

} // namespace
