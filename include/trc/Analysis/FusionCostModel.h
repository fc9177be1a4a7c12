//===- FusionCostModel.h - device memory traffic of kernels -----*- C++ -*-===//
//
// The cost model trc-fuse decides with and trc-print-fusion-summary reports:
// every op that is not free runs as a kernel that reads its operands from
// device memory and writes its results there; a fused group reads its inputs
// once and writes only the values used outside it. Fusion saves the bytes of
// the intermediates that no longer go through memory; duplicating a producer
// into a consumer group (recomputation) costs its arithmetic, converted to
// bytes at the device's bytes-per-flop ratio.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ANALYSIS_FUSIONCOSTMODEL_H
#define TRC_ANALYSIS_FUSIONCOSTMODEL_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace trc::fusion {

/// How an op takes part in fusion.
enum class OpClass {
  /// No kernel and no traffic: constants, get_parameter, reshape (a view of
  /// a contiguous tensor), func.call (its callee is measured on its own).
  Free,
  /// broadcast_in_dim and iota: recomputed in every group that reads them
  /// (a group reads the broadcast's operand, never its larger result).
  Broadcast,
  /// Elementwise: unary and binary ops, compare, select, convert, gelu.
  Elementwise,
  /// trc.reduce and the reducing composites (softmax, log_softmax,
  /// layer_norm, cross_entropy).
  Reduction,
  /// trc.dot_general: a library GEMM that may take an epilogue.
  Matmul,
  /// Anything else (transpose, slice, gather, concatenate...): a kernel of
  /// its own that does not fuse.
  Opaque,
};

OpClass classify(mlir::Operation *op);

/// Whether `op` runs as a kernel when it is not fused (every op but the
/// Free ones).
bool isKernel(mlir::Operation *op);

/// Bytes of a statically shaped tensor type (0 for anything else). Element
/// sizes round up to whole bytes (i1 takes one).
int64_t tensorBytes(mlir::Type type);

/// A splat constant: a kernel takes it as an immediate, not from memory.
bool isImmediate(mlir::Value value);

/// Bytes a kernel reads for `value` as an operand: 0 for immediates.
int64_t readBytes(mlir::Value value);

/// Bytes `op` moves as a kernel of its own: operands read plus results
/// written. 0 for Free ops.
int64_t unfusedBytes(mlir::Operation *op);

/// Bytes a kernel that reads `inputs` and writes `outputs` moves (each
/// distinct input counted once).
int64_t kernelBytes(llvm::ArrayRef<mlir::Value> inputs,
                    llvm::ArrayRef<mlir::Value> outputs);

/// Arithmetic per result element: 1 for add/mul/compare/select..., 4 for
/// div and square roots, 16 for transcendental functions, 20 for pow, 24 for
/// gelu; 0 for broadcasts and iota. Reductions and products are never
/// recomputed (-1).
int64_t flopsPerElement(mlir::Operation *op);

struct CostParameters {
  /// Device memory bytes one flop of recomputation is worth. Default: an
  /// H100 (about 60 TFLOP/s of fp32 against 3.3 TB/s: 0.05 bytes per flop).
  double bytesPerFlop = 0.05;
};

/// The byte-equivalent cost of computing `ops` once more (their result
/// elements times their flops per element, times bytesPerFlop); infinite
/// when one of them may not be recomputed.
double recomputeCost(llvm::ArrayRef<mlir::Operation *> ops,
                     const CostParameters &params);

/// Whether duplicating a producer chain into a consumer is worth it: the
/// bytes it saves exceed the recomputation it costs.
bool duplicationPays(int64_t bytesSaved, llvm::ArrayRef<mlir::Operation *> chain,
                     const CostParameters &params);

/// Kernels and bytes of one function body.
struct KernelTotals {
  int64_t kernels = 0;
  int64_t bytes = 0;
};

/// Measures the top-level ops of `block`: a trc.fusion is one kernel that
/// moves its operands and results; any other kernel op moves
/// unfusedBytes(op).
KernelTotals measure(mlir::Block &block);

} // namespace trc::fusion

#endif // TRC_ANALYSIS_FUSIONCOSTMODEL_H
