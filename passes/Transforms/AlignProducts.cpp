//===- AlignProducts.cpp - trc-align-products -------------------------------===//
//
// Pads the misaligned innermost dimensions of matrix products (see
// Passes.td): cuBLASLt's tensor-core kernels for sm_80/sm_90 need 16-byte
// leading dimensions, which a row-major matrix's innermost size is. Each
// dim to pad is rounded up to the alignment; the dims a product pairs
// (batch with batch, contracting with contracting) are padded alike, so
// the padded product's result holds the original one in its low corner,
// which a slice takes back. Preconditions: static shapes, trc ops (before
// trc-lower-to-linalg).
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "trc/Analysis/ElementBytes.h"
#include "trc/Dialect/Trc.h"
#include "trc/Training/Vjp.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace trc {
#define GEN_PASS_DEF_ALIGNPRODUCTS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;

namespace {

/// cuBLASLt's requirement on a leading dimension, in bytes.
constexpr int64_t kLeadingDimBytes = 16;

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

int64_t roundUp(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

/// Where each dim of one operand goes in the product.
enum class Role { Batch, Contracting, Free };

struct Operand {
  RankedTensorType type;
  SmallVector<Role> roles;
  SmallVector<int64_t> partner; // the other operand's dim for batch/contracting, else -1
  SmallVector<int64_t> padded;  // the padded sizes
};

Operand describe(Value v, ArrayRef<int64_t> batch, ArrayRef<int64_t> contracting,
                 ArrayRef<int64_t> otherBatch, ArrayRef<int64_t> otherContracting) {
  Operand o{typeOf(v), {}, {}, {}};
  for (int64_t d = 0; d < o.type.getRank(); ++d) {
    o.roles.push_back(Role::Free);
    o.partner.push_back(-1);
    o.padded.push_back(o.type.getDimSize(d));
  }
  for (auto [i, d] : llvm::enumerate(batch)) {
    o.roles[d] = Role::Batch;
    o.partner[d] = otherBatch[i];
  }
  for (auto [i, d] : llvm::enumerate(contracting)) {
    o.roles[d] = Role::Contracting;
    o.partner[d] = otherContracting[i];
  }
  return o;
}

struct AlignProducts : trc::impl::AlignProductsBase<AlignProducts> {
  using AlignProductsBase::AlignProductsBase;

  void runOnOperation() override {
    SmallVector<DotGeneralOp> products;
    getOperation().walk([&](DotGeneralOp dot) { products.push_back(dot); });
    for (DotGeneralOp dot : products)
      align(dot);
  }

  /// Pads `dim` of `o` (and its partner in `other`) to the alignment.
  void pad(Operand &o, Operand &other, int64_t dim, int64_t align) {
    o.padded[dim] = roundUp(o.type.getDimSize(dim), align);
    if (o.partner[dim] >= 0)
      other.padded[o.partner[dim]] = o.padded[dim];
  }

  bool misaligned(int64_t size, int64_t align) const {
    return size >= minSize && size % align != 0;
  }

  void align(DotGeneralOp dot) {
    auto resultType = typeOf(dot.getResult());
    Type element = resultType.getElementType();
    if (!isa<FloatType>(element) || !resultType.hasStaticShape())
      return;
    const int64_t align = kLeadingDimBytes / int64_t(elementBytes(element));
    Operand lhs = describe(dot.getLhs(), dot.getLhsBatchingDims(), dot.getLhsContractingDims(),
                           dot.getRhsBatchingDims(), dot.getRhsContractingDims());
    Operand rhs = describe(dot.getRhs(), dot.getRhsBatchingDims(), dot.getRhsContractingDims(),
                           dot.getLhsBatchingDims(), dot.getLhsContractingDims());
    if (!lhs.type.hasStaticShape() || !rhs.type.hasStaticShape() || lhs.type.getRank() == 0 ||
        rhs.type.getRank() == 0)
      return;
    // Each operand's innermost dim.
    if (int64_t d = lhs.type.getRank() - 1; misaligned(lhs.type.getDimSize(d), align))
      pad(lhs, rhs, d, align);
    if (int64_t d = rhs.type.getRank() - 1; misaligned(rhs.type.getDimSize(d), align))
      pad(rhs, lhs, d, align);
    // The result's innermost dim: rhs's last free dim, else lhs's, else
    // the last batch dim.
    if (misaligned(resultType.getDimSize(resultType.getRank() - 1), align)) {
      auto lastFree = [](const Operand &o) -> int64_t {
        for (int64_t d = int64_t(o.roles.size()) - 1; d >= 0; --d)
          if (o.roles[d] == Role::Free)
            return d;
        return -1;
      };
      if (int64_t d = lastFree(rhs); d >= 0)
        pad(rhs, lhs, d, align);
      else if (int64_t d = lastFree(lhs); d >= 0)
        pad(lhs, rhs, d, align);
      else
        pad(lhs, rhs, dot.getLhsBatchingDims().back(), align);
    }
    auto changed = [](const Operand &o) {
      return llvm::to_vector(o.type.getShape()) != o.padded;
    };
    if (!changed(lhs) && !changed(rhs))
      return;

    OpBuilder b(dot);
    Location loc = dot.getLoc();
    autodiff::VjpBuilder build(b, loc);
    auto padded = [&](Value v, const Operand &o) {
      SmallVector<int64_t> low(o.padded.size(), 0), high;
      for (auto [size, to] : llvm::zip(o.type.getShape(), o.padded))
        high.push_back(to - size);
      return build.padZeros(v, low, high);
    };
    // The result's dims: batch (lhs order), lhs free, rhs free.
    SmallVector<int64_t> shape;
    for (int64_t d : dot.getLhsBatchingDims())
      shape.push_back(lhs.padded[d]);
    for (const Operand *o : {&lhs, &rhs})
      for (auto [d, role] : llvm::enumerate(o->roles))
        if (role == Role::Free)
          shape.push_back(o->padded[d]);
    Value lhsPadded = padded(dot.getLhs(), lhs), rhsPadded = padded(dot.getRhs(), rhs);
    auto wide = b.create<DotGeneralOp>(
        loc, resultType.clone(shape), lhsPadded, rhsPadded,
        dot.getLhsBatchingDimsAttr(), dot.getRhsBatchingDimsAttr(),
        dot.getLhsContractingDimsAttr(), dot.getRhsContractingDimsAttr());
    // The original product's corner (the slice folds away when nothing on
    // the result was padded).
    SmallVector<int64_t> start(shape.size(), 0), strides(shape.size(), 1);
    Value result = build.slice(wide, start, resultType.getShape(), strides);
    dot.replaceAllUsesWith(result);
    dot.erase();
  }
};

} // namespace
