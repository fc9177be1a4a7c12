//===- PlanMemory.cpp - trc-plan-memory ------------------------------------===//
//
// Rewrites @main's planned memref.alloc ops into views of one arena argument
// (see Passes.td), and the host arena's (kHostPoolAttr) pointers into
// offsets. Precondition: bufferized @main; allocations are never
// deallocated (memref.dealloc of a planned buffer is an error); a host
// allocation is read only through memref.extract_aligned_pointer_as_index
// (the copy engine's calls), which is checked.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Analysis/MemoryPlan.h"
#include "trc/Passes.h"

#include "mlir/IR/Builders.h"

namespace trc {
#define GEN_PASS_DEF_PLANMEMORY
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct PlanMemory : trc::impl::PlanMemoryBase<PlanMemory> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.getBody().empty()) {
      module.emitError("trc-plan-memory needs a function @main with a body");
      return signalPassFailure();
    }
    bool freed = false;
    main.walk([&](memref::DeallocOp op) {
      op.emitError("planned buffers must not be deallocated");
      freed = true;
    });
    if (freed)
      return signalPassFailure();

    auto plan = trc::MemoryPlan::compute(main);
    if (std::string broken = plan.verify(); !broken.empty()) {
      main.emitError("invalid memory plan: ") << broken;
      return signalPassFailure();
    }
    OpBuilder b(module.getContext());
    // Host copies first: the program never touches the host arena, it
    // passes offsets into it to the copy engine.
    for (auto &a : plan.hostAllocations) {
      for (Operation *user : a.op->getUsers())
        if (!isa<memref::ExtractAlignedPointerAsIndexOp>(user)) {
          user->emitError("a host-arena buffer may only be passed to the copy engine's calls, "
                          "not read by '")
              << user->getName() << "'";
          return signalPassFailure();
        }
      for (Operation *user : llvm::make_early_inc_range(a.op->getUsers())) {
        b.setInsertionPoint(user);
        user->getResult(0).replaceAllUsesWith(
            b.create<arith::ConstantIndexOp>(user->getLoc(), a.offset));
        user->erase();
      }
      a.op->erase();
    }
    auto arenaType = MemRefType::get({std::max<int64_t>(plan.arenaBytes, 1)}, b.getI8Type());
    unsigned index = main.getNumArguments();
    if (failed(main.insertArgument(index, arenaType,
                                   b.getDictionaryAttr(b.getNamedAttr(
                                       trc::abi::kArenaAttr, b.getUnitAttr())),
                                   main.getLoc())))
      return signalPassFailure();
    Value arena = main.getArgument(index);
    for (auto &a : plan.allocations) {
      auto alloc = cast<memref::AllocOp>(a.op);
      b.setInsertionPoint(alloc);
      Value offset = b.create<arith::ConstantIndexOp>(alloc.getLoc(), a.offset);
      Value view = b.create<memref::ViewOp>(alloc.getLoc(), alloc.getType(), arena,
                                            offset, ValueRange{});
      alloc.replaceAllUsesWith(view);
      alloc.erase();
    }
    module->setAttr(trc::abi::kArenaBytesAttr, b.getI64IntegerAttr(plan.arenaBytes));
    module->setAttr(trc::abi::kArenaLowerBoundBytesAttr,
                    b.getI64IntegerAttr(plan.lowerBoundBytes));
    module->setAttr(trc::abi::kArenaNoReuseBytesAttr, b.getI64IntegerAttr(plan.noReuseBytes));
    if (!plan.hostAllocations.empty())
      module->setAttr(trc::kHostArenaBytesAttr, b.getI64IntegerAttr(plan.hostArenaBytes));
  }
};
} // namespace
