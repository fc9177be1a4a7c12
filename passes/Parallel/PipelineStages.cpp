//===- PipelineStages.cpp - trc-pipeline-stages ----------------------------===//
//
// Tags @main's forward ops with their pipeline stage (see Passes.td and
// include/trc/Parallel/Pipeline.h for the cut) and gives each stage its own
// argument for a parameter several stages read.
// Preconditions: parameters are arguments (trc-parameters-to-arguments);
// @main has one block; trc-autodiff has not run yet.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Passes.h"
#include "trc/Parallel/Pipeline.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallSet.h"

namespace trc {
#define GEN_PASS_DEF_PIPELINESTAGES
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc::parallel;

namespace {

int64_t stageOfUser(Operation *user, Block &body) {
  while (user && user->getBlock() != &body)
    user = user->getParentOp();
  auto stage = user ? user->getAttrOfType<IntegerAttr>(kStageAttr) : IntegerAttr();
  return stage ? stage.getInt() : -1;
}

struct PipelineStages : trc::impl::PipelineStagesBase<PipelineStages> {
  using PipelineStagesBase::PipelineStagesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.getBody().empty() || !main.getBody().hasOneBlock()) {
      module.emitError("trc-pipeline-stages needs a function @main with one block");
      return signalPassFailure();
    }
    if (module.lookupSymbol("main_grad")) {
      module.emitError("trc-pipeline-stages runs before trc-autodiff (the module has @main_grad)");
      return signalPassFailure();
    }
    if (stages < 1 || virtualStages < 1) {
      module.emitError("trc-pipeline-stages: stages and virtual must be at least 1, got stages=")
          << int64_t(stages) << " virtual=" << int64_t(virtualStages);
      return signalPassFailure();
    }
    StageBalance how;
    if (balance == "cost") {
      how = StageBalance::Cost;
    } else if (balance == "layers") {
      how = StageBalance::Layers;
    } else if (balance == "pieces") {
      how = StageBalance::Pieces;
    } else {
      module.emitError("trc-pipeline-stages: balance expects cost, layers or pieces, got '")
          << balance << "'";
      return signalPassFailure();
    }
    llvm::DenseMap<Operation *, int64_t> stageOf;
    SmallVector<Operation *> parameterOnly;
    std::string error;
    if (failed(assignStages(main, stages * virtualStages, how, stageOf, parameterOnly, error))) {
      main.emitError(error);
      return signalPassFailure();
    }
    OpBuilder b(module.getContext());
    int64_t count = stages * virtualStages;
    if (how == StageBalance::Pieces) // one stage per piece, however many
      count = 0;
    for (auto [op, stage] : stageOf) {
      op->setAttr(kStageAttr, b.getI64IntegerAttr(stage));
      count = std::max(count, stage + 1);
    }
    copyParameterOnlyOps(main, parameterOnly, b);
    splitSharedParameters(main, b);
    module->setAttr(kPipelineAttr,
                    b.getDictionaryAttr(
                        {b.getNamedAttr("stages", b.getI64IntegerAttr(count / virtualStages)),
                         b.getNamedAttr("virtual", b.getI64IntegerAttr(virtualStages))}));
  }

  /// An op on parameters alone (a weight transpose) read by several stages
  /// is copied into each, so no stage sends another a parameter's image.
  /// In reverse order, so that a chain of such ops is copied whole.
  void copyParameterOnlyOps(func::FuncOp main, ArrayRef<Operation *> ops, OpBuilder &b) {
    Block &body = main.getBody().front();
    for (Operation *op : llvm::reverse(ops)) {
      int64_t own = op->getAttrOfType<IntegerAttr>(kStageAttr).getInt();
      llvm::SmallSet<int64_t, 4> others;
      for (Operation *user : op->getUsers())
        if (int64_t s = stageOfUser(user, body); s >= 0 && s != own)
          others.insert(s);
      for (int64_t s : others) {
        b.setInsertionPointAfter(op);
        Operation *copy = b.clone(*op);
        copy->setAttr(kStageAttr, b.getI64IntegerAttr(s));
        for (auto [from, to] : llvm::zip(op->getResults(), copy->getResults()))
          from.replaceUsesWithIf(to, [&](OpOperand &use) {
            return use.getOwner() != copy && stageOfUser(use.getOwner(), body) == s;
          });
      }
    }
  }

  /// Each parameter argument gets `trc.stage` (the lowest stage reading it);
  /// every further stage that reads it gets its own copy of the argument.
  void splitSharedParameters(func::FuncOp main, OpBuilder &b) {
    Block &body = main.getBody().front();
    unsigned original = main.getNumArguments();
    for (unsigned i = 0; i < original; ++i) {
      if (!main.getArgAttr(i, trc::abi::kParamAttr))
        continue;
      BlockArgument arg = main.getArgument(i);
      llvm::SmallSet<int64_t, 4> readers;
      for (Operation *user : arg.getUsers())
        if (int64_t s = stageOfUser(user, body); s >= 0)
          readers.insert(s);
      if (readers.empty())
        continue;
      SmallVector<int64_t> sorted(readers.begin(), readers.end());
      llvm::sort(sorted);
      main.setArgAttr(i, kStageAttr, b.getI64IntegerAttr(sorted.front()));
      for (int64_t s : llvm::drop_begin(sorted)) {
        NamedAttrList attrs(main.getArgAttrDict(i));
        attrs.set(kStageAttr, b.getI64IntegerAttr(s));
        unsigned at = main.getNumArguments();
        if (failed(main.insertArgument(at, arg.getType(), attrs.getDictionary(b.getContext()),
                                       arg.getLoc())))
          return signalPassFailure();
        arg.replaceUsesWithIf(main.getArgument(at), [&](OpOperand &use) {
          return stageOfUser(use.getOwner(), body) == s;
        });
      }
    }
  }
};

} // namespace
