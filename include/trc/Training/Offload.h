//===- Offload.h - activation offloading of a training step -----*- C++ -*-===//
//
// What trc-offload-activations decides and does to @main_grad (the forward,
// then the backward, in one block; after trc-recompute when it runs).
//
// The activations it moves are the kept ones: the stash of the step as
// trc-recompute's analysis finds it (recompute::analyze on the function as
// it is now, so after full recomputation only the layers' inputs remain),
// restricted to values of the layers (layer l's own values and its input,
// the residual stream that layer l reads; not the prologue's, the head's or
// values outside the layer chain) of at least `minBytes` bytes that the
// step does not return. Each such value v of layer l:
//
//   offload   right after its last forward use (trc.offload: a copy to the
//             host pool starts);
//   wait      at the end of the forward of layer l+1 (the copy had one
//             layer of compute to overlap; v's device buffer is free after
//             it), at the end of the forward for the last layer;
//   prefetch  before the backward of layer l+H (H = the horizon), where the
//             backward of layer k starts at the first backward read of a
//             stash value of layer k; l+H past the last layer means the
//             start of the backward (the head's backward counts as one
//             layer); never after v's first backward use;
//   wait      right before its first backward use, which, like every later
//             backward use, reads the prefetched copy.
//
// A value that is a reshape of another offloaded value is not copied
// twice: the backward reads a reshape of its root's prefetched copy, made
// right after the root's prefetch wait (which moves before the earliest
// first use of either).
//
// Positions are indices of @main_grad's top-level ops before the rewrite.
// The module gets kPlanAttr (test-trc-print-offload prints it).
// Preconditions: `fn` has one block, its first result is the loss, no op is
// staged for pipelines (trc.stage).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TRAINING_OFFLOAD_H
#define TRC_TRAINING_OFFLOAD_H

#include "trc/Abi/AttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <string>
#include <vector>

namespace trc::offload {

// The module attribute holding the decisions (a dictionary) is
// abi::kOffloadPlanAttr (trc/Abi/AttrNames.h).

struct Options {
  int64_t horizon = 1;  // layers ahead of its backward a value is prefetched
  int64_t minBytes = 0; // smaller values stay on the device
};

/// One offloaded value and where its copies go.
struct OffloadedValue {
  mlir::Value value;
  int layer = 0;               // its layer (that of its last forward reader)
  int prefetchLayer = 0;       // the backward it is prefetched at (layers: the start)
  int64_t bytes = 0;
  int64_t defined = 0;         // position of its definition
  int64_t offloadBefore = 0;   // the offload goes before this position
  int64_t waitBefore = 0;      // the offload's wait
  int64_t prefetchBefore = 0;  // the prefetch
  int64_t firstUse = 0;        // the prefetch's wait: its first backward use
  llvm::SmallVector<mlir::Value> views; // reshapes of it the backward reads
};

struct Plan {
  Options options;
  int layers = 0;
  int64_t stashValues = 0;   // the step's kept activations, all of them
  int64_t stashBytes = 0;
  std::vector<OffloadedValue> values; // in program order of definition
  int64_t offloadedBytes = 0;
  std::vector<int64_t> layerBytes;    // offloaded bytes per layer
};

/// Finds what to offload in `fn` and where; fails with `error` when `fn`
/// has no layer structure or is staged for pipelines.
mlir::FailureOr<Plan> planOffload(mlir::func::FuncOp fn, const Options &options,
                                  std::string &error);

/// Inserts the copies of `plan` into its function (see the banner).
void rewrite(mlir::func::FuncOp fn, const Plan &plan);

/// The decisions as kPlanAttr's dictionary.
mlir::DictionaryAttr describe(mlir::Builder &b, const Plan &plan);

} // namespace trc::offload

#endif // TRC_TRAINING_OFFLOAD_H
