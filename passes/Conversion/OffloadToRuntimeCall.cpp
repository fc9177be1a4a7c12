//===- OffloadToRuntimeCall.cpp - trc-offload-to-runtime-call --------------===//
//
// Each copy trc-offload-activations inserted becomes a start and a wait of
// the runtime's copy engine (docs/ARTIFACT.md, "Offloading"):
//
//   %h = trc.offload %x                 %xb = bufferization.to_buffer %x read_only
//   ...                                 %hb = memref.alloc() {trc.host_pool}
//                                       call @trc_rt_offload_start(k, 0, bytes, ptr(%xb), ptr(%hb))
//   %hx = trc.copy_wait %h from %x      call @trc_rt_offload_wait(k, ptr(%xb), ptr(%hb))
//                                       %hx = bufferization.to_tensor %hb restrict writable
//
// (a prefetch the other way round, into a fresh device buffer). The wait
// takes the same buffers as the start, so the memory plan, which follows
// pointers to the calls reading them, keeps the source alive until the copy
// is known to be done; the destination becomes a tensor only after the
// wait. Host destinations carry kHostPoolAttr: trc-plan-memory puts them in
// the host arena and turns their pointers into offsets. Copies are
// numbered from 0 in program order. Codes and names: include/trc/Abi/OffloadAbi.h.
// Preconditions: before bufferization; each copy is waited for once
// (the ops' verifiers).
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/OffloadAbi.h"
#include "trc/Conversion/Bufferization.h"
#include "trc/Analysis/MemoryPlan.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Dialect/Trc.h"
#include "trc/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/Builders.h"

namespace trc {
#define GEN_PASS_DEF_OFFLOADTORUNTIMECALL
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

func::FuncOp declare(ModuleOp module, StringRef name, unsigned arguments) {
  if (auto callee = module.lookupSymbol<func::FuncOp>(name))
    return callee;
  OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
  SmallVector<Type> types(arguments, top.getI64Type());
  auto callee = func::FuncOp::create(top, module.getLoc(), name, top.getFunctionType(types, {}));
  callee.setPrivate();
  return callee;
}

struct OffloadToRuntimeCall : trc::impl::OffloadToRuntimeCallBase<OffloadToRuntimeCall> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> starts;
    module.walk([&](Operation *op) {
      if (isa<trc::OffloadOp, trc::PrefetchOp>(op))
        starts.push_back(op);
    });
    if (starts.empty())
      return;
    func::FuncOp start = declare(module, trc::abi::kOffloadStartSymbol, 5);
    func::FuncOp wait = declare(module, trc::abi::kOffloadWaitSymbol, 3);
    for (auto [index, op] : llvm::enumerate(starts))
      lower(op, int64_t(index), start, wait);
  }

  void lower(Operation *op, int64_t copy, func::FuncOp startFn, func::FuncOp waitFn) {
    bool toHost = isa<trc::OffloadOp>(op);
    auto waitOp = cast<trc::CopyWaitOp>(*op->getResult(0).user_begin());
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t bytes = trc::analysis::tensorBytes(type);
    Location loc = op->getLoc();

    OpBuilder b(op);
    auto i64 = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
    };
    auto pointer = [&](Value memref) -> Value {
      Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
      return arith::IndexCastOp::create(b, loc, b.getI64Type(), base);
    };
    Value source = trc::readOnlyBuffer(b, loc, op->getOperand(0));
    memref::AllocOp destination = trc::freshBuffer(b, loc, type);
    if (toHost)
      destination->setAttr(trc::kHostPoolAttr, b.getUnitAttr());
    Value device = toHost ? source : Value(destination.getResult());
    Value host = toHost ? Value(destination.getResult()) : source;
    int64_t direction = toHost ? trc::abi::kOffloadToHost : trc::abi::kOffloadToDevice;
    func::CallOp::create(b, loc, startFn,
                         ValueRange{i64(copy), i64(direction), i64(bytes), pointer(device),
                                    pointer(host)});

    b.setInsertionPoint(waitOp);
    func::CallOp::create(b, loc, waitFn, ValueRange{i64(copy), pointer(device), pointer(host)});
    waitOp.getResult().replaceAllUsesWith(
        trc::bufferAsTensor(b, loc, destination.getResult(), type));
    waitOp.erase();
    op->erase();
  }
};

} // namespace
