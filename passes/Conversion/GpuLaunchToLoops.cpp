//===- GpuLaunchToLoops.cpp - trc-gpu-launch-to-loops ----------------------===//
//
// gpu.launch -> sequential scf.for loops over its blocks and threads on the
// host (see Passes.td): the CUDA backend's kernels, run by the CPU backend
// to test them without a GPU. Precondition: kernels whose threads do not
// communicate (no barriers, shuffles or workgroup memory), which is every
// kernel trc-linalg-to-gpu makes; others are an error.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

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
    WalkResult communicating = launch.getBody().walk([](Operation *op) {
      if (op->getDialect() && isa<gpu::GPUDialect>(op->getDialect()) &&
          !isa<gpu::TerminatorOp>(op)) {
        op->emitError("'") << op->getName() << "' cannot run as a host loop";
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
    // Blocks outermost, then threads, x fastest within each.
    for (int i : {2, 1, 0, 5, 4, 3}) {
      auto loop = scf::ForOp::create(b, loc, zero, bounds[i], one);
      mapping.map(ids[i], loop.getInductionVar());
      b.setInsertionPoint(loop.getBody()->getTerminator());
    }
    for (Operation &op : launch.getBody().front().without_terminator())
      b.clone(op, mapping);
    launch.erase();
    return success();
  }
};
} // namespace
