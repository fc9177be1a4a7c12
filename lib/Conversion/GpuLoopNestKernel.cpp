//===- GpuLoopNestKernel.cpp - a host loop nest as a CUDA kernel ----------===//
//
// emitLoopNestKernel (include/trc/Conversion/GpuKernels.h): what
// trc-lower-to-linalg leaves as scf.for (a bufferized scatter_add) runs as a
// kernel, its innermost loop spread over threads when no two iterations can
// touch the same bytes, else on one thread. Preconditions: a nest of scf.for
// with memref loads and stores and pure ops, no linalg ops, launches or calls.
//
//===----------------------------------------------------------------------===//
#include "GpuKernelCommon.h"

#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace trc::gpukernels {
namespace {

/// A host loop nest (a bufferized scatter_add, say) as a kernel. When its
/// innermost loop is provably parallel — every store is in it, and every
/// access to a stored buffer indexes its last dimension with that loop's
/// induction variable and nothing else reaches those bytes — each thread
/// runs the outer loops for one iteration of it (deterministic: each
/// element is updated in the host order); otherwise one thread runs it all.
class LoopNestEmitter {
public:
  LoopNestEmitter(scf::ForOp outer, OpBuilder &b) : outer(outer), b(b), loc(outer.getLoc()) {}

  /// Builds the launch before the nest (which the caller erases); sets
  /// `parallel` to whether the innermost loop was spread over threads.
  LogicalResult emit(StringRef kernelName, bool &parallel);

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  scf::ForOp parallelInnermost();

  scf::ForOp outer;
  OpBuilder &b;
  Location loc;
};

scf::ForOp LoopNestEmitter::parallelInnermost() {
  scf::ForOp inner = outer;
  while (true) {
    SmallVector<scf::ForOp> nested(inner.getBody()->getOps<scf::ForOp>());
    if (nested.size() != 1)
      break;
    inner = nested.front();
  }
  if (inner.getNumResults() != 0 || inner.getBody()->getOps<scf::ForOp>().begin() !=
                                        inner.getBody()->getOps<scf::ForOp>().end())
    return {};
  if (!getConstantIntValue(inner.getLowerBound()) ||
      !getConstantIntValue(inner.getUpperBound()) || !getConstantIntValue(inner.getStep()))
    return {};
  Value iv = inner.getInductionVar();
  SmallVector<Value> written;
  SmallVector<std::pair<Value, Operation *>> accesses;
  bool understood = true;
  outer.walk([&](Operation *op) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (!inner->isProperAncestor(op))
        understood = false; // a store the threads would all repeat
      written.push_back(store.getMemRef());
      accesses.push_back({store.getMemRef(), op});
    } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
      accesses.push_back({load.getMemRef(), op});
    } else if (!isa<scf::ForOp, scf::YieldOp>(op) && !isMemoryEffectFree(op)) {
      understood = false;
    }
  });
  if (!understood)
    return {};
  auto lastIndexIsIv = [&](Operation *op) {
    ValueRange indices = isa<memref::StoreOp>(op) ? cast<memref::StoreOp>(op).getIndices()
                                                   : cast<memref::LoadOp>(op).getIndices();
    if (indices.empty() || indices.back() != iv)
      return false;
    return llvm::none_of(indices.drop_back(), [&](Value v) { return v == iv; });
  };
  for (Value w : written) {
    Extent extent = extentOf(w);
    for (auto [memref, op] : accesses) {
      if (memref == w) {
        if (!lastIndexIsIv(op))
          return {};
      } else if (extentOf(memref).overlaps(extent)) {
        return {};
      }
    }
  }
  return inner;
}

LogicalResult LoopNestEmitter::emit(StringRef kernelName, bool &parallel) {
  scf::ForOp inner = parallelInnermost();
  parallel = static_cast<bool>(inner);
  int64_t trips = 1, lb = 0, step = 1;
  if (inner) {
    lb = *getConstantIntValue(inner.getLowerBound());
    step = *getConstantIntValue(inner.getStep());
    trips = std::max<int64_t>(
        0, llvm::divideCeil(*getConstantIntValue(inner.getUpperBound()) - lb, step));
    if (trips == 0)
      return success(); // nothing to do; the caller erases the nest
  }
  OpBuilder::InsertionGuard guard(b);
  LaunchFrame frame = buildLaunch(b, loc, trips, kernelName, inner ? kMaxThreads : 1);
  Value iv;
  if (inner)
    iv = arith::AddIOp::create(b, loc, index(lb),
                               arith::MulIOp::create(b, loc, frame.item, index(step)));
  IRMapping mapping;
  b.clone(*outer, mapping);
  if (inner) {
    // The innermost loop's body, straight-line at this thread's iteration.
    auto loop = cast<scf::ForOp>(mapping.lookup(inner.getOperation()));
    loop.getInductionVar().replaceAllUsesWith(iv);
    Block *loopBody = loop.getBody();
    loopBody->getTerminator()->erase();
    loop->getBlock()->getOperations().splice(Block::iterator(loop),
                                             loopBody->getOperations());
    loop.erase();
  }
  return sinkOperationsIntoLaunchOp(frame.launch, isSinkable);
}

} // namespace

LogicalResult emitLoopNestKernel(scf::ForOp nest, OpBuilder &b, StringRef kernelName,
                                 bool &parallel) {
  return LoopNestEmitter(nest, b).emit(kernelName, parallel);
}

} // namespace trc::gpukernels
