//===- Recompute.cpp - trc-recompute ---------------------------------------===//
//
// Decides which activations @main_grad keeps and which it recomputes in the
// backward, and rewrites it so (see Passes.td and
// include/trc/Training/Recompute.h), recording the decisions on the module.
// Preconditions: trc-autodiff has run (@main_grad: forward, then backward).
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "trc/Training/Recompute.h"

#include "mlir/IR/Builders.h"

namespace trc {
#define GEN_PASS_DEF_RECOMPUTE
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc::recompute;

namespace {

/// The decisions as a module attribute (test-trc-print-recompute).
DictionaryAttr describe(OpBuilder &b, const StepActivations &a, const Decision &d,
                        int64_t budget, const RewriteSummary &summary) {
  SmallVector<Attribute> layers;
  for (auto [layer, choice] : llvm::zip_equal(a.layers, d.choices)) {
    layers.push_back(b.getDictionaryAttr({
        b.getNamedAttr("choice", b.getStringAttr(choiceName(choice))),
        b.getNamedAttr("ops", b.getI64IntegerAttr(int64_t(layer.ops.size()))),
        b.getNamedAttr("fused_attention", b.getBoolAttr(layer.fusedAttention)),
        b.getNamedAttr("kept", b.getDenseI64ArrayAttr(llvm::ArrayRef<int64_t>(
                                   layer.keptBytes, kLayerChoices))),
        b.getNamedAttr("flops", b.getDenseF64ArrayAttr(llvm::ArrayRef<double>(
                                    layer.flops, kLayerChoices))),
    }));
  }
  return b.getDictionaryAttr({
      b.getNamedAttr("policy", b.getStringAttr(policyName(d.policy))),
      b.getNamedAttr("budget", b.getI64IntegerAttr(budget)),
      b.getNamedAttr("layers", b.getArrayAttr(layers)),
      b.getNamedAttr("peak_before", b.getI64IntegerAttr(d.peakBefore)),
      b.getNamedAttr("peak_after", b.getI64IntegerAttr(d.peakAfter)),
      b.getNamedAttr("step_flops", b.getF64FloatAttr(a.stepFlops)),
      b.getNamedAttr("recomputed_flops", b.getF64FloatAttr(summary.recomputedFlops)),
      b.getNamedAttr("groups", b.getI64IntegerAttr(summary.groups)),
      b.getNamedAttr("cloned_ops", b.getI64IntegerAttr(summary.clonedOps)),
  });
}

struct Recompute : trc::impl::RecomputeBase<Recompute> {
  using RecomputeBase::RecomputeBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Policy chosen;
    if (!parsePolicy(policy, chosen)) {
      module.emitError("trc-recompute: policy expects none, selective, full or budget, got '")
          << policy << "'";
      return signalPassFailure();
    }
    if (chosen == Policy::Budget && budget <= 0) {
      module.emitError("trc-recompute: policy=budget needs budget=BYTES (a positive byte count)");
      return signalPassFailure();
    }
    if (chosen != Policy::Budget && budget != 0) {
      module.emitError("trc-recompute: budget is only read by policy=budget (got policy=")
          << policy << ")";
      return signalPassFailure();
    }
    auto grad = module.lookupSymbol<func::FuncOp>("main_grad");
    if (!grad || grad.getBody().empty() || !grad.getBody().hasOneBlock()) {
      module.emitError("trc-recompute needs @main_grad with one block: run trc-autodiff first");
      return signalPassFailure();
    }
    std::string error;
    FailureOr<StepActivations> analysis = analyze(grad, error);
    if (failed(analysis)) {
      // Nothing to recompute in a step without layers; policy none (the
      // training pipeline's default) lets later passes report what is wrong.
      if (chosen == Policy::None)
        return;
      grad.emitError("trc-recompute: ") << error;
      return signalPassFailure();
    }
    FailureOr<Decision> decision = decide(*analysis, chosen, budget, error);
    if (failed(decision)) {
      grad.emitError("trc-recompute: ") << error;
      return signalPassFailure();
    }
    RewriteSummary summary;
    if (chosen != Policy::None)
      summary = rewrite(*analysis, keptSet(*analysis, decision->choices, decision->cheap));
    OpBuilder b(module.getContext());
    module->setAttr(trc::abi::kRecomputePlanAttr,
                    describe(b, *analysis, *decision, budget, summary));
  }
};

} // namespace
