//===- GpuGenericKernel.cpp - one linalg.generic as a CUDA kernel ---------===//
//
// emitGenericKernel (include/trc/Conversion/GpuKernels.h): the parallel
// iteration space linearized over blocks of up to 256 threads, one point per
// thread (kLanes contiguous points with 16-byte vector accesses when every
// layout allows), reductions as a sequential loop with the accumulators in
// registers. Preconditions: a linalg.generic on buffers with static shapes,
// strides and offsets whose outputs do not depend on its reduction
// dimensions.
//
//===----------------------------------------------------------------------===//
#include "GpuKernelCommon.h"
#include "trc/Analysis/ElementBytes.h"

#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace trc::gpukernels {
namespace {

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
    return gpukernels::cloneBody(b, op, args, ivs);
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
    return llvm::MaybeAlign(kLanes * elementBytes(element));
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

} // namespace

LogicalResult emitGenericKernel(linalg::GenericOp op, OpBuilder &b, SmallVector<Value> fills,
                                StringRef kernelName) {
  return KernelEmitter(op, b, std::move(fills)).emit(kernelName);
}

} // namespace trc::gpukernels
