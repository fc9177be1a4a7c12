//===- AttentionToGpu.cpp - trc-attention-to-gpu ----------------------------===//
//
// Each trc.attention and trc.attention_grad the CUDA backend's attention
// kernels take (static shapes; f32, f16 or bf16; head dims at most
// kMaxAttentionHeadDim) becomes those kernels (lib/Conversion/
// GpuAttentionKernel.cpp) between read-only views of its operands and fresh
// buffers for its results, as trc-collectives-to-runtime-call does with its
// calls:
//
//   %q = bufferization.to_buffer %qt read_only     (k, v, mask alike)
//   %o = memref.alloc()
//   gpu.launch ... { the forward kernel }
//   %r = bufferization.to_tensor %o restrict writable
//
// so one-shot bufferization and the memory plan treat the results as any
// temporary; the gradient's log-sum-exp and delta live in one more buffer.
// The ops left are trc-decompose-composites'. A mask proven to hide every
// later key (trc/Parallel/CausalMask.h) with a fill of at most -1e4 (whose
// exp underflows to 0 in f32 beside any visible score, as the decomposed
// softmax computes it) lets the kernels skip those keys.
// Preconditions: trc IR before bufferization (the CUDA pipeline runs it
// before trc-decompose-composites).
//
//===----------------------------------------------------------------------===//
#include "trc/Conversion/Bufferization.h"
#include "trc/Conversion/GpuKernels.h"
#include "trc/Dialect/Trc.h"
#include "trc/Parallel/CausalMask.h"
#include "trc/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace trc {
#define GEN_PASS_DEF_ATTENTIONTOGPU
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using trc::gpukernels::AttentionKernelSpec;

namespace {

/// The fill the causal skip allows: hidden scores weigh exp(fill - max),
/// 0 in f32 once max - fill exceeds ~104.
constexpr double kSkippableFill = -1e4;

/// The kernels' description of `op`, or nothing when they do not take it.
template <typename OpT> std::optional<AttentionKernelSpec> specOf(OpT op) {
  auto q = cast<RankedTensorType>(op.getQ().getType());
  auto k = cast<RankedTensorType>(op.getK().getType());
  auto v = cast<RankedTensorType>(op.getV().getType());
  Type element = q.getElementType();
  if (!q.hasStaticShape() || !k.hasStaticShape() || !v.hasStaticShape() ||
      !(element.isF32() || element.isF16() || element.isBF16()) ||
      k.getElementType() != element || v.getElementType() != element)
    return std::nullopt;
  if (op.getMask() && !cast<RankedTensorType>(op.getMask().getType()).hasStaticShape())
    return std::nullopt;
  int64_t rank = q.getRank();
  AttentionKernelSpec spec;
  spec.batchDims = llvm::to_vector(q.getShape().drop_back(2));
  for (int64_t d : spec.batchDims)
    spec.batch *= d;
  spec.queries = q.getDimSize(rank - 2);
  spec.keys = k.getDimSize(rank - 2);
  spec.headDim = q.getDimSize(rank - 1);
  spec.valueDim = v.getDimSize(rank - 1);
  if (spec.headDim > trc::gpukernels::kMaxAttentionHeadDim ||
      spec.valueDim > trc::gpukernels::kMaxAttentionHeadDim || spec.batch * spec.queries == 0 ||
      spec.keys == 0 || spec.headDim == 0 || spec.valueDim == 0)
    return std::nullopt;
  spec.scale = op.getScale().convertToDouble();
  spec.fill = op.getMaskFill().convertToDouble();
  spec.fillWhereTrue = op.getFillWhereTrue();
  auto func = op->template getParentOfType<func::FuncOp>();
  spec.causal = op.getMask() && spec.queries == spec.keys && spec.fill <= kSkippableFill &&
                trc::parallel::hidesLaterChunks(func, op.getMask(), spec.fillWhereTrue, 1);
  return spec;
}

struct AttentionToGpu : trc::impl::AttentionToGpuBase<AttentionToGpu> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<trc::AttentionOp, trc::AttentionGradOp>(op))
        ops.push_back(op);
    });
    int counter = 0;
    for (Operation *op : ops) {
      std::string name = (func.getSymName() + "_attention" + Twine(counter)).str();
      if (auto fwd = dyn_cast<trc::AttentionOp>(op)) {
        if (std::optional<AttentionKernelSpec> spec = specOf(fwd)) {
          forward(fwd, *spec, name);
          ++counter;
        }
      } else if (std::optional<AttentionKernelSpec> spec = specOf(cast<trc::AttentionGradOp>(op))) {
        backward(cast<trc::AttentionGradOp>(op), *spec, name);
        ++counter;
      }
    }
  }

  /// A read-only view of an operand, null for an absent mask.
  static Value bufferOf(OpBuilder &b, Location loc, Value tensor) {
    return tensor ? trc::readOnlyBuffer(b, loc, tensor) : Value();
  }

  void forward(trc::AttentionOp op, const AttentionKernelSpec &spec, StringRef name) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value out = trc::freshBuffer(b, loc, op.getType());
    trc::gpukernels::emitAttentionForward(
        b, loc, spec, bufferOf(b, loc, op.getQ()), bufferOf(b, loc, op.getK()),
        bufferOf(b, loc, op.getV()), bufferOf(b, loc, op.getMask()), out, name);
    b.setInsertionPointAfter(op);
    op.replaceAllUsesWith(trc::bufferAsTensor(b, loc, out, op.getType()));
    op.erase();
  }

  void backward(trc::AttentionGradOp op, const AttentionKernelSpec &spec, StringRef name) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<Value> grads;
    for (Value result : op.getResults())
      grads.push_back(trc::freshBuffer(b, loc, result.getType()));
    Value stats = memref::AllocOp::create(
        b, loc, MemRefType::get({2, spec.batch * spec.queries}, b.getF32Type()));
    trc::gpukernels::emitAttentionBackward(
        b, loc, spec, bufferOf(b, loc, op.getQ()), bufferOf(b, loc, op.getK()),
        bufferOf(b, loc, op.getV()), bufferOf(b, loc, op.getResultGrad()),
        bufferOf(b, loc, op.getMask()), grads[0], grads[1], grads[2], stats, name);
    b.setInsertionPointAfter(op);
    for (auto [result, buffer] : llvm::zip(op.getResults(), grads))
      result.replaceAllUsesWith(trc::bufferAsTensor(b, loc, buffer, result.getType()));
    op.erase();
  }
};

} // namespace
