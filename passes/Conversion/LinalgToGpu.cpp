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
    int counter = 0;
    for (Operation *op : work) {
      if (gone.contains(op))
        continue; // a fill folded into the reduction after it
      if (auto named = dyn_cast<linalg::LinalgOp>(op)) {
        if (failed(lower(rewriter, named, counter)))
          return signalPassFailure();
      } else if (failed(lowerLoopNest(rewriter, cast<scf::ForOp>(op), counter))) {
        return signalPassFailure();
      }
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

  LogicalResult lower(IRRewriter &rewriter, linalg::LinalgOp named, int &counter) {
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
    std::string opName = named->getName().stripDialect().str();
    SmallVector<Value> fills = folded.lookup(named.getOperation());
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
    for (auto [dim, type] : llvm::enumerate(generic.getIteratorTypesArray())) {
      if (!linalg::isParallelIterator(type))
        continue;
      points *= ranges[dim];
    }
    if (points == 0) { // nothing to compute
      rewriter.eraseOp(generic);
      return success();
    }
    for (OpOperand &init : generic.getDpsInitsMutable()) {
      AffineMap map = generic.getMatchingIndexingMap(&init);
      for (auto [dim, type] : llvm::enumerate(generic.getIteratorTypesArray()))
        if (!linalg::isParallelIterator(type) && map.isFunctionOfDim(dim))
          return generic->emitError("the CUDA backend cannot lower a linalg op whose "
                                    "outputs depend on its reduction dimensions");
    }
    std::string name = (getOperation().getSymName() + "_k" + Twine(counter++) + "_" +
                        opName).str();
    KernelEmitter emitter(generic, rewriter, std::move(fills));
    if (failed(emitter.emit(name)))
      return generic->emitError("cannot build the kernel's launch");
    rewriter.eraseOp(generic);
    return success();
  }
};

} // namespace
