//===- GpuRowKernel.cpp - a reduction and its row ops as one CUDA kernel --===//
//
// formRowGroup, markStores and emitRowKernel (include/trc/Conversion/
// GpuKernels.h, which states the conditions a group meets): a warp per row
// when every reduction has one combiner with a neutral element on 32-bit
// values (the lanes stride the row and a butterfly of xor shuffles combines
// their pieces), else one thread per row; reductions and row ops keep a
// scalar per row in a register (in every lane),
// elementwise ops over the full space are recomputed where they are read,
// and only results read after the group are stored. Preconditions:
// linalg.generic ops on buffers with static shapes, consecutive in one block
// with only pure host code between them.
//
//===----------------------------------------------------------------------===//
#include "GpuKernelCommon.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <functional>

using namespace mlir;

namespace trc::gpukernels {

static AffineMap rowPrefixMap(unsigned dims, unsigned rows, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d < rows; ++d)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(dims, 0, exprs, ctx);
}

static RowRole roleIn(linalg::GenericOp op, ArrayRef<int64_t> space, unsigned rows) {
  if (op.getNumDpsInits() != 1 || !op.hasPureBufferSemantics())
    return RowRole::None;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  AffineMap out = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  bool allParallel = llvm::all_of(iterators, linalg::isParallelIterator);
  if (ArrayRef(ranges) == space) {
    if (allParallel)
      return out.isIdentity() ? RowRole::Full : RowRole::None;
    for (auto [d, it] : llvm::enumerate(iterators))
      if (linalg::isParallelIterator(it) != (d < rows))
        return RowRole::None;
    return out == rowPrefixMap(space.size(), rows, op.getContext()) ? RowRole::Reduction
                                                                     : RowRole::None;
  }
  if (ArrayRef(ranges) == space.take_front(rows) && allParallel && out.isIdentity())
    return RowRole::Row;
  return RowRole::None;
}

/// `a` and `b` are the same bytes with the same layout: one buffer, or two
/// the memory plan placed at one offset (a dead input's place reused for a
/// result), which a row-local access reads and writes alike.
static bool sameMemory(Value a, Value b) {
  if (a == b)
    return true;
  Extent x = extentOf(a), y = extentOf(b);
  return a.getType() == b.getType() && x.root == y.root && x.begin == y.begin &&
         x.end == y.end && cast<MemRefType>(a.getType()).getLayout().isIdentity();
}

/// The group of ops[first..] in the space of `head`, the reduction that
/// starts it or the first after the elementwise ops it starts with.
/// `unstored` gets the group indices of ops whose result must never be
/// stored (kept in registers; see formRowGroup): it overlaps memory the
/// group reads from outside, or a later op's result, in another layout.
static RowGroup formGroupAround(ArrayRef<linalg::GenericOp> ops, size_t first, size_t limit,
                                linalg::GenericOp head,
                                const llvm::DenseMap<Operation *, SmallVector<Value>> *fills,
                                SmallVector<size_t> &unstored) {
  RowGroup g;
  SmallVector<utils::IteratorType> iterators = head.getIteratorTypesArray();
  unsigned rows = 0;
  while (rows < iterators.size() && linalg::isParallelIterator(iterators[rows]))
    ++rows;
  if (rows == iterators.size())
    return g;
  g.space = head.getStaticLoopRanges();
  g.rows = rows;
  if (roleIn(head, g.space, rows) != RowRole::Reduction)
    return g;
  MLIRContext *ctx = head.getContext();
  unsigned dims = g.space.size();
  AffineMap full = AffineMap::getMultiDimIdentityMap(dims, ctx);
  AffineMap prefix = rowPrefixMap(dims, rows, ctx);
  AffineMap rowIdentity = AffineMap::getMultiDimIdentityMap(rows, ctx);

  llvm::DenseMap<Value, int> writer;  // buffer -> latest group op writing it
  SmallVector<std::tuple<Value, AffineMap, RowRole>> externalReads;
  // Whether `role` reading `buffer` (written by a `kind` op) with `map` is
  // row-local.
  auto rowLocal = [&](RowRole reader, RowRole kind, AffineMap map) {
    if (kind == RowRole::Full)
      return reader != RowRole::Row && map == full;
    return reader == RowRole::Row ? map == rowIdentity : map == prefix;
  };
  for (size_t i = first; i < limit; ++i) {
    linalg::GenericOp op = ops[i];
    if (i > first) {
      // Only pointer arithmetic between the group's ops on the host.
      for (Operation *o = ops[i - 1]->getNextNode(); o && o != op; o = o->getNextNode())
        if (!isMemoryEffectFree(o))
          return g;
      if (op->getBlock() != ops[i - 1]->getBlock() || !ops[i - 1]->isBeforeInBlock(op))
        return g;
    }
    RowRole role = roleIn(op, g.space, rows);
    if (role == RowRole::None)
      return g;
    SmallVector<int> sources;
    SmallVector<std::tuple<Value, AffineMap, RowRole>> reads;
    bool ok = true;
    // Outputs that start from a folded fill are not read.
    auto freshInit = [&](OpOperand &operand) {
      if (!fills || !op.isDpsInit(&operand))
        return false;
      auto it = fills->find(op);
      unsigned index = operand.getOperandNumber() - op.getNumDpsInputs();
      return it != fills->end() && index < it->second.size() && it->second[index];
    };
    for (OpOperand &operand : op->getOpOperands()) {
      Value buffer = operand.get();
      // An output the payload does not read is only written (below).
      if (!isa<MemRefType>(buffer.getType()) || freshInit(operand) ||
          (op.isDpsInit(&operand) && !op.payloadUsesValueFromOperand(&operand))) {
        sources.push_back(-1);
        continue;
      }
      AffineMap map = op.getMatchingIndexingMap(&operand);
      if (auto it = writer.find(buffer); it != writer.end()) {
        ok &= rowLocal(role, g.roles[it->second], map);
        sources.push_back(it->second);
        continue;
      }
      for (auto &[written, index] : writer)
        ok &= !extentOf(written).overlaps(extentOf(buffer));
      reads.push_back({buffer, map, role});
      sources.push_back(-1);
    }
    Value result = op.getDpsInits()[0];
    RowRole kind = role == RowRole::Full ? RowRole::Full : RowRole::Row;
    // Memory an earlier op of the group wrote (through this view or another
    // at the same place) takes a result of its kind in its layout; in
    // another layout, only while the earlier result is never stored.
    SmallVector<size_t> overwritten; // recorded only if the op joins
    for (auto &[written, index] : writer) {
      if (!extentOf(written).overlaps(extentOf(result)))
        continue;
      if (sameMemory(written, result))
        ok &= (g.roles[index] == RowRole::Full) == (kind == RowRole::Full);
      else
        overwritten.push_back(size_t(index));
    }
    bool mustNotStore = false;
    for (auto &[read, map, reader] : llvm::concat<std::tuple<Value, AffineMap, RowRole>>(
             externalReads, reads))
      if (extentOf(read).overlaps(extentOf(result)) &&
          !(sameMemory(read, result) && rowLocal(reader, kind, map)))
        mustNotStore = true;
    if (!ok)
      return g;
    if (mustNotStore)
      unstored.push_back(g.ops.size());
    llvm::append_range(unstored, overwritten);
    g.ops.push_back(op);
    g.roles.push_back(role);
    g.source.push_back(std::move(sources));
    llvm::append_range(externalReads, reads);
    writer[result] = static_cast<int>(g.ops.size()) - 1;
  }
  return g;
}

static bool allParallel(linalg::GenericOp op) {
  return llvm::all_of(op.getIteratorTypesArray(), linalg::isParallelIterator);
}

RowGroup formRowGroup(ArrayRef<linalg::GenericOp> ops, size_t first,
                      const llvm::DenseMap<Operation *, SmallVector<Value>> *fills) {
  size_t head = first;
  while (head < ops.size() && allParallel(ops[head]))
    ++head;
  if (head == ops.size())
    return RowGroup();
  // A result written over rows of another layout that the group reads or
  // writes (another warp's rows, perhaps not yet read) is safe only if
  // never stored: the group ends before the first such result it must
  // store.
  size_t limit = ops.size();
  RowGroup g;
  while (true) {
    SmallVector<size_t> unstored;
    g = formGroupAround(ops, first, limit, ops[head], fills, unstored);
    if (g.ops.empty())
      return g;
    markStores(g);
    auto stored = llvm::find_if(unstored, [&](size_t i) { return g.stores[i]; });
    if (stored == unstored.end())
      break;
    limit = first + *stored;
  }
  if (head == first)
    return g;
  // Elementwise ops right before the reduction (a mask's select of attention
  // scores, a cast) join it when it joins too and a warp shares each row:
  // recomputed where the group reads them, they make no pass over memory
  // of their own.
  if (!llvm::is_contained(g.roles, RowRole::Reduction) || !warpSharesRows(g))
    return RowGroup();
  return g;
}

/// Marks which results of `g` are read after it: the last version of a
/// buffer the caller sees (not an arena temporary) or that an op after the
/// group uses.
void markStores(RowGroup &g) {
  g.stores.assign(g.ops.size(), false);
  Operation *last = g.ops.back();
  Block *block = last->getBlock();
  llvm::DenseMap<Value, int> lastWriter;
  for (auto [i, op] : llvm::enumerate(g.ops))
    lastWriter[op.getDpsInits()[0]] = static_cast<int>(i);
  llvm::SmallPtrSet<Operation *, 8> members;
  for (linalg::GenericOp op : g.ops)
    members.insert(op);
  for (auto &[buffer, i] : lastWriter) {
    bool read = !buffer.getDefiningOp<memref::ViewOp>();
    SmallVector<Value> worklist{buffer};
    while (!worklist.empty() && !read) {
      Value v = worklist.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (isa<ViewLikeOpInterface>(user)) {
          llvm::append_range(worklist, user->getResults());
          continue;
        }
        Operation *top = block->findAncestorOpInBlock(*user);
        if (!top || (!members.contains(top) && last->isBeforeInBlock(top)))
          read = true;
      }
    }
    g.stores[i] = read;
  }
}

// Rows shorter than this keep one thread each: a warp would idle.
constexpr int64_t kMinWarpRow = 2 * kWarp;

bool warpSharesRows(RowGroup &g) {
  if (computeProduct(ArrayRef(g.space).drop_front(g.rows)) < kMinWarpRow)
    return false;
  for (auto [op, role] : llvm::zip(g.ops, g.roles)) {
    if (role != RowRole::Reduction)
      continue;
    TypedAttr neutral;
    Type element = getElementTypeOrSelf(op.getDpsInits()[0].getType());
    if (!soleCombiner(op, neutral) || !element.isIntOrFloat() ||
        element.getIntOrFloatBitWidth() != 32)
      return false;
  }
  return true;
}

namespace {

class RowGroupEmitter {
public:
  RowGroupEmitter(RowGroup &g, OpBuilder &b,
                  const llvm::DenseMap<Operation *, SmallVector<Value>> &fills, bool warp)
      : g(g), b(b), loc(g.ops.front().getLoc()), fills(fills), warp(warp) {}

  LogicalResult emit(StringRef kernelName) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(g.ops.back()); // every operand is defined by then
    ArrayRef<int64_t> rowExtents = ArrayRef(g.space).take_front(g.rows);
    int64_t items = computeProduct(rowExtents);
    if (warp) {
      // A warp per row, as many warps per block (up to 8) as divide the
      // rows: no thread is past the end, so every lane of a warp reaches
      // its shuffles.
      int64_t warps = kMaxThreads / kWarp;
      while (items % warps != 0)
        --warps;
      LaunchFrame frame = buildLaunch(b, loc, items * kWarp, kernelName, warps * kWarp);
      lane = arith::RemUIOp::create(b, loc, frame.item, index(kWarp));
      Value row = arith::DivUIOp::create(b, loc, frame.item, index(kWarp));
      rowIvs = delinearize(b, loc, row, rowExtents);
      return emitBody(frame);
    }
    LaunchFrame frame = buildLaunch(b, loc, items, kernelName);
    rowIvs = delinearize(b, loc, frame.item, rowExtents);
    return emitBody(frame);
  }

private:
  LogicalResult emitBody(LaunchFrame &frame) {
    for (auto [i, op] : llvm::enumerate(g.ops)) {
      if (g.roles[i] == RowRole::Reduction)
        rowValues[i] = reduce(i);
      else if (g.roles[i] == RowRole::Row)
        rowValues[i] = rowOp(i);
    }
    // The elementwise results read after the group, in one pass over S.
    SmallVector<int> fullStores;
    for (auto [i, role] : llvm::enumerate(g.roles))
      if (role == RowRole::Full && g.stores[i])
        fullStores.push_back(static_cast<int>(i));
    if (!fullStores.empty())
      overReduced({}, [&](ArrayRef<Value> ivs, ValueRange) {
        Memo memo;
        SmallVector<Value> values;
        for (int i : fullStores)
          values.push_back(full(i, memo, ivs));
        for (auto [i, value] : llvm::zip(fullStores, values))
          memref::StoreOp::create(b, loc, value, g.ops[i].getDpsInits()[0], ivs);
        return SmallVector<Value>();
      });
    // Every lane holds the row values: lane 0 stores them.
    std::optional<OpBuilder::InsertionGuard> laneZero;
    if (warp && llvm::any_of(llvm::seq<size_t>(0, g.ops.size()), [&](size_t i) {
          return g.roles[i] != RowRole::Full && g.stores[i];
        })) {
      Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
      auto onlyFirst = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
      laneZero.emplace(b);
      b.setInsertionPoint(onlyFirst.thenBlock()->getTerminator());
    }
    for (auto [i, role] : llvm::enumerate(g.roles))
      if (role != RowRole::Full && g.stores[i])
        memref::StoreOp::create(b, loc, rowValues[i], g.ops[i].getDpsInits()[0], rowIvs);
    laneZero.reset();
    return sinkOperationsIntoLaunchOp(frame.launch, isSinkable);
  }

  using Memo = llvm::DenseMap<int, Value>;
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  /// scf.for over the reduced dimensions carrying `init`; `body` gets the
  /// full indices and the carried values and returns the next. With a warp
  /// per row, one loop over the reduced points linearized, lane by lane
  /// (neighbouring lanes read neighbouring elements).
  SmallVector<Value>
  overReduced(ValueRange init,
              llvm::function_ref<SmallVector<Value>(ArrayRef<Value>, ValueRange)> body) {
    if (warp) {
      ArrayRef<int64_t> reduced = ArrayRef(g.space).drop_front(g.rows);
      auto loop = scf::ForOp::create(b, loc, lane, index(computeProduct(reduced)), index(kWarp), init);
      OpBuilder::InsertionGuard guard(b);
      Block *loopBody = loop.getBody();
      if (!loopBody->empty() && loopBody->back().hasTrait<OpTrait::IsTerminator>())
        loopBody->back().erase(); // the builder's yield (no carried values)
      b.setInsertionPointToStart(loopBody);
      SmallVector<Value> ivs(rowIvs);
      llvm::append_range(ivs, delinearize(b, loc, loop.getInductionVar(), reduced));
      scf::YieldOp::create(b, loc, body(ivs, loop.getRegionIterArgs()));
      return SmallVector<Value>(loop.getResults());
    }
    SmallVector<Value> ivs(rowIvs);
    std::function<SmallVector<Value>(unsigned, ValueRange)> nest =
        [&](unsigned dim, ValueRange carried) -> SmallVector<Value> {
      auto loop = scf::ForOp::create(b, loc, index(0), index(g.space[dim]), index(1), carried);
      OpBuilder::InsertionGuard guard(b);
      Block *loopBody = loop.getBody();
      if (!loopBody->empty() && loopBody->back().hasTrait<OpTrait::IsTerminator>())
        loopBody->back().erase(); // the builder's yield (no carried values)
      b.setInsertionPointToStart(loopBody);
      ivs.push_back(loop.getInductionVar());
      SmallVector<Value> next = dim + 1 < g.space.size()
                                    ? nest(dim + 1, loop.getRegionIterArgs())
                                    : body(ivs, loop.getRegionIterArgs());
      ivs.pop_back();
      scf::YieldOp::create(b, loc, next);
      return SmallVector<Value>(loop.getResults());
    };
    return nest(g.rows, init);
  }

  /// The value op `i`'s operand reads at `ivs` (S or row indices).
  Value operand(int i, OpOperand &operand, Memo &memo, ArrayRef<Value> ivs) {
    Value buffer = operand.get();
    if (!isa<MemRefType>(buffer.getType()))
      return buffer;
    int src = g.source[i][operand.getOperandNumber()];
    if (src < 0) {
      AffineMap map = g.ops[i].getMatchingIndexingMap(&operand);
      return memref::LoadOp::create(b, loc, buffer,
                                    *affine::expandAffineMap(b, loc, map, ivs));
    }
    return g.roles[src] == RowRole::Full ? full(src, memo, ivs) : rowValues[src];
  }

  SmallVector<Value> arguments(int i, Memo &memo, ArrayRef<Value> ivs, bool withInit) {
    linalg::GenericOp op = g.ops[i];
    SmallVector<Value> args;
    for (OpOperand &o : op->getOpOperands()) {
      bool used = !op.getMatchingBlockArgument(&o).use_empty();
      args.push_back(used && (withInit || !op.isDpsInit(&o)) ? operand(i, o, memo, ivs)
                                                             : Value());
    }
    return args;
  }

  /// Elementwise op `i` at `ivs`, computed once per loop body.
  Value full(int i, Memo &memo, ArrayRef<Value> ivs) {
    if (Value known = memo.lookup(i))
      return known;
    SmallVector<Value> args = arguments(i, memo, ivs, /*withInit=*/true);
    return memo[i] = cloneBody(b, g.ops[i], args, ivs).front();
  }

  Value rowOp(int i) {
    Memo memo;
    return cloneBody(b, g.ops[i], arguments(i, memo, rowIvs, true), rowIvs).front();
  }

  Value reduce(int i) {
    linalg::GenericOp op = g.ops[i];
    Value init;
    auto it = fills.find(op);
    if (it != fills.end() && !it->second.empty() && it->second[0]) {
      init = it->second[0];
    } else {
      Memo memo;
      SmallVector<Value> ivs(rowIvs);
      ivs.append(g.space.size() - g.rows, index(0)); // the output ignores them
      init = operand(i, *op.getDpsInitOperand(0), memo, ivs);
    }
    auto step = [&](ArrayRef<Value> ivs, ValueRange acc) {
      Memo memo;
      SmallVector<Value> args = arguments(i, memo, ivs, /*withInit=*/false);
      args.back() = acc.front();
      return cloneBody(b, op, args, ivs);
    };
    if (!warp)
      return overReduced(init, step).front();
    // Each lane folds its share from the neutral element, a butterfly of
    // xor shuffles gives every lane the row's total, then the output's
    // starting value is folded in.
    TypedAttr neutral;
    Operation *combiner = soleCombiner(op, neutral);
    Value acc = op.getRegionOutputArgs().front();
    auto combine = [&](Value carried, Value value) {
      return cloneCombiner(b, combiner, acc, carried, value);
    };
    Value part = overReduced(arith::ConstantOp::create(b, loc, neutral).getResult(), step).front();
    for (int32_t offset = kWarp / 2; offset > 0; offset /= 2)
      part = combine(part, gpu::ShuffleOp::create(b, loc, part, offset, kWarp,
                                                  gpu::ShuffleMode::XOR)
                               .getShuffleResult());
    return combine(init, part);
  }

  RowGroup &g;
  OpBuilder &b;
  Location loc;
  const llvm::DenseMap<Operation *, SmallVector<Value>> &fills;
  bool warp;  // a warp per row (warpSharesRows), else a thread
  Value lane; // with a warp per row: this thread's lane
  SmallVector<Value> rowIvs;
  llvm::DenseMap<int, Value> rowValues;
};

} // namespace

LogicalResult emitRowKernel(RowGroup &g, OpBuilder &b,
                            const llvm::DenseMap<Operation *, SmallVector<Value>> &fills,
                            StringRef kernelName) {
  return RowGroupEmitter(g, b, fills, warpSharesRows(g)).emit(kernelName);
}

} // namespace trc::gpukernels
