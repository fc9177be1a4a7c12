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

/// Static strides and offset of a memref, or failure.
LogicalResult staticLayout(MemRefType type, SmallVectorImpl<int64_t> &strides,
                           int64_t &offset) {
  if (!type.hasStaticShape() || failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) || llvm::any_of(strides, ShapedType::isDynamic))
    return failure();
  return success();
}

/// Emits the kernel of one generic op on buffers.
class KernelEmitter {
public:
  KernelEmitter(linalg::GenericOp op, OpBuilder &b) : op(op), b(b), loc(op.getLoc()) {}

  /// Builds the gpu.launch before `op` (which the caller erases).
  LogicalResult emit(StringRef kernelName);

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  bool canVectorize();
  /// Clones the body with its block arguments bound to `args` (null for
  /// unused ones) and linalg.index to `ivs`; returns the yielded values.
  SmallVector<Value> cloneBody(ArrayRef<Value> args, ArrayRef<Value> ivs);
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

SmallVector<Value> KernelEmitter::cloneBody(ArrayRef<Value> args, ArrayRef<Value> ivs) {
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
  for (OpOperand &init : op.getDpsInitsMutable())
    accumulators.push_back(load(init, ivs));

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
  int64_t threads = std::min<int64_t>(kMaxThreads, llvm::alignTo(items, kWarp));
  int64_t blocks = llvm::divideCeil(items, threads);

  MLIRContext *ctx = op.getContext();
  Value one = index(1);
  auto launch = gpu::LaunchOp::create(b, 
      loc, index(blocks), one, one, index(threads), one, one,
      /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/ValueRange{}, /*workgroupAttributions=*/TypeRange{},
      /*privateAttributions=*/TypeRange{}, /*clusterSizeX=*/nullptr,
      /*clusterSizeY=*/nullptr, /*clusterSizeZ=*/nullptr,
      FlatSymbolRefAttr::get(ctx, kKernelModule), FlatSymbolRefAttr::get(ctx, kernelName));
  Block &body = launch.getBody().front();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(terminator);

  Value item = arith::AddIOp::create(b, 
      loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, index(threads)),
      launch.getThreadIds().x);
  if (blocks * threads != items) {
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, item, index(items));
    auto guardIf = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    b.setInsertionPoint(guardIf.thenBlock()->getTerminator());
  }
  // Delinearize: the innermost parallel dimension varies fastest, so the
  // threads of a warp touch consecutive elements.
  SmallVector<Value> ivs(ranges.size(), Value());
  Value rest = item;
  for (int k = static_cast<int>(parallel.size()) - 1; k >= 0; --k) {
    unsigned dim = parallel[k];
    bool innermost = k + 1 == static_cast<int>(parallel.size());
    int64_t extent = ranges[dim] / (innermost ? lanes : 1);
    Value iv = rest;
    if (k > 0) {
      iv = arith::RemUIOp::create(b, loc, rest, index(extent));
      rest = arith::DivUIOp::create(b, loc, rest, index(extent));
    }
    if (innermost && lanes > 1)
      iv = arith::MulIOp::create(b, loc, iv, index(lanes));
    ivs[dim] = iv;
  }
  if (!reduction.empty())
    emitReduction(ivs);
  else if (vectorize)
    emitVectorPoint(ivs);
  else
    emitPoint(ivs);

  // Constants and constant globals (and views of them) move into the kernel.
  return sinkOperationsIntoLaunchOp(launch, isSinkable);
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

    SmallVector<linalg::LinalgOp> ops;
    func.walk([&](linalg::LinalgOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    int counter = 0;
    for (linalg::LinalgOp named : ops) {
      if (failed(lower(rewriter, named, counter)))
        return signalPassFailure();
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
      if (isa<memref::GetGlobalOp>(op))
        return complain("reads constant @" +
                        cast<memref::GetGlobalOp>(op).getName() +
                        " on the host (outside a kernel)");
      if (isa<memref::AllocOp, memref::AllocaOp>(op))
        return complain("allocates on the host (the memory plan places every buffer)");
      if (!isMemoryEffectFree(op))
        return complain("would run on the host");
      return WalkResult::advance();
    });
    if (failedCheck)
      signalPassFailure();
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
    KernelEmitter emitter(generic, rewriter);
    if (failed(emitter.emit(name)))
      return generic->emitError("cannot build the kernel's launch");
    rewriter.eraseOp(generic);
    return success();
  }
};

} // namespace
