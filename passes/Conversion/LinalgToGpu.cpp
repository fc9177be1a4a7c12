//===- LinalgToGpu.cpp - trc-linalg-to-gpu ----------------------------------===//
//
// Every linalg op on buffers -> one gpu.launch (see Passes.td): the parallel
// iteration space linearized over blocks of up to 256 threads, one point
// per thread (4 contiguous points with 16-byte vector accesses when the
// layouts allow), reductions as a sequential loop with the accumulators in
// registers. Preconditions: bufferized IR with static shapes and strides;
// buffers are at least 16-byte aligned (slots and the arena are 64-byte
// aligned and the memory plan's offsets are multiples of 64). Afterwards the
// host only does pointer arithmetic, launches and trc_rt_* calls, which is
// checked.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/RegionUtils.h"

namespace trc {
#define GEN_PASS_DEF_LINALGTOGPU
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

constexpr int64_t kMaxThreads = 256; // threads per block
constexpr int64_t kWarp = 32;
constexpr int64_t kLanes = 4;        // points per thread on the vector path
constexpr const char *kKernelModule = "trc_kernels";

/// Whether `value` is a constant global or a view of one: such values are
/// recreated inside every kernel that reads them (the host's copy of a
/// constant is not in device memory).
bool isGlobalView(Value value) {
  for (Operation *def = value.getDefiningOp(); def;) {
    if (isa<memref::GetGlobalOp>(def))
      return true;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    def = view.getViewSource().getDefiningOp();
  }
  return false;
}

bool isSinkable(Operation *op) {
  if (matchPattern(op, m_Constant()) || isa<memref::GetGlobalOp>(op))
    return true;
  return isa<ViewLikeOpInterface>(op) && op->getNumResults() == 1 &&
         isGlobalView(op->getResult(0));
}

/// Whether the buffer behind `memref` starts 16-byte aligned: function
/// arguments (slots, the arena) are 64-byte aligned, views of the arena
/// start at the plan's 64-byte multiples; a constant global only if it
/// says so.
bool isAligned(Value memref) {
  for (Operation *def = memref.getDefiningOp(); def;) {
    if (auto get = dyn_cast<memref::GetGlobalOp>(def)) {
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          get, get.getNameAttr());
      return global && global.getAlignment() && *global.getAlignment() >= 16;
    }
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      APInt shift;
      if (!matchPattern(view.getByteShift(), m_ConstantInt(&shift)) ||
          shift.getSExtValue() % 16 != 0)
        return false;
      def = view.getSource().getDefiningOp();
      continue;
    }
    auto like = dyn_cast<ViewLikeOpInterface>(def);
    if (!like)
      return false; // not a buffer this pass knows the alignment of
    def = like.getViewSource().getDefiningOp();
  }
  return true; // a function argument
}

/// Static strides and offset of a memref, or failure.
LogicalResult staticLayout(MemRefType type, SmallVectorImpl<int64_t> &strides,
                           int64_t &offset) {
  if (!type.hasStaticShape() || failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) || llvm::any_of(strides, ShapedType::isDynamic))
    return failure();
  return success();
}

/// A launch of `items` work items over blocks of up to kMaxThreads threads
/// (x only) in @trc_kernels; `b` is left inside the body where
/// `item` = block_id.x * threads + thread_id.x, guarded against the items
/// past the end. The caller sinks constants once the body is complete.
struct LaunchFrame {
  gpu::LaunchOp launch;
  Value item;
};

LaunchFrame buildLaunch(OpBuilder &b, Location loc, int64_t items, StringRef kernelName,
                        int64_t maxThreads = kMaxThreads) {
  auto index = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  int64_t threads = std::min<int64_t>(maxThreads, llvm::alignTo(items, kWarp));
  int64_t blocks = llvm::divideCeil(items, threads);
  MLIRContext *ctx = b.getContext();
  Value one = index(1);
  auto launch = gpu::LaunchOp::create(
      b, loc, index(blocks), one, one, index(threads), one, one,
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/ValueRange{}, /*workgroupAttributions=*/TypeRange{},
      /*privateAttributions=*/TypeRange{}, /*clusterSizeX=*/nullptr,
      /*clusterSizeY=*/nullptr, /*clusterSizeZ=*/nullptr,
      FlatSymbolRefAttr::get(ctx, kKernelModule), FlatSymbolRefAttr::get(ctx, kernelName));
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(terminator);
  Value item = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, index(threads)),
      launch.getThreadIds().x);
  if (blocks * threads != items) {
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, item, index(items));
    auto guardIf = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    b.setInsertionPoint(guardIf.thenBlock()->getTerminator());
  }
  return {launch, item};
}

/// `item` as indices of `extents` (row-major: the last varies fastest, so
/// the threads of a warp touch consecutive elements).
SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value item,
                               ArrayRef<int64_t> extents) {
  SmallVector<Value> ivs(extents.size());
  Value rest = item;
  for (int k = static_cast<int>(extents.size()) - 1; k >= 0; --k) {
    if (k == 0) {
      ivs[k] = rest;
      break;
    }
    Value extent = arith::ConstantIndexOp::create(b, loc, extents[k]);
    ivs[k] = arith::RemUIOp::create(b, loc, rest, extent);
    rest = arith::DivUIOp::create(b, loc, rest, extent);
  }
  return ivs;
}

/// Clones `op`'s body with its block arguments bound to `args` (null for
/// unused ones) and linalg.index to `ivs`; returns the yielded values.
SmallVector<Value> cloneBody(OpBuilder &b, linalg::GenericOp op, ArrayRef<Value> args,
                             ArrayRef<Value> ivs) {
  IRMapping mapping;
  Block &body = op.getRegion().front();
  for (auto [arg, value] : llvm::zip(body.getArguments(), args))
    if (value)
      mapping.map(arg, value);
  for (Operation &inner : body.without_terminator()) {
    if (auto idx = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(idx.getResult(), ivs[idx.getDim()]);
      continue;
    }
    Operation *copy = b.clone(inner, mapping);
    // linalg.index nested in a region of the body.
    copy->walk([&](linalg::IndexOp nested) {
      nested.replaceAllUsesWith(ivs[nested.getDim()]);
      nested.erase();
    });
  }
  SmallVector<Value> results;
  for (Value v : body.getTerminator()->getOperands())
    results.push_back(mapping.lookupOrDefault(v));
  return results;
}

/// Emits the kernel of one generic op on buffers.
class KernelEmitter {
public:
  /// `fills[i]`, when set, is the value the i-th output was filled with
  /// just before the op (a reduction's identity): the kernel starts from it
  /// instead of reading the output.
  KernelEmitter(linalg::GenericOp op, OpBuilder &b, SmallVector<Value> fills = {})
      : op(op), b(b), loc(op.getLoc()), fills(std::move(fills)) {}

  /// Builds the gpu.launch before `op` (which the caller erases).
  LogicalResult emit(StringRef kernelName);

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  bool canVectorize();
  SmallVector<Value> cloneBody(ArrayRef<Value> args, ArrayRef<Value> ivs) {
    return ::cloneBody(b, op, args, ivs);
  }
  Value load(OpOperand &operand, ArrayRef<Value> ivs);
  void store(Value value, OpOperand &operand, ArrayRef<Value> ivs);
  void emitPoint(ArrayRef<Value> ivs);
  void emitVectorPoint(ArrayRef<Value> ivs);
  void emitReduction(SmallVector<Value> ivs);
  SmallVector<Value> mapIndices(AffineMap map, ArrayRef<Value> ivs) {
    return *affine::expandAffineMap(b, loc, map, ivs);
  }

  linalg::GenericOp op;
  OpBuilder &b;
  Location loc;
  SmallVector<int64_t> ranges;
  SmallVector<unsigned> parallel, reduction;
  SmallVector<Value> fills;
};

bool KernelEmitter::canVectorize() {
  if (!reduction.empty() || parallel.empty())
    return false;
  unsigned inner = parallel.back();
  if (ranges[inner] % kLanes != 0)
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    bool isInit = op.isDpsInit(&operand);
    if (!map.isFunctionOfDim(inner)) {
      if (isInit)
        return false; // an output must be written once per point
      continue;       // read once and shared by the lanes
    }
    // The innermost dimension indexes only the last result, directly.
    unsigned last = map.getNumResults() - 1;
    for (unsigned r = 0; r < last; ++r)
      if (map.getResult(r).isFunctionOfDim(inner))
        return false;
    if (map.getResult(last) != b.getAffineDimExpr(inner))
      return false;
    auto type = cast<MemRefType>(operand.get().getType());
    if (!isAligned(operand.get()))
      return false;
    Type element = type.getElementType();
    if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() < 8 ||
        element.getIntOrFloatBitWidth() > 32)
      return false;
    // Every group of 4 starts at a multiple of 4 elements from the
    // (16-byte aligned) base: unit innermost stride, the rest and the offset
    // multiples of 4.
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(staticLayout(type, strides, offset)) || strides.back() != 1 ||
        offset % kLanes != 0)
      return false;
    for (int64_t s : ArrayRef(strides).drop_back())
      if (s % kLanes != 0)
        return false;
  }
  return true;
}

Value KernelEmitter::load(OpOperand &operand, ArrayRef<Value> ivs) {
  if (!isa<MemRefType>(operand.get().getType()))
    return operand.get(); // a scalar operand (linalg.fill's value)
  return memref::LoadOp::create(b, loc, operand.get(),
                                  mapIndices(op.getMatchingIndexingMap(&operand), ivs));
}

void KernelEmitter::store(Value value, OpOperand &operand, ArrayRef<Value> ivs) {
  memref::StoreOp::create(b, loc, value, operand.get(),
                            mapIndices(op.getMatchingIndexingMap(&operand), ivs));
}

/// One point of an op without reductions.
void KernelEmitter::emitPoint(ArrayRef<Value> ivs) {
  SmallVector<Value> args;
  for (OpOperand &operand : op->getOpOperands())
    args.push_back(op.getMatchingBlockArgument(&operand).use_empty() ? Value()
                                                                      : load(operand, ivs));
  SmallVector<Value> results = cloneBody(args, ivs);
  for (auto [value, init] : llvm::zip(results, op.getDpsInitsMutable()))
    store(value, init, ivs);
}

/// kLanes consecutive points along the innermost dimension (ivs[inner] is
/// the first), read and written with vector accesses.
void KernelEmitter::emitVectorPoint(ArrayRef<Value> ivs) {
  unsigned inner = parallel.back();
  auto alignment = [](OpOperand &operand) {
    Type element = cast<MemRefType>(operand.get().getType()).getElementType();
    return llvm::MaybeAlign(kLanes * element.getIntOrFloatBitWidth() / 8);
  };
  SmallVector<SmallVector<Value>> laneArgs(kLanes);
  for (OpOperand &operand : op->getOpOperands()) {
    if (op.getMatchingBlockArgument(&operand).use_empty()) {
      for (auto &args : laneArgs)
        args.push_back(Value());
      continue;
    }
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (!map.isFunctionOfDim(inner)) {
      Value shared = load(operand, ivs);
      for (auto &args : laneArgs)
        args.push_back(shared);
      continue;
    }
    auto memref = cast<MemRefType>(operand.get().getType());
    auto vectorType = VectorType::get({kLanes}, memref.getElementType());
    Value vector = vector::LoadOp::create(b, loc, vectorType, operand.get(),
                                            mapIndices(map, ivs), /*nontemporal=*/false,
                                            alignment(operand));
    for (int64_t lane = 0; lane < kLanes; ++lane)
      laneArgs[lane].push_back(vector::ExtractOp::create(b, loc, vector, lane));
  }
  SmallVector<SmallVector<Value>> laneResults;
  for (int64_t lane = 0; lane < kLanes; ++lane) {
    SmallVector<Value> laneIvs(ivs);
    if (lane)
      laneIvs[inner] = arith::AddIOp::create(b, loc, ivs[inner], index(lane));
    laneResults.push_back(cloneBody(laneArgs[lane], laneIvs));
  }
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable())) {
    SmallVector<Value> lanes;
    for (auto &results : laneResults)
      lanes.push_back(results[i]);
    auto memref = cast<MemRefType>(init.get().getType());
    auto vectorType = VectorType::get({kLanes}, memref.getElementType());
    Value vector = vector::FromElementsOp::create(b, loc, vectorType, lanes);
    vector::StoreOp::create(b, loc, vector, init.get(),
                              mapIndices(op.getMatchingIndexingMap(&init), ivs),
                              /*nontemporal=*/false, alignment(init));
  }
}

/// One point of the parallel dimensions: the outputs are read once into
/// accumulators, the reduction dimensions run as nested scf.for loops
/// carrying them, and the results are written once.
void KernelEmitter::emitReduction(SmallVector<Value> ivs) {
  Value zero = index(0);
  for (unsigned d : reduction)
    ivs[d] = zero; // the outputs do not depend on them
  SmallVector<Value> accumulators;
  for (auto [i, init] : llvm::enumerate(op.getDpsInitsMutable()))
    accumulators.push_back(i < fills.size() && fills[i] ? fills[i] : load(init, ivs));

  std::function<SmallVector<Value>(unsigned, ValueRange)> loop =
      [&](unsigned level, ValueRange carried) -> SmallVector<Value> {
    unsigned dim = reduction[level];
    auto forOp = scf::ForOp::create(b, loc, zero, index(ranges[dim]), index(1), carried);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forOp.getBody());
    ivs[dim] = forOp.getInductionVar();
    SmallVector<Value> next;
    if (level + 1 < reduction.size()) {
      next = loop(level + 1, forOp.getRegionIterArgs());
    } else {
      SmallVector<Value> args;
      for (OpOperand *input : op.getDpsInputOperands())
        args.push_back(op.getMatchingBlockArgument(input).use_empty() ? Value()
                                                                       : load(*input, ivs));
      llvm::append_range(args, forOp.getRegionIterArgs());
      next = cloneBody(args, ivs);
    }
    scf::YieldOp::create(b, loc, next);
    return SmallVector<Value>(forOp.getResults());
  };
  SmallVector<Value> results = loop(0, accumulators);
  for (unsigned d : reduction)
    ivs[d] = zero;
  for (auto [value, init] : llvm::zip(results, op.getDpsInitsMutable()))
    store(value, init, ivs);
}

LogicalResult KernelEmitter::emit(StringRef kernelName) {
  ranges = op.getStaticLoopRanges();
  for (auto [dim, type] : llvm::enumerate(op.getIteratorTypesArray()))
    (linalg::isParallelIterator(type) ? parallel : reduction).push_back(dim);
  int64_t points = 1;
  for (unsigned d : parallel)
    points *= ranges[d];
  bool vectorize = canVectorize();
  int64_t lanes = vectorize ? kLanes : 1;
  int64_t items = points / lanes;

  OpBuilder::InsertionGuard guard(b);
  LaunchFrame frame = buildLaunch(b, loc, items, kernelName);
  SmallVector<int64_t> extents;
  for (unsigned d : parallel)
    extents.push_back(ranges[d]);
  if (!extents.empty())
    extents.back() /= lanes;
  SmallVector<Value> parallelIvs = delinearize(b, loc, frame.item, extents);
  SmallVector<Value> ivs(ranges.size(), Value());
  for (auto [k, dim] : llvm::enumerate(parallel))
    ivs[dim] = parallelIvs[k];
  if (lanes > 1)
    ivs[parallel.back()] = arith::MulIOp::create(b, loc, ivs[parallel.back()], index(lanes));
  if (!reduction.empty())
    emitReduction(ivs);
  else if (vectorize)
    emitVectorPoint(ivs);
  else
    emitPoint(ivs);

  // Constants and constant globals (and views of them) move into the kernel.
  return sinkOperationsIntoLaunchOp(frame.launch, isSinkable);
}

/// `memref.reshape` with a static result and a constant shape operand ->
/// `memref.reinterpret_cast` (the shape buffer is never read).
void reshapesToCasts(func::FuncOp func) {
  SmallVector<memref::ReshapeOp> reshapes;
  func.walk([&](memref::ReshapeOp op) { reshapes.push_back(op); });
  for (auto op : reshapes) {
    auto result = cast<MemRefType>(op.getType());
    if (!result.hasStaticShape() || !result.getLayout().isIdentity())
      continue;
    SmallVector<int64_t> strides(result.getRank(), 1);
    for (int64_t i = result.getRank() - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * result.getDimSize(i + 1);
    OpBuilder b(op);
    Value cast = memref::ReinterpretCastOp::create(b, op.getLoc(), result, op.getSource(), 0,
                                                     result.getShape(), strides);
    op.replaceAllUsesWith(cast);
    op.erase();
  }
}

/// The bytes a memref value may touch: a root (a function argument, or
/// anything not understood) and a byte range in it. Views of the arena at
/// constant offsets get their exact range; other views conservatively
/// their source's.
struct Extent {
  Value root;
  int64_t begin = 0, end = std::numeric_limits<int64_t>::max();
  bool overlaps(const Extent &o) const {
    return root == o.root && begin < o.end && o.begin < end;
  }
};

Extent extentOf(Value memref) {
  Operation *def = memref.getDefiningOp();
  if (auto view = dyn_cast_or_null<memref::ViewOp>(def)) {
    Extent source = extentOf(view.getSource());
    auto type = cast<MemRefType>(view.getType());
    APInt offset;
    if (type.hasStaticShape() && type.getElementType().isIntOrFloat() &&
        matchPattern(view.getByteShift(), m_ConstantInt(&offset))) {
      source.begin += offset.getSExtValue();
      source.end = source.begin + type.getNumElements() *
                                      llvm::divideCeil(type.getElementTypeBitWidth(), 8);
    }
    return source;
  }
  if (auto like = dyn_cast_or_null<ViewLikeOpInterface>(def))
    return extentOf(like.getViewSource());
  return Extent{memref};
}

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


//===----------------------------------------------------------------------===//
// Row kernels: a reduction and the ops after it on the same rows, fused
//===----------------------------------------------------------------------===//

/// A reduction over the trailing dimensions of a space S (k row dimensions,
/// then m reduced ones) and the ops after it on the same rows form one
/// kernel, one thread per row (layer norm, softmax: what trc-fuse's
/// reduction fusions group). What an op of the group writes is never read
/// back from memory inside it: reductions and row ops (over S[:k]) leave a
/// scalar per row in a register, elementwise ops over S are recomputed
/// wherever they are read (inside a reduction's loop, or in the final loop
/// that stores them), and only results read after the group are stored, at
/// the end of the thread. So every buffer the group writes must be
/// accessed inside it only row-locally (the identity map over S, or the
/// row prefix), and no other buffer it reads may overlap one it writes.
enum class RowRole { None, Full, Reduction, Row };

struct RowGroup {
  SmallVector<int64_t> space; // S
  unsigned rows = 0;          // k
  SmallVector<linalg::GenericOp> ops;
  SmallVector<RowRole> roles;
  // source[i][j]: the group op whose result op i's operand j reads, or -1
  // for the buffer's contents before the group.
  SmallVector<SmallVector<int>> source;
  SmallVector<bool> stores; // op i's result is read after the group
};

AffineMap rowPrefixMap(unsigned dims, unsigned rows, MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d < rows; ++d)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(dims, 0, exprs, ctx);
}

RowRole roleIn(linalg::GenericOp op, ArrayRef<int64_t> space, unsigned rows) {
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

/// The group starting at `ops[first]` (a reduction over trailing
/// dimensions), extended over the next ops while they qualify; `between`
/// says whether the host code between two ops may be crossed (pure).
RowGroup formRowGroup(ArrayRef<linalg::GenericOp> ops, size_t first) {
  RowGroup g;
  linalg::GenericOp head = ops[first];
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
  for (size_t i = first; i < ops.size(); ++i) {
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
    for (OpOperand &operand : op->getOpOperands()) {
      Value buffer = operand.get();
      if (!isa<MemRefType>(buffer.getType())) {
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
    if (auto it = writer.find(result);
        it != writer.end() && (g.roles[it->second] == RowRole::Full) != (kind == RowRole::Full))
      ok = false;
    for (auto &[read, map, reader] : llvm::concat<std::tuple<Value, AffineMap, RowRole>>(
             externalReads, reads))
      if (extentOf(read).overlaps(extentOf(result)))
        ok &= read == result && rowLocal(reader, kind, map);
    if (!ok)
      return g;
    g.ops.push_back(op);
    g.roles.push_back(role);
    g.source.push_back(std::move(sources));
    llvm::append_range(externalReads, reads);
    writer[result] = static_cast<int>(g.ops.size()) - 1;
  }
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

class RowGroupEmitter {
public:
  RowGroupEmitter(RowGroup &g, OpBuilder &b,
                  const llvm::DenseMap<Operation *, SmallVector<Value>> &fills)
      : g(g), b(b), loc(g.ops.front().getLoc()), fills(fills) {}

  LogicalResult emit(StringRef kernelName) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(g.ops.back()); // every operand is defined by then
    ArrayRef<int64_t> rowExtents = ArrayRef(g.space).take_front(g.rows);
    int64_t items = 1;
    for (int64_t e : rowExtents)
      items *= e;
    LaunchFrame frame = buildLaunch(b, loc, items, kernelName);
    rowIvs = delinearize(b, loc, frame.item, rowExtents);
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
    for (auto [i, role] : llvm::enumerate(g.roles))
      if (role != RowRole::Full && g.stores[i])
        memref::StoreOp::create(b, loc, rowValues[i], g.ops[i].getDpsInits()[0], rowIvs);
    return sinkOperationsIntoLaunchOp(frame.launch, isSinkable);
  }

private:
  using Memo = llvm::DenseMap<int, Value>;
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

  /// Nested scf.for over the reduced dimensions carrying `init`; `body`
  /// gets the full indices and the carried values and returns the next.
  SmallVector<Value>
  overReduced(ValueRange init,
              llvm::function_ref<SmallVector<Value>(ArrayRef<Value>, ValueRange)> body) {
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
    return overReduced(init, [&](ArrayRef<Value> ivs, ValueRange acc) {
             Memo memo;
             SmallVector<Value> args = arguments(i, memo, ivs, /*withInit=*/false);
             args.back() = acc.front();
             return cloneBody(b, op, args, ivs);
           })
        .front();
  }

  RowGroup &g;
  OpBuilder &b;
  Location loc;
  const llvm::DenseMap<Operation *, SmallVector<Value>> &fills;
  SmallVector<Value> rowIvs;
  llvm::DenseMap<int, Value> rowValues;
};

struct LinalgToGpu : trc::impl::LinalgToGpuBase<LinalgToGpu> {
  /// The kernels made here are later translated to LLVM IR by MLIR's NVVM
  /// target (gpu-module-to-binary), which needs these translations in the
  /// context: registering them here makes any pipeline with this pass work
  /// (trc-opt registers no translations itself).
  void getDependentDialects(DialectRegistry &registry) const override {
    LinalgToGpuBase::getDependentDialects(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registerNVVMDialectTranslation(registry);
    registerGPUDialectTranslation(registry);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    reshapesToCasts(func);

    // Kernels are numbered in program order: linalg ops and host loop
    // nests (what trc-lower-to-linalg writes as scf.for: scatter_add).
    SmallVector<Operation *> work;
    for (Operation &op : func.getBody().front())
      if (isa<linalg::LinalgOp, scf::ForOp>(op))
        work.push_back(&op);
    IRRewriter rewriter(&getContext());
    folded.clear();
    llvm::SmallPtrSet<Operation *, 8> gone; // fills folded into reductions
    for (Operation *op : work)
      if (auto named = dyn_cast<linalg::LinalgOp>(op); named && !gone.contains(op))
        if (SmallVector<Value> fills = foldFills(rewriter, named, gone); !fills.empty())
          folded[op] = std::move(fills);
    // Named ops become generics (their names kept for the kernels').
    llvm::DenseMap<Operation *, std::string> names;
    SmallVector<Operation *> items;
    for (Operation *op : work) {
      if (gone.contains(op))
        continue; // a fill folded into the reduction after it
      auto named = dyn_cast<linalg::LinalgOp>(op);
      if (!named) {
        items.push_back(op);
        continue;
      }
      std::string name = named->getName().stripDialect().str();
      FailureOr<linalg::GenericOp> generic = prepare(rewriter, named); // may erase `named`
      if (failed(generic))
        return signalPassFailure();
      if (*generic) {
        names[*generic] = name;
        if (auto it = folded.find(op); it != folded.end() && op != *generic) {
          SmallVector<Value> fills = std::move(it->second);
          folded.erase(it);
          folded[*generic] = std::move(fills);
        }
        items.push_back(*generic);
      } else {
        folded.erase(op); // nothing to compute: erased
      }
    }

    int counter = 0;
    std::string prefix = (func.getSymName() + "_k").str();
    for (size_t i = 0; i < items.size(); ++i) {
      if (auto loop = dyn_cast<scf::ForOp>(items[i])) {
        if (failed(lowerLoopNest(rewriter, loop, counter)))
          return signalPassFailure();
        continue;
      }
      // A reduction and the row ops after it: one kernel.
      SmallVector<linalg::GenericOp> run;
      for (size_t j = i; j < items.size() && isa<linalg::GenericOp>(items[j]); ++j)
        run.push_back(cast<linalg::GenericOp>(items[j]));
      RowGroup group = formRowGroup(run, 0);
      if (group.ops.size() > 1) {
        markStores(group);
        RowGroupEmitter emitter(group, rewriter, folded);
        std::string name = prefix + std::to_string(counter++) + "_rows";
        if (failed(emitter.emit(name))) {
          group.ops.front()->emitError("cannot build the kernel's launch");
          return signalPassFailure();
        }
        for (linalg::GenericOp op : group.ops)
          rewriter.eraseOp(op);
        i += group.ops.size() - 1;
        continue;
      }
      auto generic = cast<linalg::GenericOp>(items[i]);
      std::string name = prefix + std::to_string(counter++) + "_" + names[generic];
      KernelEmitter emitter(generic, rewriter, folded.lookup(generic));
      rewriter.setInsertionPoint(generic);
      if (failed(emitter.emit(name))) {
        generic->emitError("cannot build the kernel's launch");
        return signalPassFailure();
      }
      rewriter.eraseOp(generic);
    }

    // Host code left behind: drop what is dead, then everything else must
    // be pointer arithmetic, a launch or a runtime call.
    Block &entry = func.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(entry)))
      if (isOpTriviallyDead(&op))
        op.erase();
    bool failedCheck = false;
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op == func.getOperation() || isa<func::ReturnOp>(op))
        return WalkResult::advance();
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      auto complain = [&](const Twine &why) {
        op->emitError() << "'" << op->getName() << "' " << why
                        << ": the CUDA backend runs every computation in a kernel "
                           "and the host cannot read device memory";
        failedCheck = true;
        return WalkResult::interrupt();
      };
      if (auto call = dyn_cast<func::CallOp>(op)) {
        if (call.getCallee().starts_with("trc_rt_"))
          return WalkResult::advance();
        return complain("calls @" + call.getCallee() + " on the host");
      }
      if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        Operation *user = *global->user_begin();
        return complain("reads constant @" + global.getName() + " on the host (for '" +
                        user->getName().getStringRef() + "')");
      }
      if (isa<memref::AllocOp, memref::AllocaOp>(op))
        return complain("allocates on the host (the memory plan places every buffer)");
      if (!isMemoryEffectFree(op))
        return complain("would run on the host");
      return WalkResult::advance();
    });
    folded.clear();
    if (failedCheck)
      signalPassFailure();
  }

  // For the function being converted: reduction -> the values its outputs
  // start from (folded fills).
  llvm::DenseMap<Operation *, SmallVector<Value>> folded;

  LogicalResult lowerLoopNest(IRRewriter &rewriter, scf::ForOp nest, int &counter) {
    WalkResult nested = nest.walk([&](Operation *op) {
      if (isa<linalg::LinalgOp, gpu::LaunchOp, func::CallOp>(op)) {
        op->emitError("the CUDA backend cannot run this op inside a host loop");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (nested.wasInterrupted())
      return failure();
    std::string kernel =
        (getOperation().getSymName() + "_k" + Twine(counter++) + "_loop").str();
    rewriter.setInsertionPoint(nest);
    LoopNestEmitter emitter(nest, rewriter);
    bool parallel = false;
    if (failed(emitter.emit(kernel, parallel)))
      return nest->emitError("cannot build the kernel's launch");
    if (!parallel)
      nest->emitRemark("this loop nest runs on one GPU thread (its iterations could "
                       "not be shown independent)");
    rewriter.eraseOp(nest);
    return success();
  }

  /// A reduction whose outputs were just filled with a constant (its
  /// identity: -inf for max, 0 for sums) starts from that value: the fill
  /// kernel disappears when nothing else reads the filled buffer in between.
  SmallVector<Value> foldFills(IRRewriter &rewriter, linalg::LinalgOp op,
                               llvm::SmallPtrSetImpl<Operation *> &erased) {
    SmallVector<Value> fills;
    if (llvm::all_of(op.getIteratorTypesArray(), linalg::isParallelIterator))
      return fills;
    bool any = false;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      fills.push_back(Value());
      if (llvm::is_contained(op.getDpsInputs(), init.get()))
        continue; // the op reads the filled buffer as an input too
      // The fill is an earlier op of the same block with only pointer
      // arithmetic (no kernels or calls) between it and the reduction.
      for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
        auto fill = dyn_cast<linalg::FillOp>(prev);
        if (fill && fill.getDpsInits()[0] == init.get() &&
            matchPattern(fill.getDpsInputs()[0], m_Constant())) {
          OpBuilder::InsertionGuard guard(rewriter);
          rewriter.setInsertionPoint(op);
          fills.back() = rewriter.clone(*fill.getDpsInputs()[0].getDefiningOp())->getResult(0);
          erased.insert(fill);
          rewriter.eraseOp(fill);
          any = true;
          break;
        }
        if (!isMemoryEffectFree(prev))
          break;
      }
    }
    return any ? fills : SmallVector<Value>();
  }

  /// Checks `named` and returns it as a generic, or null when it has
  /// nothing to compute (it is then erased).
  FailureOr<linalg::GenericOp> prepare(IRRewriter &rewriter, linalg::LinalgOp named) {
    if (!named.hasPureBufferSemantics())
      return named->emitError("the CUDA backend takes linalg ops on buffers only");
    for (Value operand : named->getOperands()) {
      auto type = dyn_cast<MemRefType>(operand.getType());
      SmallVector<int64_t> strides;
      int64_t offset;
      if (type && failed(staticLayout(type, strides, offset)))
        return named->emitError("the CUDA backend needs static shapes, strides and "
                                "offsets, not ")
               << type;
    }
    rewriter.setInsertionPoint(named);
    linalg::GenericOp generic = dyn_cast<linalg::GenericOp>(named.getOperation());
    if (!generic) {
      FailureOr<linalg::GenericOp> generalized = linalg::generalizeNamedOp(rewriter, named);
      if (failed(generalized))
        return named->emitError("the CUDA backend cannot generalize this op");
      generic = *generalized;
    }
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    int64_t points = 1;
    for (auto [dim, type] : llvm::enumerate(generic.getIteratorTypesArray()))
      if (linalg::isParallelIterator(type))
        points *= ranges[dim];
    for (OpOperand &init : generic.getDpsInitsMutable()) {
      AffineMap map = generic.getMatchingIndexingMap(&init);
      for (auto [dim, type] : llvm::enumerate(generic.getIteratorTypesArray()))
        if (!linalg::isParallelIterator(type) && map.isFunctionOfDim(dim))
          return generic->emitError("the CUDA backend cannot lower a linalg op whose "
                                    "outputs depend on its reduction dimensions");
    }
    if (points == 0) { // nothing to compute
      rewriter.eraseOp(generic);
      return linalg::GenericOp();
    }
    return generic;
  }
};

} // namespace
