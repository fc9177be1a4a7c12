//===- FuseOps.cpp - trc-fuse ------------------------------------------------===//
//
// Groups the ops of each function into kernels (planFusion decides:
// lib/Analysis/FusionPlanner.cpp) and rewrites each group of two or more ops
// into a trc.fusion: its body clones the group's ops, recomputed producers
// and copied broadcasts and constants; its operands are what the group reads
// and its results what others read. Ops the groups replaced are erased and the block is put back
// in a topological order. The function records its cost before fusion in
// `trc.unfused_cost = array<i64: kernels, bytes>` for
// trc-print-fusion-summary.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Analysis/FusionPlanner.h"

#include "trc/Passes.h"

#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

namespace trc {
#define GEN_PASS_DEF_FUSEOPS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;
using namespace trc::fusion;

namespace {

/// Builds the trc.fusion of `f` after its last body op; returns it.
FusionOp buildFusion(const PlannedFusion &f) {
  Operation *last = f.bodyOps.back();
  MLIRContext *ctx = last->getContext();
  OpBuilder b(ctx);
  b.setInsertionPointAfter(last);

  SmallVector<Location> locs;
  for (Operation *op : f.bodyOps)
    if (!isa<ConstantOp, BroadcastInDimOp, IotaOp>(op))
      locs.push_back(op->getLoc());
  Location loc = locs.empty() ? last->getLoc() : b.getFusedLoc(locs);

  // Operands: what the body ops read that they do not compute.
  SmallVector<Value> inputs;
  llvm::DenseSet<Value> known;
  for (Operation *op : f.bodyOps) {
    for (Value operand : op->getOperands())
      if (known.insert(operand).second)
        inputs.push_back(operand);
    for (Value r : op->getResults())
      known.insert(r);
  }
  SmallVector<Type> resultTypes;
  for (Value v : f.outputs)
    resultTypes.push_back(v.getType());
  auto fusion = FusionOp::create(
      b, loc, resultTypes, inputs, FusionKindAttr::get(ctx, f.kind),
      f.kind == FusionKind::MatmulEpilogue ? b.getStringAttr(f.epilogue) : StringAttr(),
      f.alpha ? b.getF64FloatAttr(*f.alpha) : FloatAttr(),
      f.accumulate ? b.getUnitAttr() : UnitAttr(), f.geluAux ? b.getUnitAttr() : UnitAttr());
  Block *body = &fusion.getBody().emplaceBlock();
  IRMapping map;
  for (Value input : inputs)
    map.map(input, body->addArgument(input.getType(), input.getLoc()));
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  for (Operation *op : f.bodyOps)
    inner.clone(*op, map);
  SmallVector<Value> yielded;
  for (Value v : f.outputs)
    yielded.push_back(map.lookup(v));
  YieldOp::create(inner, loc, yielded);
  return fusion;
}

struct FuseOps : trc::impl::FuseOpsBase<FuseOps> {
  using FuseOpsBase::FuseOpsBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (!fn.getBody().hasOneBlock())
      return; // declarations; multi-block bodies are left alone
    Block &block = fn.getBody().front();
    if (!fn->hasAttr(trc::abi::kUnfusedCostAttr)) {
      KernelTotals before = measure(block);
      fn->setAttr(trc::abi::kUnfusedCostAttr,
                  DenseI64ArrayAttr::get(fn.getContext(), {before.kernels, before.bytes}));
    }

    FusionOptions options;
    options.cost.bytesPerFlop = bytesPerFlop;
    options.siblings = siblings;
    options.matmulEpilogues = matmulEpilogues;
    options.duplicate = duplicate;
    options.maxDuplicateOps = maxDuplicateOps;
    FusionPlan plan = planFusion(block, options);
    if (plan.fusions.empty() && plan.erased.empty())
      return;

    llvm::DenseSet<Operation *> erased(plan.erased.begin(), plan.erased.end());
    llvm::DenseSet<Operation *> copied;
    SmallVector<std::pair<Value, Value>> replacements;
    for (const PlannedFusion &f : plan.fusions) {
      FusionOp fusion = buildFusion(f);
      for (auto [original, result] : llvm::zip(f.outputs, fusion.getResults()))
        replacements.push_back({original, result});
      for (Operation *op : f.bodyOps)
        if (!erased.contains(op))
          copied.insert(op);
    }
    for (auto [original, result] : replacements)
      original.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !erased.contains(use.getOwner());
      });
    // Users before producers: erase the replaced ops, and the copied
    // broadcasts, constants and producers no one reads any more.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
      bool replaced = erased.contains(&op);
      bool leftover = copied.contains(&op) && isPure(&op) && op.use_empty();
      if (!replaced && !leftover)
        continue;
      if (!op.use_empty()) {
        auto diag = op.emitError("trc-fuse: a fused op is still read outside its fusion");
        for (Operation *user : op.getUsers())
          diag.attachNote(user->getLoc()) << "read by " << user->getName();
        return signalPassFailure();
      }
      op.erase();
    }
    if (!sortTopologically(&block)) {
      fn.emitError("trc-fuse: the fused groups depend on each other in a cycle");
      return signalPassFailure();
    }
  }
};

} // namespace
