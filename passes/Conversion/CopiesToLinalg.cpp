//===- CopiesToLinalg.cpp - trc-copies-to-linalg ---------------------------===//
//
// memref.copy -> linalg.copy (see Passes.td). Precondition: bufferized IR.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/IR/Builders.h"

namespace trc {
#define GEN_PASS_DEF_COPIESTOLINALG
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct CopiesToLinalg : trc::impl::CopiesToLinalgBase<CopiesToLinalg> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp op) { copies.push_back(op); });
    for (auto op : copies) {
      OpBuilder b(op);
      b.create<linalg::CopyOp>(op.getLoc(), op.getSource(), op.getTarget());
      op.erase();
    }
  }
};
} // namespace
