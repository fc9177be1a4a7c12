//===- GpuLaunchToLoops.cpp - trc-gpu-launch-to-loops ----------------------===//
//
// gpu.launch -> sequential scf.for loops over its blocks and threads on the
// host (see Passes.td): the CUDA backend's kernels, run by the CPU backend
// to test them without a GPU. Precondition: kernels whose threads do not
// communicate (no barriers or workgroup memory), except through
// `gpu.shuffle xor` at the top level of the body with a one-dimensional
// block (trc-linalg-to-gpu's warp-per-row kernels); others are an error.
// Such a body runs in segments cut at the shuffles: each segment loops over
// the block's threads, values another segment uses go through a per-thread
// array, and a shuffle reads its partner's element of its operand's array:
// the exact butterfly a GPU computes.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

namespace trc {
#define GEN_PASS_DEF_GPULAUNCHTOLOOPS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct GpuLaunchToLoops : trc::impl::GpuLaunchToLoopsBase<GpuLaunchToLoops> {
  void runOnOperation() override {
    SmallVector<gpu::LaunchOp> launches;
    getOperation().walk([&](gpu::LaunchOp op) { launches.push_back(op); });
    for (gpu::LaunchOp launch : launches)
      if (failed(emulate(launch)))
        return signalPassFailure();
  }

  LogicalResult emulate(gpu::LaunchOp launch) {
    if (!launch.getBody().hasOneBlock() || launch.getNumWorkgroupAttributions() ||
        launch.getNumPrivateAttributions() || launch.hasClusterSize() ||
        launch.getAsyncToken() || launch.getDynamicSharedMemorySize())
      return launch.emitError("only single-block kernels without shared memory, clusters "
                              "or async tokens can run as host loops");
    Block &entry = launch.getBody().front();
    bool shuffles = false;
    WalkResult communicating = launch.getBody().walk([&](Operation *op) {
      auto shuffle = dyn_cast<gpu::ShuffleOp>(op);
      Operation *source = shuffle ? shuffle.getValue().getDefiningOp() : nullptr;
      if (shuffle && shuffle.getMode() == gpu::ShuffleMode::XOR && op->getBlock() == &entry &&
          source && source->getBlock() == &entry && !matchPattern(source, m_Constant())) {
        shuffles = true;
        return WalkResult::advance();
      }
      if (op->getDialect() && isa<gpu::GPUDialect>(op->getDialect()) &&
          !isa<gpu::TerminatorOp>(op)) {
        op->emitError("'") << op->getName() << "' cannot run as a host loop"
                           << (isa<gpu::ShuffleOp>(op)
                                   ? " (only xor shuffles at the kernel's top level)"
                                   : "");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (communicating.wasInterrupted())
      return failure();

    OpBuilder b(launch);
    Location loc = launch.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    Value bounds[6] = {grid.x, grid.y, grid.z, block.x, block.y, block.z};
    IRMapping mapping;
    gpu::KernelDim3 blockIds = launch.getBlockIds(), threadIds = launch.getThreadIds();
    gpu::KernelDim3 gridArgs = launch.getGridSize(), blockArgs = launch.getBlockSize();
    Value ids[6] = {blockIds.x, blockIds.y, blockIds.z, threadIds.x, threadIds.y, threadIds.z};
    for (int i = 0; i < 3; ++i) {
      Value gridArg[3] = {gridArgs.x, gridArgs.y, gridArgs.z};
      Value blockArg[3] = {blockArgs.x, blockArgs.y, blockArgs.z};
      mapping.map(gridArg[i], bounds[i]);
      mapping.map(blockArg[i], bounds[3 + i]);
    }
    if (shuffles) {
      if (!matchPattern(block.y, m_One()) || !matchPattern(block.z, m_One()))
        return launch.emitError("a kernel with shuffles runs as host loops only with "
                                "one-dimensional blocks");
      emulateSegments(launch, b, mapping, bounds, ids);
      launch.erase();
      return success();
    }
    // Blocks outermost, then threads, x fastest within each.
    for (int i : {2, 1, 0, 5, 4, 3}) {
      auto loop = scf::ForOp::create(b, loc, zero, bounds[i], one);
      mapping.map(ids[i], loop.getInductionVar());
      b.setInsertionPoint(loop.getBody()->getTerminator());
    }
    for (Operation &op : entry.without_terminator())
      b.clone(op, mapping);
    launch.erase();
    return success();
  }

  /// The body in segments cut at its top-level shuffles, each a loop over
  /// the block's threads inside the loops over blocks.
  void emulateSegments(gpu::LaunchOp launch, OpBuilder &b, IRMapping &mapping,
                       Value bounds[6], Value ids[6]) {
    Location loc = launch.getLoc();
    Block &entry = launch.getBody().front();
    // Constants are the same in every thread: cloned once, before the loops.
    llvm::DenseMap<Operation *, int> segment;
    int current = 0;
    for (Operation &op : entry.without_terminator()) {
      if (isa<gpu::ShuffleOp>(op))
        ++current; // its result belongs to the segment after the cut
      if (matchPattern(&op, m_Constant()))
        b.clone(op, mapping);
      else
        segment[&op] = current;
    }
    int segments = current + 1;
    // Values used in a segment other than their own (a shuffle's operand
    // counts as used across the cut): one element per thread of the block.
    Value threads = bounds[3];
    llvm::MapVector<Value, Value> arrays; // value -> memref<?xT>
    for (Operation &op : entry.without_terminator()) {
      if (!segment.count(&op))
        continue;
      for (Value result : op.getResults()) {
        bool crosses = false;
        for (OpOperand &use : result.getUses()) {
          Operation *user = entry.findAncestorOpInBlock(*use.getOwner());
          crosses |= user && segment.count(user) &&
                     (segment[user] != segment[&op] || isa<gpu::ShuffleOp>(user));
        }
        if (crosses)
          arrays[result] = memref::AllocaOp::create(
              b, loc, MemRefType::get({ShapedType::kDynamic}, result.getType()),
              ValueRange{threads});
      }
    }
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    for (int i : {2, 1, 0}) {
      auto loop = scf::ForOp::create(b, loc, zero, bounds[i], one);
      mapping.map(ids[i], loop.getInductionVar());
      b.setInsertionPoint(loop.getBody()->getTerminator());
    }
    mapping.map(ids[4], zero);
    mapping.map(ids[5], zero);
    for (int k = 0; k < segments; ++k) {
      auto loop = scf::ForOp::create(b, loc, zero, threads, one);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(loop.getBody()->getTerminator());
      Value thread = loop.getInductionVar();
      mapping.map(ids[3], thread);
      IRMapping local = mapping;
      // Values from earlier segments: this thread's element.
      for (auto &[value, array] : arrays) {
        Operation *def = value.getDefiningOp();
        if (segment[def] < k)
          local.map(value, memref::LoadOp::create(b, loc, array, ValueRange{thread}));
      }
      for (Operation &op : entry.without_terminator()) {
        auto it = segment.find(&op);
        if (it == segment.end() || it->second != k)
          continue;
        if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op)) {
          // The partner's element: lane ^ offset (the width is the warp's).
          Value lane = arith::IndexCastOp::create(b, loc, b.getI32Type(), thread);
          Value partner = arith::XOrIOp::create(
              b, loc, lane, local.lookupOrDefault(shuffle.getOffset()));
          Value at = arith::IndexCastOp::create(b, loc, b.getIndexType(), partner);
          local.map(shuffle.getShuffleResult(),
                    memref::LoadOp::create(b, loc, arrays.lookup(shuffle.getValue()),
                                           ValueRange{at}));
          local.map(shuffle.getValid(), arith::ConstantIntOp::create(b, loc, 1, 1));
        } else {
          b.clone(op, local);
        }
        for (Value result : op.getResults())
          if (Value array = arrays.lookup(result))
            memref::StoreOp::create(b, loc, local.lookup(result), array, ValueRange{thread});
      }
    }
  }
};
} // namespace
