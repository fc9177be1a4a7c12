//===- Unfuse.cpp - trc-unfuse ------------------------------------------------===//
//
// Inlines every trc.fusion back into its block: the body's ops are cloned
// before it with the block arguments replaced by the operands, and its
// results by the yielded values. Copies of broadcasts and constants that
// several fusions made stay separate ops (run cse to merge them). Lowerings
// that do not take fused regions (trc-lower-to-linalg) run after this.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace trc {
#define GEN_PASS_DEF_UNFUSE
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;

namespace {

struct Unfuse : trc::impl::UnfuseBase<Unfuse> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    SmallVector<FusionOp> fusions;
    fn.walk([&](FusionOp f) { fusions.push_back(f); });
    for (FusionOp fusion : fusions) {
      OpBuilder b(fusion);
      IRMapping map;
      map.map(fusion.getBodyBlock().getArguments(), fusion.getInputs());
      for (Operation &op : fusion.getBodyBlock().without_terminator())
        b.clone(op, map);
      for (auto [result, value] : llvm::zip(fusion.getResults(), fusion.getYield().getValues()))
        result.replaceAllUsesWith(map.lookupOrDefault(value));
      fusion.erase();
    }
    fn->removeAttr(trc::abi::kUnfusedCostAttr);
  }
};

} // namespace
