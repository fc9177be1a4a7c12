//===- ForwardFills.cpp - trc-forward-fills --------------------------------===//
//
// Copies (memref.copy, linalg.copy) out of a temporary that only ever
// holds one constant become fills of their destinations, and the
// temporary's fill disappears (see
// Passes.td). Precondition: bufferized IR after trc-plan-memory, whose plan
// guarantees that no other buffer overlaps a temporary while it is live, so
// only its own uses can change it.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/IR/Matchers.h"

namespace trc {
#define GEN_PASS_DEF_FORWARDFILLS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct ForwardFills : trc::impl::ForwardFillsBase<ForwardFills> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp fill) { fills.push_back(fill); });
    for (linalg::FillOp fill : fills)
      forward(fill);
  }

  void forward(linalg::FillOp fill) {
    if (!fill.hasPureBufferSemantics() ||
        !matchPattern(fill.getDpsInputs()[0], m_Constant()))
      return;
    Value buffer = fill.getDpsInits()[0];
    // A temporary (a view of the arena), not a caller's buffer whose
    // contents are observable.
    if (!buffer.getDefiningOp<memref::ViewOp>())
      return;
    // The buffer's uses in order; the copies out of it before any other use
    // read the constant.
    SmallVector<Operation *> users;
    for (Operation *user : buffer.getUsers()) {
      if (user == fill.getOperation())
        continue;
      if (user->getBlock() != fill->getBlock() || !fill->isBeforeInBlock(user))
        return; // used elsewhere, or before the fill
      users.push_back(user);
    }
    llvm::sort(users, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    Value constant = fill.getDpsInputs()[0]; // dominates the fill's successors
    size_t forwarded = 0;
    for (Operation *user : users) {
      Value source, target;
      if (auto copy = dyn_cast<memref::CopyOp>(user)) {
        source = copy.getSource();
        target = copy.getTarget();
      } else if (auto copy = dyn_cast<linalg::CopyOp>(user);
                 copy && copy.hasPureBufferSemantics()) {
        source = copy.getDpsInputs()[0];
        target = copy.getDpsInits()[0];
      }
      if (source != buffer || target == buffer)
        break;
      OpBuilder b(user);
      linalg::FillOp::create(b, user->getLoc(), constant, target);
      user->erase();
      ++forwarded;
    }
    if (forwarded == users.size())
      fill.erase(); // nothing reads the temporary any more
    else if (forwarded)
      fill->moveBefore(users[forwarded]); // next to its reader (a reduction
                                          // or matrix product folds it)
  }
};
} // namespace
