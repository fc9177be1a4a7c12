//===- FuseRowLoops.cpp - trc-fuse-row-loops --------------------------------===//
//
// Fuses consecutive parallel loops over the same rows into one, so that a
// row's work of several passes (softmax: maximum, exponentials, sum,
// division; layer norm: mean, variance, normalization) runs while the row
// is in the core's cache, as one OpenMP region:
//
//   scf.parallel (%i) = (0) to (R) { scf.for %k { max[%i] = ... x[%i, %k] } }
//   scf.parallel (%i) = (0) to (R) { scf.for %k { e[%i, %k] = exp(x[%i, %k] - max[%i]) } }
//   // becomes
//   scf.parallel (%i) = (0) to (R) {
//     scf.for %k { max[%i] = ... }
//     scf.for %k { e[%i, %k] = ... }
//   }
//
// Legal when iteration i of the second loop touches only what iteration i
// of the first touches in the buffers either writes: every load and store
// of such a buffer, in both loops, indexes its leading dimensions with the
// loop's induction variables in order (row i's slice). Then each row still
// sees the first loop's work on it before the second's, and no row reads
// another's. Loops with reductions, different bounds, or bodies with other
// side effects (calls, copies) are left apart, and so are loops touching
// distinct memrefs that may share bytes (views of one buffer, or a dead
// buffer's bytes the memory plan reuses: byte ranges of memref.view are
// compared). Pure ops between the two loops (views) move above the first.
//
// Preconditions: bufferized loops after trc-vectorizable-loops (whose
// rewrite keeps per-row loops and per-element loops over the same rows),
// before convert-scf-to-openmp.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "trc/Analysis/ElementBytes.h"
#include "LoopRewrites.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

namespace trc {
#define GEN_PASS_DEF_FUSEROWLOOPS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

/// The memrefs `loop` loads and stores; false when its body has other side
/// effects (then it is not fused).
bool collectAccesses(scf::ParallelOp loop, llvm::SetVector<Value> &read,
                     llvm::SetVector<Value> &written) {
  bool ok = loop.getNumReductions() == 0;
  loop.getBody()->walk([&](Operation *op) {
    if (auto load = dyn_cast<memref::LoadOp>(op))
      read.insert(load.getMemRef());
    else if (auto store = dyn_cast<memref::StoreOp>(op))
      written.insert(store.getMemRef());
    else if (!isa<scf::ForOp, scf::IfOp, scf::YieldOp, scf::ReduceOp>(op) &&
             !isMemoryEffectFree(op))
      ok = false;
  });
  return ok;
}

/// Every access of `memref` in `loop` indexes its leading dimensions with
/// the loop's induction variables, in order.
bool rowLocal(scf::ParallelOp loop, Value memref) {
  ValueRange ivs = loop.getInductionVars();
  bool ok = true;
  loop.getBody()->walk([&](Operation *op) {
    ValueRange indices;
    if (auto load = dyn_cast<memref::LoadOp>(op); load && load.getMemRef() == memref)
      indices = load.getIndices();
    else if (auto store = dyn_cast<memref::StoreOp>(op); store && store.getMemRef() == memref)
      indices = store.getIndices();
    else
      return;
    if (indices.size() < ivs.size() || indices.take_front(ivs.size()) != ivs)
      ok = false;
  });
  return ok;
}

/// Where a memref's elements lie: a byte range of a root buffer (a
/// function argument or an allocation), when the memory plan's memref.view
/// gives a constant shift and a static shape; else the whole root.
struct Extent {
  Value root;
  int64_t begin = 0, end = 0;
  bool known = false;
};

Extent extentOf(Value memref) {
  Value current = memref;
  while (Operation *def = current.getDefiningOp()) {
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
      MemRefType type = view.getType();
      if (!shift || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
        return {view.getSource()};
      // Whole bytes per element (i1 takes one), as the memory plan lays them.
      int64_t bytes = trc::storageBytes(type);
      return {view.getSource(), *shift, *shift + bytes, true};
    }
    auto like = dyn_cast<ViewLikeOpInterface>(def);
    if (!like)
      break;
    current = like.getViewSource();
  }
  return {current};
}

bool mayOverlap(Value a, Value b) {
  Extent x = extentOf(a), y = extentOf(b);
  // A root made by an op that is neither an allocation nor a view this
  // walk knows may be a view of anything.
  auto opaque = [](Value root) {
    Operation *def = root.getDefiningOp();
    return def && !isa<memref::AllocOp, memref::AllocaOp, memref::GetGlobalOp>(def);
  };
  if (opaque(x.root) || opaque(y.root))
    return true;
  return x.root == y.root && (!x.known || !y.known || (x.begin < y.end && y.begin < x.end));
}

bool canFuse(scf::ParallelOp first, scf::ParallelOp second) {
  if (!trc::sameIterationSpace(first, second))
    return false;
  llvm::SetVector<Value> read1, written1, read2, written2;
  if (!collectAccesses(first, read1, written1) || !collectAccesses(second, read2, written2))
    return false;
  // A buffer one loop writes and the other touches must be the same memref,
  // row-local in both; distinct memrefs must not share bytes (views of one
  // buffer, or the memory plan's reuse of a dead buffer's bytes).
  auto conflicts = [&](Value written, const llvm::SetVector<Value> &touched,
                       scf::ParallelOp writer, scf::ParallelOp other) {
    for (Value m : touched) {
      if (m == written) {
        if (!rowLocal(writer, m) || !rowLocal(other, m))
          return true;
      } else if (mayOverlap(m, written)) {
        return true;
      }
    }
    return false;
  };
  for (Value m : written1)
    if (conflicts(m, read2, first, second) || conflicts(m, written2, first, second))
      return false;
  for (Value m : written2)
    if (conflicts(m, read1, second, first))
      return false;
  return true;
}

/// The next parallel loop after `loop` in its block when only pure ops
/// (which can move above `loop`) lie between; null otherwise.
scf::ParallelOp nextParallel(scf::ParallelOp loop, SmallVectorImpl<Operation *> &between) {
  between.clear();
  for (Operation *op = loop->getNextNode(); op; op = op->getNextNode()) {
    if (auto next = dyn_cast<scf::ParallelOp>(op))
      return next;
    if (!isMemoryEffectFree(op) || op->getNumRegions())
      return nullptr;
    between.push_back(op);
  }
  return nullptr;
}

/// Appends `second`'s body to `first`'s and erases `second`.
void fuseInto(scf::ParallelOp first, scf::ParallelOp second, ArrayRef<Operation *> between) {
  for (Operation *op : between)
    op->moveBefore(first);
  IRMapping map;
  for (auto [from, to] : llvm::zip_equal(second.getInductionVars(), first.getInductionVars()))
    map.map(from, to);
  trc::cloneBodyBefore(second.getBody(), first.getBody()->getTerminator(), map);
  second.erase();
}

struct FuseRowLoops : trc::impl::FuseRowLoopsBase<FuseRowLoops> {
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    getOperation()->walk([&](Block *block) { blocks.push_back(block); });
    SmallVector<Operation *> between;
    for (Block *block : blocks) {
      for (Operation *op = &block->front(); op; op = op->getNextNode()) {
        auto loop = dyn_cast<scf::ParallelOp>(op);
        if (!loop)
          continue;
        while (scf::ParallelOp next = nextParallel(loop, between)) {
          if (!canFuse(loop, next))
            break;
          fuseInto(loop, next, between);
        }
      }
    }
  }
};
} // namespace
