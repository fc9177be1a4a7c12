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
// other temporary. A constant operand is first copied into a buffer of its
// own (bufferization.alloc_tensor copy: on CUDA a kernel writes it into
// device memory; the global stays in the kernel). With `overlap`, the
// collectives that can run beside other work become a start and a finish:
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
// views to that buffer and only the plan's lifetime protects it). Codes come
// from include/trc/Abi/CollectiveAbi.h; pointers are i64 as in
// trc-matmul-to-runtime-call.
// Preconditions: runs on trc IR before bufferization (identity layouts).
//
//===----------------------------------------------------------------------===//
#include "trc/Conversion/Bufferization.h"
#include "trc/Dialect/Trc.h"
#include "trc/Passes.h"

#include "trc/Abi/AttrNames.h"
#include "trc/Abi/CollectiveAbi.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

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

/// Whether `op` only views its operand's bytes (bufferized to a subview or
/// a reshape of the collective's fresh, contiguous buffer, reading nothing):
/// a reshape, or a unit-stride slice of a 1-D tensor (how trc-data-parallel
/// cuts a bucket back into gradients).
bool viewsOnly(Operation *op) {
  if (isa<trc::ReshapeOp>(op))
    return true;
  auto slice = dyn_cast<trc::SliceOp>(op);
  return slice && cast<RankedTensorType>(slice.getOperand().getType()).getRank() == 1 &&
         llvm::all_of(slice.getStrides(), [](int64_t s) { return s == 1; });
}

/// The op of `block` before which `value`'s bytes are first read: its first
/// user that is not a view (viewsOnly), looking through views; the
/// terminator when nothing reads them.
Operation *firstRead(Value value, Block *block) {
  Operation *first = block->getTerminator();
  SmallVector<Value> worklist{value};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (viewsOnly(user) && user->getBlock() == block) {
        worklist.push_back(user->getResult(0));
        continue;
      }
      if (Operation *top = block->findAncestorOpInBlock(*user); top && top->isBeforeInBlock(first))
        first = top;
    }
  }
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
    if (overlap)
      prefetchGathers(collectives);
    for (Operation *op : collectives)
      if (failed(rewrite(module, op)))
        return signalPassFailure();
  }

  /// ZeRO-3's gathers of parameter shards (an all-gather of a function
  /// argument) each move to where the one before it in their block was:
  /// a parameter is fetched while the ops reading the previous one run
  /// (prefetch one gather ahead; one more gathered parameter is live).
  static void prefetchGathers(ArrayRef<Operation *> collectives) {
    DenseMap<Block *, SmallVector<Operation *>> gathers;
    for (Operation *op : collectives)
      if (auto arg = dyn_cast<BlockArgument>(op->getOperand(0));
          isa<trc::AllGatherOp>(op) && arg && arg.getOwner() == op->getBlock())
        gathers[op->getBlock()].push_back(op);
    for (auto &[block, ops] : gathers)
      for (size_t i = ops.size() - 1; i >= 1; --i)
        ops[i]->moveBefore(ops[i - 1]);
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
    Value operand = op->getOperand(0);
    // A constant operand (a per-rank table that trc.shard_slice picks a row
    // of) would be a global the runtime reads on the host: on a GPU it is
    // not device memory. Copied into a buffer first (a kernel on CUDA).
    if (matchPattern(operand, m_Constant()))
      operand = b.create<bufferization::AllocTensorOp>(loc, inType, ValueRange{}, operand);
    Value in = trc::readOnlyBuffer(b, loc, operand);
    Value out = trc::freshBuffer(b, loc, outType);

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
    Value result = trc::bufferAsTensor(b, loc, out, outType);
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
    if (started) {
      b.setInsertionPoint(firstRead(result, result.getParentBlock()));
      Value again = trc::readOnlyBuffer(b, loc, operand);
      again.getDefiningOp()->setAttr(trc::abi::kFinishViewAttr, b.getUnitAttr());
      SmallVector<Value> finish{i64(ticket), pointer(again), pointer(out)};
      b.create<func::CallOp>(
          loc, runtimeEntry(module, loc, "trc_rt_collective_finish", ValueRange(finish).getTypes()),
          finish);
    }
    return success();
  }
};
} // namespace
