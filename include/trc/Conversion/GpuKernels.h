//===- GpuKernels.h - CUDA kernels from linalg on buffers -------*- C++ -*-===//
//
// The three kernel emitters of trc-linalg-to-gpu (passes/Conversion/
// LinalgToGpu.cpp), each a gpu.launch in @trc_kernels built at the builder's
// insertion point over blocks of up to 256 threads (x only):
//   generic   one linalg.generic: its parallel iteration space linearized,
//             one point per thread (4 contiguous points with 16-byte vector
//             accesses when the layouts allow), reductions as a sequential
//             loop with the accumulators in registers
//             (lib/Conversion/GpuGenericKernel.cpp);
//   loop nest a host scf.for nest (a bufferized scatter_add), its innermost
//             loop spread over threads when provably parallel, else one
//             thread (lib/Conversion/GpuLoopNestKernel.cpp);
//   rows      a reduction over trailing dimensions and the ops after it on
//             the same rows, a warp per row (lanes stride the row, xor
//             shuffles combine) where every reduction has a combiner with a
//             neutral element on 32-bit values, else a thread per row
//             (lib/Conversion/GpuRowKernel.cpp);
//   attention softmax(scale q k^T, masked) v and its gradient without the
//             scores in memory: a thread per query row (forward, dq) or key
//             row (dk, dv) with an online softmax over the other side's rows
//             (lib/Conversion/GpuAttentionKernel.cpp; built on buffers before
//             bufferization by trc-attention-to-gpu).
// Preconditions: linalg ops on buffers with static shapes, strides and
// offsets; buffers at least 16-byte aligned (slots and the arena are
// 64-byte aligned, the memory plan's offsets multiples of 64). Constants and
// constant globals the kernel reads are sunk into it.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_CONVERSION_GPUKERNELS_H
#define TRC_CONVERSION_GPUKERNELS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace trc::gpukernels {

/// The one op that folds each value into `op`'s first output (its payload
/// is `yield combiner(acc, f(inputs))`, `matchReduction`), when that op has
/// a neutral element (`arith::getNeutralElement`: addf, maximumf, ...),
/// which is returned in `neutral`; otherwise null. Reductions with such a
/// combiner can be computed in pieces and the pieces combined.
mlir::Operation *soleCombiner(mlir::linalg::GenericOp op, mlir::TypedAttr &neutral);

/// A copy of `combiner` (soleCombiner's) folding `value` into `carried`: its
/// operand `acc` (the op's output block argument) becomes `carried`, the
/// other `value`. Returns the folded value.
mlir::Value cloneCombiner(mlir::OpBuilder &b, mlir::Operation *combiner, mlir::Value acc,
                          mlir::Value carried, mlir::Value value);

/// Static strides and offset of a memref, or failure.
mlir::LogicalResult staticLayout(mlir::MemRefType type,
                                 llvm::SmallVectorImpl<int64_t> &strides, int64_t &offset);

/// Builds the launch of one generic op on buffers before `op` (which the
/// caller erases). `fills[i]`, when set, is the value the i-th output was
/// filled with just before the op (a reduction's identity): the kernel starts
/// from it instead of reading the output.
mlir::LogicalResult emitGenericKernel(mlir::linalg::GenericOp op, mlir::OpBuilder &b,
                                      llvm::SmallVector<mlir::Value> fills,
                                      llvm::StringRef kernelName);

/// Builds the launch of a host loop nest before it (the caller erases the
/// nest). When its innermost loop is provably parallel — every store is in
/// it, and every access to a stored buffer indexes its last dimension with
/// that loop's induction variable and nothing else reaches those bytes —
/// each thread runs the outer loops for one iteration of it (deterministic:
/// each element is updated in the host order), and `parallel` is set;
/// otherwise one thread runs it all.
mlir::LogicalResult emitLoopNestKernel(mlir::scf::ForOp nest, mlir::OpBuilder &b,
                                       llvm::StringRef kernelName, bool &parallel);

/// Row kernels. A reduction over the trailing dimensions of a space S (k row
/// dimensions, then m reduced ones) and the ops after it on the same rows
/// form one kernel, a warp (or a thread) per row (layer norm, softmax: what
/// trc-fuse's reduction fusions group). What an op of the group writes is never read
/// back from memory inside it: reductions and row ops (over S[:k]) leave a
/// scalar per row in a register, elementwise ops over S are recomputed
/// wherever they are read (inside a reduction's loop, or in the final loop
/// that stores them), and only results read after the group are stored, at
/// the end of the thread. So every buffer the group writes must be
/// accessed inside it only row-locally (the identity map over S, or the
/// row prefix), and no other buffer it reads may overlap one it writes.
enum class RowRole { None, Full, Reduction, Row };

struct RowGroup {
  llvm::SmallVector<int64_t> space; // S
  unsigned rows = 0;                // k
  llvm::SmallVector<mlir::linalg::GenericOp> ops;
  llvm::SmallVector<RowRole> roles;
  // source[i][j]: the group op whose result op i's operand j reads, or -1
  // for the buffer's contents before the group.
  llvm::SmallVector<llvm::SmallVector<int>> source;
  llvm::SmallVector<bool> stores; // op i's result is read after the group
};

/// The group starting at `ops[first]` (a reduction over trailing
/// dimensions, or elementwise ops over its space right before one, which
/// join only with it and only where a warp shares each row), extended over
/// the next ops while they qualify (only pure
/// host code between them). `fills` (as for emitRowKernel) names the
/// reductions' outputs that start from a folded fill: those are written,
/// never read, so they may reuse memory an earlier op of the group wrote
/// (the memory plan gives a second reduction's result the first's place).
RowGroup formRowGroup(
    llvm::ArrayRef<mlir::linalg::GenericOp> ops, size_t first,
    const llvm::DenseMap<mlir::Operation *, llvm::SmallVector<mlir::Value>> *fills = nullptr);

/// Marks which results of `g` are read after it: the last version of a
/// buffer the caller sees (not an arena temporary) or that an op after the
/// group uses.
void markStores(RowGroup &g);

/// Whether a warp can share each row of `g`: every reduction folds its
/// values with one combiner that has a neutral element (so lanes reduce
/// pieces and a butterfly of xor shuffles combines them), on 32-bit values
/// (one shuffle each), and the rows are long enough. emitRowKernel then
/// gives each row a warp; a lone reduction is worth a row kernel for it.
bool warpSharesRows(RowGroup &g);

/// Builds the launch of a group (marked by markStores) before its last op;
/// the caller erases the group's ops. `fills` maps a reduction to the values
/// its outputs start from, as for emitGenericKernel.
mlir::LogicalResult
emitRowKernel(RowGroup &g, mlir::OpBuilder &b,
              const llvm::DenseMap<mlir::Operation *, llvm::SmallVector<mlir::Value>> &fills,
              llvm::StringRef kernelName);

/// Moves the constants, constant globals and views of them that `launch`
/// reads into it (the host's copy of a constant is not in device memory):
/// for launches built before bufferization made them globals.
mlir::LogicalResult sinkConstants(mlir::gpu::LaunchOp launch);

/// One trc.attention's or trc.attention_grad's shapes and attributes (see
/// dialects/Trc/TrcAttention.td): `batch` is the product of the batch dims
/// (`batchDims`), and the mask, when there is one, has the scores' rank with
/// each dim the scores' or 1. `causal`: the mask provably hides every key
/// after its query (square scores), with a fill whose exp underflows to 0,
/// so the kernels skip those keys.
struct AttentionKernelSpec {
  llvm::SmallVector<int64_t> batchDims;
  int64_t batch = 1, queries = 0, keys = 0, headDim = 0, valueDim = 0;
  double scale = 1.0, fill = 0.0;
  bool fillWhereTrue = true, causal = false;
};

/// The largest head dim the attention kernels take: a thread keeps its rows
/// (and accumulators) in registers.
inline constexpr int64_t kMaxAttentionHeadDim = 128;

/// The forward kernel, built at `b`'s insertion point: `out` [batch..., Tq,
/// Dv] from `q`, `k`, `v` and `mask` (null without one); buffers with
/// identity layouts. A thread per query row keeps the row's running max,
/// sum and Dv outputs (an online softmax, FlashAttention's) while it reads
/// the key and value rows in turn.
void emitAttentionForward(mlir::OpBuilder &b, mlir::Location loc,
                          const AttentionKernelSpec &spec, mlir::Value q, mlir::Value k,
                          mlir::Value v, mlir::Value mask, mlir::Value out,
                          llvm::StringRef kernelName);

/// The gradient's two kernels: a thread per query row recomputes its
/// softmax statistics (log-sum-exp and sum(dp p), FlashAttention-2's
/// delta) into `stats` ([2, batch * Tq] f32) and accumulates dq; then a
/// thread per key row accumulates dk and dv from them. `grad` is the
/// result's gradient.
void emitAttentionBackward(mlir::OpBuilder &b, mlir::Location loc,
                           const AttentionKernelSpec &spec, mlir::Value q, mlir::Value k,
                           mlir::Value v, mlir::Value grad, mlir::Value mask, mlir::Value dq,
                           mlir::Value dk, mlir::Value dv, mlir::Value stats,
                           llvm::StringRef kernelName);

} // namespace trc::gpukernels

#endif // TRC_CONVERSION_GPUKERNELS_H
