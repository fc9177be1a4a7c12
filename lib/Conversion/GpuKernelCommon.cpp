//===- GpuKernelCommon.cpp - what the CUDA kernel emitters share ----------===//
//
// Launch frames, index arithmetic, body cloning and buffer extents for the
// kernel emitters (GpuKernelCommon.h); staticLayout, soleCombiner, cloneCombiner
// and sinkConstants.
//
//===----------------------------------------------------------------------===//
#include "GpuKernelCommon.h"
#include "trc/Analysis/ElementBytes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace trc::gpukernels {

/// Whether `value` is a constant global or a view of one: such values are
/// recreated inside every kernel that reads them (the host's copy of a
/// constant is not in device memory).
static bool isGlobalView(Value value) {
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

LogicalResult sinkConstants(gpu::LaunchOp launch) {
  return sinkOperationsIntoLaunchOp(launch, isSinkable);
}

Operation *soleCombiner(linalg::GenericOp op, TypedAttr &neutral) {
  SmallVector<Operation *, 2> combiners;
  if (op.getNumDpsInits() < 1 ||
      !matchReduction(op.getRegionOutputArgs(), 0, combiners) || combiners.size() != 1)
    return nullptr;
  std::optional<TypedAttr> identity = arith::getNeutralElement(combiners.front());
  if (!identity)
    return nullptr;
  neutral = *identity;
  return combiners.front();
}

Value cloneCombiner(OpBuilder &b, Operation *combiner, Value acc, Value carried,
                    Value value) {
  IRMapping map;
  for (Value operand : combiner->getOperands())
    map.map(operand, operand == acc ? carried : value);
  return b.clone(*combiner, map)->getResult(0);
}

/// Static strides and offset of a memref, or failure.
LogicalResult staticLayout(MemRefType type, SmallVectorImpl<int64_t> &strides,
                           int64_t &offset) {
  if (!type.hasStaticShape() || failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) || llvm::any_of(strides, ShapedType::isDynamic))
    return failure();
  return success();
}
LaunchFrame buildLaunch(OpBuilder &b, Location loc, int64_t items, StringRef kernelName,
                        int64_t maxThreads) {
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

Extent extentOf(Value memref) {
  Operation *def = memref.getDefiningOp();
  if (auto view = dyn_cast_or_null<memref::ViewOp>(def)) {
    Extent source = extentOf(view.getSource());
    auto type = cast<MemRefType>(view.getType());
    APInt offset;
    if (type.hasStaticShape() && type.getElementType().isIntOrFloat() &&
        matchPattern(view.getByteShift(), m_ConstantInt(&offset))) {
      source.begin += offset.getSExtValue();
      source.end = source.begin + storageBytes(type);
    }
    return source;
  }
  if (auto like = dyn_cast_or_null<ViewLikeOpInterface>(def))
    return extentOf(like.getViewSource());
  return Extent{memref};
}

} // namespace trc::gpukernels
