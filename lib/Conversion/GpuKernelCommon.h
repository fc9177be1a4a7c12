//===- GpuKernelCommon.h - what the CUDA kernel emitters share --*- C++ -*-===//
//
// Private to lib/Conversion (include/trc/Conversion/GpuKernels.h is the
// interface): launch geometry, the launch frame every kernel starts from,
// index arithmetic, cloning a linalg body, and the byte extents used to
// prove that buffers do not overlap.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_CONVERSION_GPUKERNELCOMMON_H
#define TRC_LIB_CONVERSION_GPUKERNELCOMMON_H

#include "trc/Conversion/GpuKernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <limits>

namespace trc::gpukernels {

inline constexpr int64_t kMaxThreads = 256; // threads per block
inline constexpr int64_t kWarp = 32;
inline constexpr int64_t kLanes = 4;        // points per thread on the vector path
inline constexpr const char *kKernelModule = "trc_kernels";

/// Constants, constant globals and views of them: recreated inside every
/// kernel that reads them (the host's copy of a constant is not in device
/// memory).
bool isSinkable(mlir::Operation *op);

/// A launch of `items` work items over blocks of up to kMaxThreads threads
/// (x only) in @trc_kernels; `b` is left inside the body where
/// `item` = block_id.x * threads + thread_id.x, guarded against the items
/// past the end. The caller sinks constants once the body is complete.
struct LaunchFrame {
  mlir::gpu::LaunchOp launch;
  mlir::Value item;
};

LaunchFrame buildLaunch(mlir::OpBuilder &b, mlir::Location loc, int64_t items,
                        llvm::StringRef kernelName, int64_t maxThreads = kMaxThreads);

/// `item` as indices of `extents` (row-major: the last varies fastest, so
/// the threads of a warp touch consecutive elements).
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder &b, mlir::Location loc,
                                           mlir::Value item,
                                           llvm::ArrayRef<int64_t> extents);

/// Clones `op`'s body with its block arguments bound to `args` (null for
/// unused ones) and linalg.index to `ivs`; returns the yielded values.
llvm::SmallVector<mlir::Value> cloneBody(mlir::OpBuilder &b, mlir::linalg::GenericOp op,
                                         llvm::ArrayRef<mlir::Value> args,
                                         llvm::ArrayRef<mlir::Value> ivs);

/// The bytes a memref value may touch: a root (a function argument, or
/// anything not understood) and a byte range in it. Views of the arena at
/// constant offsets get their exact range; other views conservatively
/// their source's.
struct Extent {
  mlir::Value root;
  int64_t begin = 0, end = std::numeric_limits<int64_t>::max();
  bool overlaps(const Extent &o) const {
    return root == o.root && begin < o.end && o.begin < end;
  }
};

Extent extentOf(mlir::Value memref);

} // namespace trc::gpukernels

#endif // TRC_LIB_CONVERSION_GPUKERNELCOMMON_H
