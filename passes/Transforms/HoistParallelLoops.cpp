//===- HoistParallelLoops.cpp - trc-hoist-parallel-loops --------------------===//
//
// Moves an scf.parallel that sits inside a perfect nest of scf.for loops
// (what convert-linalg-to-parallel-loops makes of a reduction over leading
// dimensions, such as a bias or layer-norm-scale gradient: `for rows { for
// cols' parallel }`) out of the nest, tiling its innermost dimension:
//
//   scf.for %i { scf.for %k { scf.parallel (%j) { body } } }
//   // becomes
//   scf.parallel (%jo) step (T) {
//     scf.for %i { scf.for %k { scf.for %j = %jo to min(%jo + T, N) { body } } } }
//
// One OpenMP region instead of one per iteration of the sequential loops,
// and each thread walks contiguous rows of its column tile. A sequential
// nest's innermost scf.for whose iterations touch disjoint elements (an
// embedding gradient's scatter-add: `for tokens { for columns { ... } }`)
// is first made such a parallel loop, then hoisted the same way. Every element
// is still accumulated in the same order (the sequential loops keep their
// order per parallel index), so the results are bitwise unchanged.
//
// Preconditions: bufferized loops. Legality, checked per nest: the parallel
// loop has no reductions; its body only loads, stores and computes (pure
// ops, scf.for/scf.if); and every memref it stores to is accessed in the
// body at one index list containing every parallel induction variable, so
// distinct parallel indices never touch the same element. Memrefs of
// distinct SSA values are assumed not to alias (the memory plan gives
// simultaneously live buffers disjoint ranges).
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "LoopRewrites.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace trc {
#define GEN_PASS_DEF_HOISTPARALLELLOOPS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

/// The scf.for chain from the outermost loop of a perfect nest down to the
/// one holding `par` (outermost first); empty when `par` is not the only op
/// of its parent loop.
SmallVector<scf::ForOp> enclosingPerfectNest(scf::ParallelOp par) {
  SmallVector<scf::ForOp> chain;
  Operation *inner = par;
  while (auto loop = dyn_cast<scf::ForOp>(inner->getParentOp())) {
    Block *body = loop.getBody();
    if (loop.getNumResults() != 0 || &body->front() != inner ||
        inner->getNextNode() != body->getTerminator())
      break;
    chain.insert(chain.begin(), loop);
    inner = loop;
  }
  return chain;
}

/// True when the loop body's iterations at distinct values of `ivs` touch
/// disjoint stored elements, whatever the sequential indices around.
bool independentIterations(Block *body, ValueRange ivs) {
  DenseMap<Value, SmallVector<Value>> storedAt;
  bool ok = true;
  body->walk([&](Operation *op) {
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      SmallVector<Value> indices(store.getIndices());
      auto [it, inserted] = storedAt.try_emplace(store.getMemRef(), indices);
      if (!inserted && it->second != indices)
        ok = false;
      return;
    }
    if (isa<memref::LoadOp, scf::ReduceOp, scf::YieldOp, scf::ForOp, scf::IfOp>(op))
      return;
    if (!isMemoryEffectFree(op))
      ok = false;
  });
  if (!ok || storedAt.empty())
    return false;
  for (auto &[memref, indices] : storedAt) {
    for (Value iv : ivs)
      if (!llvm::is_contained(indices, iv))
        return false;
  }
  // Every load of a stored memref reads the element its iteration stores.
  body->walk([&](memref::LoadOp load) {
    auto it = storedAt.find(load.getMemRef());
    if (it != storedAt.end() && SmallVector<Value>(load.getIndices()) != it->second)
      ok = false;
  });
  return ok;
}

bool independentAcrossNest(scf::ParallelOp par) {
  return par.getNumResults() == 0 && independentIterations(par.getBody(), par.getInductionVars());
}

/// The innermost loop of a sequential nest whose iterations touch disjoint
/// elements (an embedding gradient's scatter-add over columns: `for tokens {
/// for columns { table[id, c] += g[t, c] } }`) becomes an scf.parallel, which
/// hoist() then moves out of the nest: each thread takes a tile of columns
/// and adds every token's row into it in token order (deterministic, the
/// sequential sums bit for bit).
void parallelizeInnermost(scf::ForOp loop) {
  // Not inside a parallel loop already (no nested parallel regions).
  if (loop.getNumResults() != 0 || !isa<scf::ForOp>(loop->getParentOp()) ||
      loop->getParentOfType<scf::ParallelOp>())
    return;
  bool nested = false;
  loop.getBody()->walk([&](LoopLikeOpInterface) { nested = true; });
  if (nested || !independentIterations(loop.getBody(), loop.getInductionVar()))
    return;
  OpBuilder b(loop);
  auto par = b.create<scf::ParallelOp>(loop.getLoc(), ValueRange{loop.getLowerBound()},
                                       ValueRange{loop.getUpperBound()},
                                       ValueRange{loop.getStep()});
  IRMapping map;
  map.map(loop.getInductionVar(), par.getInductionVars()[0]);
  trc::cloneBodyBefore(loop.getBody(), par.getBody()->getTerminator(), map);
  loop.erase();
}

struct HoistParallelLoops : trc::impl::HoistParallelLoopsBase<HoistParallelLoops> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<scf::ForOp> innermost;
    getOperation()->walk([&](scf::ForOp loop) { innermost.push_back(loop); });
    for (scf::ForOp loop : innermost)
      parallelizeInnermost(loop);
    SmallVector<scf::ParallelOp> candidates;
    getOperation()->walk([&](scf::ParallelOp par) { candidates.push_back(par); });
    for (scf::ParallelOp par : candidates)
      hoist(par);
  }

  void hoist(scf::ParallelOp par) {
    SmallVector<scf::ForOp> nest = enclosingPerfectNest(par);
    if (nest.empty() || !independentAcrossNest(par))
      return;
    scf::ForOp outer = nest.front();
    // Bounds must not depend on the loops they move across.
    for (scf::ForOp loop : nest)
      for (Value v : {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
        if (!trc::definedOutside(v, outer))
          return;
    for (auto range : {par.getLowerBound(), par.getUpperBound(), par.getStep()})
      for (Value v : range)
        if (!trc::definedOutside(v, outer))
          return;

    OpBuilder b(outer);
    Location loc = par.getLoc();
    unsigned last = par.getNumLoops() - 1;
    SmallVector<Value> steps(par.getStep());
    if (auto step = getConstantIntValue(steps[last]))
      steps[last] = b.create<arith::ConstantIndexOp>(loc, *step * tileSize);
    else
      steps[last] = b.create<arith::MulIOp>(
          loc, steps[last], b.create<arith::ConstantIndexOp>(loc, tileSize));
    auto hoisted = b.create<scf::ParallelOp>(loc, par.getLowerBound(), par.getUpperBound(), steps);
    IRMapping map;
    b.setInsertionPointToStart(hoisted.getBody());
    for (unsigned d = 0; d < last; ++d)
      map.map(par.getInductionVars()[d], hoisted.getInductionVars()[d]);
    Value tileBegin = hoisted.getInductionVars()[last];
    Value tileEnd = b.create<arith::MinSIOp>(
        loc, b.create<arith::AddIOp>(loc, tileBegin, steps[last]), par.getUpperBound()[last]);
    for (scf::ForOp loop : nest) {
      auto copy = b.create<scf::ForOp>(loc, loop.getLowerBound(), loop.getUpperBound(),
                                       loop.getStep());
      map.map(loop.getInductionVar(), copy.getInductionVar());
      b.setInsertionPoint(copy.getBody()->getTerminator());
    }
    auto inner = b.create<scf::ForOp>(loc, tileBegin, tileEnd, par.getStep()[last]);
    map.map(par.getInductionVars()[last], inner.getInductionVar());
    trc::cloneBodyBefore(par.getBody(), inner.getBody()->getTerminator(), map);
    outer.erase();
  }
};
} // namespace
