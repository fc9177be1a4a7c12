//===- FoldTransposesIntoMatmul.cpp - trc-fold-transposes-into-matmul ------===//
//
// A transpose materialized into a temporary buffer only for matrix products
// to read (a weight W^T in the forward, dY^T in a weight gradient) becomes a
// strided view of its source (memref.reinterpret_cast), which
// trc-matmul-to-runtime-call then passes to BLAS with its transpose flag:
//
//   linalg.transpose ins(%w : memref<768x256xf32>) outs(%t : memref<256x768xf32>)
//   %r = memref.reshape %t(%shape) : (...) -> memref<1x256x768xf32>
//   linalg.batch_matmul ins(%x, %r : ...) outs(...)
//   // becomes
//   %r = memref.reinterpret_cast %w to offset: [0], sizes: [1, 256, 768],
//        strides: [196608, 1, 256]
//   linalg.batch_matmul ins(%x, %r : ...) outs(...)
//
// Preconditions: bufferized IR, before trc-plan-memory (the temporary is a
// memref.alloc). Applies when the temporary's only other users are views
// (memref.reshape, expand_shape, collapse_shape) read only by
// linalg.batch_matmul inputs in the same block, the transposed-then-reshaped
// shape is a strided view of the source (numpy's view rule) whose inner two
// dimensions have one of stride 1, and nothing writes the source's buffer
// between the transpose and the last product.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace trc {
#define GEN_PASS_DEF_FOLDTRANSPOSESINTOMATMUL
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

/// The strides of `newShape` viewing memory laid out as (`shape`,
/// `strides`) without a copy, or nullopt (PyTorch's computeStride).
std::optional<SmallVector<int64_t>> viewStrides(ArrayRef<int64_t> shape,
                                                ArrayRef<int64_t> strides,
                                                ArrayRef<int64_t> newShape) {
  SmallVector<int64_t> result(newShape.size(), 0);
  if (shape.empty())
    return std::nullopt;
  int64_t viewD = int64_t(newShape.size()) - 1;
  int64_t chunkBase = strides.back(), tensorNumel = 1, viewNumel = 1;
  for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
    tensorNumel *= shape[d];
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensorNumel * chunkBase)) {
      while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1)) {
        result[viewD] = viewNumel * chunkBase;
        viewNumel *= newShape[viewD];
        --viewD;
      }
      if (viewNumel != tensorNumel)
        return std::nullopt;
      if (d > 0) {
        chunkBase = strides[d - 1];
        tensorNumel = 1;
        viewNumel = 1;
      }
    }
  }
  if (viewD != -1)
    return std::nullopt;
  return result;
}

/// The buffer a memref value views (through view-like ops).
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// True when some op strictly between `from` and `to` (same block) may
/// write the buffer `root`.
bool mayWriteBetween(Operation *from, Operation *to, Value root) {
  bool writes = false;
  for (Operation *op = from->getNextNode(); op && op != to && !writes;
       op = op->getNextNode()) {
    op->walk([&](Operation *inner) {
      auto effects = dyn_cast<MemoryEffectOpInterface>(inner);
      if (!effects) {
        if (!inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
          writes = true;
        return;
      }
      SmallVector<MemoryEffects::EffectInstance> list;
      effects.getEffects(list);
      for (auto &e : list) {
        if (!isa<MemoryEffects::Write>(e.getEffect()))
          continue;
        Value target = e.getValue();
        if (!target || rootOf(target) == root)
          writes = true;
      }
    });
  }
  return writes;
}

struct FoldTransposesIntoMatmul
    : trc::impl::FoldTransposesIntoMatmulBase<FoldTransposesIntoMatmul> {
  void runOnOperation() override {
    SmallVector<linalg::TransposeOp> transposes;
    getOperation()->walk([&](linalg::TransposeOp op) { transposes.push_back(op); });
    for (auto op : transposes)
      fold(op);
  }

  void fold(linalg::TransposeOp op) {
    if (!op.hasPureBufferSemantics())
      return;
    Value src = op.getInput(), buf = op.getInit();
    auto alloc = buf.getDefiningOp<memref::AllocOp>();
    auto srcType = cast<MemRefType>(src.getType());
    SmallVector<int64_t> srcStrides;
    int64_t srcOffset;
    if (!alloc || !srcType.hasStaticShape() ||
        failed(srcType.getStridesAndOffset(srcStrides, srcOffset)) ||
        ShapedType::isDynamic(srcOffset) || llvm::any_of(srcStrides, ShapedType::isDynamic))
      return;
    // The transposed view of the source.
    ArrayRef<int64_t> perm = op.getPermutation();
    SmallVector<int64_t> shape, strides;
    for (int64_t p : perm) {
      shape.push_back(srcType.getDimSize(p));
      strides.push_back(srcStrides[p]);
    }
    // Each reader: a view of the buffer (or the buffer) that only products read.
    SmallVector<Value> views;
    Operation *last = op;
    for (Operation *user : buf.getUsers()) {
      if (user == op)
        continue;
      if (user->getBlock() != op->getBlock() || !op->isBeforeInBlock(user))
        return;
      Value view;
      if (isa<memref::ReshapeOp, memref::ExpandShapeOp, memref::CollapseShapeOp>(user) &&
          user->getOperand(0) == buf)
        view = user->getResult(0);
      else if (isa<linalg::BatchMatmulOp>(user))
        view = buf;
      else
        return;
      for (OpOperand &use : view.getUses()) {
        auto mm = dyn_cast<linalg::BatchMatmulOp>(use.getOwner());
        if (!mm || !mm.isDpsInput(&use) || mm->getBlock() != op->getBlock())
          return;
        if (last->isBeforeInBlock(mm))
          last = mm;
      }
      if (view != buf && !llvm::is_contained(views, view))
        views.push_back(view);
    }
    bool direct = llvm::any_of(buf.getUsers(), [](Operation *u) {
      return isa<linalg::BatchMatmulOp>(u);
    });
    if (direct || views.empty() || mayWriteBetween(op, last, rootOf(src)))
      return;

    // Each view as a reinterpret_cast of the source, or nothing at all.
    SmallVector<std::pair<Value, SmallVector<int64_t>>> plans;
    for (Value view : views) {
      auto type = cast<MemRefType>(view.getType());
      if (!type.hasStaticShape() || type.getRank() != 3)
        return;
      auto s = viewStrides(shape, strides, type.getShape());
      if (!s || ((*s)[2] != 1 && (*s)[1] != 1))
        return;
      plans.push_back({view, *s});
    }
    for (auto &[view, s] : plans) {
      auto type = cast<MemRefType>(view.getType());
      Operation *def = view.getDefiningOp();
      OpBuilder b(def);
      auto layout = StridedLayoutAttr::get(b.getContext(), srcOffset, s);
      auto castType = MemRefType::get(type.getShape(), type.getElementType(), layout,
                                      srcType.getMemorySpace());
      auto cast = b.create<memref::ReinterpretCastOp>(def->getLoc(), castType, src, srcOffset,
                                                      type.getShape(), s);
      view.replaceAllUsesWith(cast.getResult());
      def->erase();
    }
    op.erase();
    if (alloc->use_empty())
      alloc.erase();
  }
};
} // namespace
