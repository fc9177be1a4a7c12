//===- MemoryPlan.h - the static memory plan of a step ----------*- C++ -*-===//
//
// One data structure for where every temporary buffer of a bufferized
// function lives: an offset into one arena, chosen from liveness. Host
// copies of offloaded activations (allocations marked kHostPoolAttr by
// trc-offload-to-runtime-call) live in a second arena in host memory,
// planned the same way; every other allocation is in the device arena.
//
// Invariants (checked by `verify()`, for each arena):
//  * every allocation's offset is a multiple of `kAlignment`;
//  * two allocations whose live ranges [first, last] intersect do not
//    overlap in [offset, offset + size);
//  * arenaBytes >= max(offset + size) and lowerBoundBytes <= arenaBytes
//    <= noReuseBytes, where lowerBoundBytes is the most bytes live at once
//    and noReuseBytes the sum of all (aligned) sizes.
// Positions are indices of the function's top-level operations.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ANALYSIS_MEMORYPLAN_H
#define TRC_ANALYSIS_MEMORYPLAN_H

#include "trc/Abi/AttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trc {

/// The attribute marking a memref.alloc that belongs to the host arena, and
/// the module attribute trc-plan-memory sets to the host arena's bytes (only
/// when there is one) (trc/Abi/AttrNames.h).
using abi::kHostArenaBytesAttr;
using abi::kHostPoolAttr;

struct Allocation {
  mlir::Operation *op = nullptr; // the memref.alloc
  int64_t bytes = 0;             // aligned size
  int64_t first = 0, last = 0;   // live range, inclusive
  int64_t offset = -1;
};

struct MemoryPlan {
  static constexpr int64_t kAlignment = 64;

  std::vector<Allocation> allocations; // the device arena, in program order
  int64_t arenaBytes = 0;
  int64_t lowerBoundBytes = 0;
  int64_t noReuseBytes = 0;
  // The host arena (kHostPoolAttr allocations), in program order.
  std::vector<Allocation> hostAllocations;
  int64_t hostArenaBytes = 0;
  int64_t hostLowerBoundBytes = 0;
  int64_t hostNoReuseBytes = 0;

  /// Liveness and best-fit offsets for every memref.alloc at the top level
  /// of `func` (greedy by size: largest first, lowest free offset), each in
  /// its arena.
  static MemoryPlan compute(mlir::func::FuncOp func);

  /// Arena bytes not needed by the most-live point: 1 - lowerBound/arena.
  double fragmentation() const {
    return arenaBytes ? 1.0 - double(lowerBoundBytes) / double(arenaBytes) : 0.0;
  }
  /// An empty string, or the first violated invariant.
  std::string verify() const;
  void print(llvm::raw_ostream &os) const;
};

} // namespace trc

#endif // TRC_ANALYSIS_MEMORYPLAN_H
