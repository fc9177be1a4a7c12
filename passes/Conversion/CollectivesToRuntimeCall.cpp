//===- CollectivesToRuntimeCall.cpp - trc-collectives-to-runtime-call -----===//
//
// Each trc collective (dialects/Trc/TrcCollectives.td) on tensors becomes a
// call to the runtime's entry (docs/ARTIFACT.md, "Collectives") between a
// read-only view of its operand and a fresh buffer for its result:
//
//   %in = bufferization.to_buffer %x read_only
//   %out = memref.alloc()
//   call @trc_rt_all_reduce(group, dtype, reduction, count, ptr(%in), ptr(%out))
//   %r = bufferization.to_tensor %out restrict writable
//
// so one-shot bufferization and the memory plan treat the result like any
// other temporary. With `overlap`, the collectives that can run beside
// other work become a start and a finish:
//
//   call @trc_rt_all_reduce_start(group, dtype, reduction, count, ptr(%in), ptr(%out), ticket)
//   ...                                       (ops that do not use %r)
//   %in2 = bufferization.to_buffer %x read_only
//   call @trc_rt_collective_finish(ticket, ptr(%in2), ptr(%out))
//   ...                                       (the first use of %r)
//
// (the second view of %x, marked kFinishViewAttr so that CSE keeps it
// apart, is a read one-shot bufferization sees, so no op writes %x's buffer
// in place before the finish; the plan keeps both buffers until the call.
// Where %x is itself a to_tensor of a buffer, canonicalization folds both
// views to that buffer and only the plan's lifetime protects it). Codes come from include/trc/Abi/CollectiveAbi.h;
// pointers are i64 as in trc-matmul-to-runtime-call.
// Preconditions: runs on trc IR before bufferization (identity layouts).
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"
#include "trc/Passes.h"

#include "trc/Abi/AttrNames.h"
#include "trc/Abi/CollectiveAbi.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/Builders.h"

namespace trc {
#define GEN_PASS_DEF_COLLECTIVESTORUNTIMECALL
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

std::optional<int64_t> dtypeCode(Type t) {
  if (t.isF32()) return trc::abi::kF32;
  if (t.isF64()) return trc::abi::kF64;
  if (t.isF16()) return trc::abi::kF16;
  if (t.isBF16()) return trc::abi::kBF16;
  if (t.isInteger(1)) return trc::abi::kI1;
  if (t.isInteger(8)) return trc::abi::kI8;
  if (t.isInteger(16)) return trc::abi::kI16;
  if (t.isInteger(32)) return trc::abi::kI32;
  if (t.isInteger(64)) return trc::abi::kI64;
  return std::nullopt;
}

int64_t reductionCode(trc::CollectiveReduction r) {
  switch (r) {
  case trc::CollectiveReduction::Sum: return trc::abi::kReduceSum;
  case trc::CollectiveReduction::Avg: return trc::abi::kReduceAvg;
  case trc::CollectiveReduction::Max: return trc::abi::kReduceMax;
  case trc::CollectiveReduction::Min: return trc::abi::kReduceMin;
  }
  return trc::abi::kReduceSum;
}

/// The runtime entry `name`, declared in `module` on first use.
func::FuncOp runtimeEntry(ModuleOp module, Location loc, StringRef name, TypeRange args) {
  auto callee = module.lookupSymbol<func::FuncOp>(name);
  if (!callee) {
    OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
    callee = top.create<func::FuncOp>(loc, name, top.getFunctionType(args, {}));
    callee.setPrivate();
  }
  return callee;
}

/// The op of `block` before which `value` is first used (its terminator
/// when nothing uses it).
Operation *firstUse(Value value, Block *block) {
  Operation *first = block->getTerminator();
  for (Operation *user : value.getUsers())
    if (Operation *top = block->findAncestorOpInBlock(*user); top && top->isBeforeInBlock(first))
      first = top;
  return first;
}

struct CollectivesToRuntimeCall
    : trc::impl::CollectivesToRuntimeCallBase<CollectivesToRuntimeCall> {
  using CollectivesToRuntimeCallBase::CollectivesToRuntimeCallBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> collectives;
    module.walk([&](Operation *op) {
      if (isa<trc::AllReduceOp, trc::ReduceScatterOp, trc::AllGatherOp, trc::BroadcastFromOp,
              trc::ShardSliceOp, trc::CollectivePermuteOp>(op))
        collectives.push_back(op);
    });
    for (Operation *op : collectives)
      if (failed(rewrite(module, op)))
        return signalPassFailure();
  }

  int64_t tickets = 0; // the module's started collectives, numbered

  LogicalResult rewrite(ModuleOp module, Operation *op) {
    auto inType = cast<RankedTensorType>(op->getOperand(0).getType());
    auto outType = cast<RankedTensorType>(op->getResult(0).getType());
    std::optional<int64_t> dtype = dtypeCode(inType.getElementType());
    if (!dtype)
      return op->emitOpError("has an element type the runtime's collectives do not take: ")
             << inType.getElementType();
    OpBuilder b(op);
    Location loc = op->getLoc();
    auto i64 = [&](int64_t v) -> Value {
      return b.create<arith::ConstantIntOp>(loc, b.getI64Type(), v);
    };
    auto pointer = [&](Value memref) -> Value {
      Value base = b.create<memref::ExtractAlignedPointerAsIndexOp>(loc, memref);
      return b.create<arith::IndexCastOp>(loc, b.getI64Type(), base);
    };
    auto inMemref = MemRefType::get(inType.getShape(), inType.getElementType());
    auto outMemref = MemRefType::get(outType.getShape(), outType.getElementType());
    auto in = b.create<bufferization::ToBufferOp>(loc, inMemref, op->getOperand(0));
    in.setReadOnly(true);
    Value out = b.create<memref::AllocOp>(loc, outMemref);

    std::string name;
    SmallVector<Value> args;
    // Started and finished later: the collectives that do not copy in place.
    bool started = overlap && isa<trc::AllReduceOp, trc::ReduceScatterOp, trc::AllGatherOp,
                                  trc::CollectivePermuteOp>(op);
    auto group = [&](trc::CollectiveGroup g) { return i64(static_cast<int64_t>(g)); };
    if (auto ar = dyn_cast<trc::AllReduceOp>(op)) {
      name = "trc_rt_all_reduce";
      args = {group(ar.getGroup()), i64(*dtype), i64(reductionCode(ar.getReduction())),
              i64(inType.getNumElements())};
    } else if (auto rs = dyn_cast<trc::ReduceScatterOp>(op)) {
      name = "trc_rt_reduce_scatter";
      args = {group(rs.getGroup()), i64(*dtype), i64(reductionCode(rs.getReduction())),
              i64(rs.getShards()), i64(outType.getNumElements())};
    } else if (auto ag = dyn_cast<trc::AllGatherOp>(op)) {
      name = "trc_rt_all_gather";
      args = {group(ag.getGroup()), i64(*dtype), i64(ag.getShards()),
              i64(inType.getNumElements())};
    } else if (auto bc = dyn_cast<trc::BroadcastFromOp>(op)) {
      name = "trc_rt_broadcast";
      args = {group(bc.getGroup()), i64(*dtype), i64(bc.getRoot()),
              i64(inType.getNumElements())};
    } else if (auto cp = dyn_cast<trc::CollectivePermuteOp>(op)) {
      name = "trc_rt_collective_permute";
      args = {group(cp.getGroup()), i64(*dtype), i64(cp.getShards()), i64(cp.getShift()),
              i64(inType.getNumElements())};
    } else {
      auto ss = cast<trc::ShardSliceOp>(op);
      name = "trc_rt_shard_slice";
      args = {group(ss.getGroup()), i64(*dtype), i64(ss.getShards()),
              i64(outType.getNumElements())};
    }
    args.append({pointer(in), pointer(out)});
    int64_t ticket = tickets;
    if (started) {
      name += "_start";
      args.push_back(i64(tickets++));
    }
    b.create<func::CallOp>(loc, runtimeEntry(module, loc, name, ValueRange(args).getTypes()),
                           args);
    auto result = b.create<bufferization::ToTensorOp>(loc, outType, out);
    result.setRestrict(true);
    result.setWritable(true);
    op->getResult(0).replaceAllUsesWith(result.getResult());
    op->erase();
    if (started) {
      b.setInsertionPoint(firstUse(result, result->getBlock()));
      auto again = b.create<bufferization::ToBufferOp>(loc, inMemref, in.getTensor());
      again.setReadOnly(true);
      again->setAttr(trc::abi::kFinishViewAttr, b.getUnitAttr());
      SmallVector<Value> finish{i64(ticket), pointer(again), pointer(out)};
      b.create<func::CallOp>(
          loc, runtimeEntry(module, loc, "trc_rt_collective_finish", ValueRange(finish).getTypes()),
          finish);
    }
    return success();
  }
};
} // namespace
