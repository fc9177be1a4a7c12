//===- DistinctResults.cpp - trc-distinct-results --------------------------===//
//
// A buffer returned twice is copied for its second and later results (see
// Passes.td), so buffer-results-to-out-params gives each its own
// out-parameter. Precondition: bufferized function boundaries (memref
// results); results of other types are left alone.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace trc {
#define GEN_PASS_DEF_DISTINCTRESULTS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct DistinctResults : trc::impl::DistinctResultsBase<DistinctResults> {
  void runOnOperation() override {
    getOperation().walk([](func::ReturnOp ret) {
      llvm::DenseSet<Value> returned;
      OpBuilder b(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value v = operand.get();
        auto type = dyn_cast<MemRefType>(v.getType());
        if (returned.insert(v).second || !type || !type.hasStaticShape())
          continue;
        Value copy = b.create<memref::AllocOp>(ret.getLoc(), type);
        b.create<memref::CopyOp>(ret.getLoc(), v, copy);
        operand.set(copy);
      }
    });
  }
};
} // namespace
