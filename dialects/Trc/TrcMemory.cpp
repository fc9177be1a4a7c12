//===- TrcMemory.cpp - verifiers of the offloading ops ---------------------===//
//
// How trc.offload, trc.prefetch and trc.copy_wait (dialects/Trc/TrcMemory.td)
// fit together: every copy is waited for exactly once, from the operand it
// started from, and host copies (an offload's wait) are read only by the
// prefetch that brings them back and by that prefetch's wait.
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"

using namespace mlir;
using namespace trc;

namespace {
/// A started copy's result: one use, a trc.copy_wait from `source`.
LogicalResult verifyStarted(Operation *op, Value result, Value source) {
  if (!result.hasOneUse())
    return op->emitOpError("result must have exactly one use, the trc.copy_wait that ends "
                           "the copy (it has ")
           << std::distance(result.use_begin(), result.use_end()) << ")";
  auto wait = dyn_cast<CopyWaitOp>(*result.user_begin());
  if (!wait || wait.getCopy() != result)
    return op->emitOpError("result must be read only by trc.copy_wait as its copy");
  if (wait.getSource() != source)
    return op->emitOpError("is waited for from another value than its operand");
  return success();
}
} // namespace

LogicalResult OffloadOp::verify() { return verifyStarted(*this, getResult(), getOperand()); }

LogicalResult PrefetchOp::verify() {
  auto host = getOperand().getDefiningOp<CopyWaitOp>();
  if (!host || !host.getCopy().getDefiningOp<OffloadOp>())
    return emitOpError("operand must be a host copy (the trc.copy_wait of a trc.offload)");
  return verifyStarted(*this, getResult(), getOperand());
}

LogicalResult CopyWaitOp::verify() {
  Operation *start = getCopy().getDefiningOp();
  if (!isa_and_nonnull<OffloadOp, PrefetchOp>(start))
    return emitOpError("copy must be the result of trc.offload or trc.prefetch");
  if (start->getOperand(0) != getSource())
    return emitOpError("source must be the operand the copy started from");
  if (!isa<OffloadOp>(start))
    return success();
  // A host copy: only prefetches read it (and their waits, as the source).
  for (OpOperand &use : getResult().getUses()) {
    Operation *user = use.getOwner();
    if (isa<PrefetchOp>(user))
      continue;
    if (auto wait = dyn_cast<CopyWaitOp>(user); wait && use.getOperandNumber() == 1 &&
                                                wait.getCopy().getDefiningOp<PrefetchOp>())
      continue;
    return emitOpError("result is a host copy: only trc.prefetch may read it, not '")
           << user->getName() << "'";
  }
  return success();
}
