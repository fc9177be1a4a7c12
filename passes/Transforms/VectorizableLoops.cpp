//===- VectorizableLoops.cpp - trc-vectorizable-loops -----------------------===//
//
// Shapes the CPU backend's bufferized loop nests so that LLVM's loop
// vectorizer takes their innermost loop (AVX-512 / AVX2 / SSE per host):
//
// 1. A multi-dimensional scf.parallel with a loop-free body keeps its outer
//    dimensions parallel and walks the last one in an inner scf.for.
//    convert-scf-to-openmp collapses every dimension of a parallel loop
//    into one OpenMP loop whose indices are recomputed by division per
//    element, which no vectorizer takes; per row it is cheap. A loop over
//    exactly the rows of a reduction in the same function (an accumulator's
//    initial value) stays as it is, for trc-fuse-row-loops to join.
//
//      scf.parallel (%i, %j) = ... { body(%i, %j) }
//      // becomes
//      scf.parallel (%i) = ... { scf.for %j = ... { body(%i, %j) } }
//
// 2. An accumulator a loop reads and writes through memory at one element
//    (`acc[i] = max(acc[i], x[i, k])` over k, as linalg lowers a row
//    reduction) is carried in a register (iter_args): loaded once before
//    the loop and stored once after. With every iteration storing to one
//    address and loading it back, LLVM neither keeps it in a register
//    (the pointers may alias) nor vectorizes the reduction. A floating
//    add or multiply combining it gets `reassoc`, so the vectorizer may
//    keep partial sums per lane: the summation order changes (deterministic
//    run to run, within rounding of the sequential order).
//
// Preconditions: bufferized loops, before convert-scf-to-openmp. Memrefs of
// distinct SSA values are assumed not to alias (the memory plan gives
// simultaneously live buffers disjoint ranges), as trc-hoist-parallel-loops
// assumes. Rewrite 2 applies only when the loop touches the accumulator's
// memref at that one element and nowhere else, with its loads before its
// one store, and the body has no ops with other side effects.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "LoopRewrites.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace trc {
#define GEN_PASS_DEF_VECTORIZABLELOOPS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

bool containsLoop(Block *body) {
  return body
      ->walk([](Operation *op) {
        return isa<LoopLikeOpInterface>(op) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Rewrite 1: the last parallel dimension becomes an inner scf.for, unless
/// `par` runs over the rows of a reduction (`rowLoops`: parallel loops with
/// an inner loop): then it is per-row work (an accumulator's initial value)
/// that trc-fuse-row-loops joins to that reduction.
void sequentializeLastDimension(scf::ParallelOp par, ArrayRef<scf::ParallelOp> rowLoops) {
  unsigned n = par.getNumLoops();
  if (n < 2 || par.getNumReductions() != 0 || containsLoop(par.getBody()))
    return;
  if (llvm::any_of(rowLoops, [&](scf::ParallelOp rows) {
        return trc::sameIterationSpace(par, rows);
      }))
    return;
  OpBuilder b(par);
  Location loc = par.getLoc();
  auto outer = b.create<scf::ParallelOp>(loc, par.getLowerBound().drop_back(),
                                         par.getUpperBound().drop_back(),
                                         par.getStep().drop_back());
  b.setInsertionPointToStart(outer.getBody());
  auto inner = b.create<scf::ForOp>(loc, par.getLowerBound().back(), par.getUpperBound().back(),
                                    par.getStep().back());
  IRMapping map;
  for (unsigned d = 0; d + 1 < n; ++d)
    map.map(par.getInductionVars()[d], outer.getInductionVars()[d]);
  map.map(par.getInductionVars().back(), inner.getInductionVar());
  trc::cloneBodyBefore(par.getBody(), inner.getBody()->getTerminator(), map);
  par.erase();
}

/// The one store in `loop`'s block whose memref the loop touches only at
/// that store's element (indices defined outside the loop), loads first;
/// null when there is none.
memref::StoreOp findAccumulator(scf::ForOp loop, SmallVectorImpl<memref::LoadOp> &loads) {
  Block *body = loop.getBody();
  // Anything with side effects other than loads and stores: leave the loop.
  bool opaque = body->walk([&](Operation *op) {
                      if (isa<memref::LoadOp, memref::StoreOp, scf::YieldOp>(op) ||
                          isa<LoopLikeOpInterface>(op) || isa<scf::IfOp>(op) ||
                          isMemoryEffectFree(op))
                        return WalkResult::advance();
                      return WalkResult::interrupt();
                    }).wasInterrupted();
  if (opaque)
    return nullptr;
  for (Operation &op : body->without_terminator()) {
    auto store = dyn_cast<memref::StoreOp>(op);
    if (!store || !llvm::all_of(store.getIndices(),
                                [&](Value v) { return trc::definedOutside(v, loop); }))
      continue;
    Value memref = store.getMemRef();
    SmallVector<Value> at(store.getIndices());
    bool ok = true;
    loads.clear();
    body->walk([&](Operation *user) {
      if (auto load = dyn_cast<memref::LoadOp>(user)) {
        if (load.getMemRef() != memref)
          return;
        // Same element, in the loop's own block, before the store.
        if (SmallVector<Value>(load.getIndices()) != at || load->getBlock() != body ||
            !load->isBeforeInBlock(store))
          ok = false;
        else
          loads.push_back(load);
      } else if (auto other = dyn_cast<memref::StoreOp>(user)) {
        if (other != store && other.getMemRef() == memref)
          ok = false;
      } else if (user != loop && !isa<scf::YieldOp>(user)) {
        // A view of the memref (subview, cast) may reach the element too.
        for (Value operand : user->getOperands())
          if (operand == memref)
            ok = false;
      }
    });
    if (ok)
      return store;
  }
  return nullptr;
}

/// `acc op x` with `acc` the carried value: a floating add or multiply may
/// be reassociated (partial sums per vector lane).
void allowReassociation(Value combined, Value carried) {
  Operation *op = combined.getDefiningOp();
  if (!op || !isa<arith::AddFOp, arith::MulFOp>(op) || !llvm::is_contained(op->getOperands(),
                                                                            carried))
    return;
  auto fm = cast<arith::ArithFastMathInterface>(op);
  auto flags = fm.getFastMathFlagsAttr().getValue() | arith::FastMathFlags::reassoc;
  op->setAttr(fm.getFastMathAttrName(),
              arith::FastMathFlagsAttr::get(op->getContext(), flags));
}

/// Rewrite 2 for one accumulator; false when `loop` has none (left).
bool promoteOneAccumulator(scf::ForOp &loop) {
  SmallVector<memref::LoadOp> loads;
  memref::StoreOp store = findAccumulator(loop, loads);
  if (!store)
    return false;
  IRRewriter rewriter(loop.getContext());
  rewriter.setInsertionPoint(loop);
  Location loc = store.getLoc();
  Value memref = store.getMemRef();
  SmallVector<Value> at(store.getIndices());
  Value init = rewriter.create<memref::LoadOp>(loc, memref, at);
  Value stored = store.getValueToStore();
  auto grown = loop.replaceWithAdditionalYields(
      rewriter, ValueRange{init}, /*replaceInitOperandUsesInLoop=*/false,
      [&](OpBuilder &, Location, ArrayRef<BlockArgument>) { return SmallVector<Value>{stored}; });
  if (failed(grown))
    return false;
  auto newLoop = cast<scf::ForOp>(grown->getOperation());
  BlockArgument carried = newLoop.getRegionIterArgs().back();
  for (memref::LoadOp load : loads) {
    rewriter.replaceAllUsesWith(load.getResult(), carried);
    rewriter.eraseOp(load);
  }
  rewriter.eraseOp(store);
  allowReassociation(stored, carried);
  rewriter.setInsertionPointAfter(newLoop);
  rewriter.create<memref::StoreOp>(loc, newLoop.getResults().back(), memref, at);
  loop = newLoop;
  return true;
}

struct VectorizableLoops : trc::impl::VectorizableLoopsBase<VectorizableLoops> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> parallels, rowLoops;
    getOperation()->walk([&](scf::ParallelOp par) {
      parallels.push_back(par);
      if (containsLoop(par.getBody()))
        rowLoops.push_back(par);
    });
    for (scf::ParallelOp par : parallels)
      sequentializeLastDimension(par, rowLoops);
    // Innermost loops first (post-order), so a promoted accumulator's load
    // and store land in the enclosing loop, which may promote it further.
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) { loops.push_back(loop); });
    for (scf::ForOp loop : loops)
      while (promoteOneAccumulator(loop)) {
      }
  }
};
} // namespace
