//===- ExpandBf16.cpp - trc-expand-bf16 --------------------------------------===//
//
// bf16 <-> f32 conversions (arith.truncf / arith.extf) become integer bit
// operations (MLIR's arith expansion: round to nearest even, NaN kept a
// NaN), and selects of bf16 values select their bits (i16), for code
// compiled to the CPU. x86 without AVX512-BF16 has no instruction for
// either: LLVM 22 lowers the truncation to a call of compiler-rt's
// __truncsfbf2, and a select of bfloat values to an f32 select truncated
// back by that call, which Debian 12's libgcc does not have; every bf16
// program then failed to load ("undefined symbol: __truncsfbf2"). The
// integer form also vectorizes. Precondition: bf16 arithmetic already runs
// in f32 (arith-emulate-unsupported-floats, before this pass in the CPU
// pipeline); other ops are left.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace trc {
#define GEN_PASS_DEF_EXPANDBF16
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
/// The i16 type of the same shape as a bf16 type (scalar or vector); null
/// for any other type.
Type bitsOf(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (!element.isBF16())
    return nullptr;
  Type i16 = IntegerType::get(type.getContext(), 16);
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.clone(i16);
  return isa<ShapedType>(type) ? nullptr : i16;
}

/// select(c, a, b) : bf16 -> bitcast(select(c, bits(a), bits(b))).
struct SelectBits : OpRewritePattern<arith::SelectOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::SelectOp op, PatternRewriter &rewriter) const override {
    Type bits = bitsOf(op.getType());
    if (!bits)
      return failure();
    Location loc = op.getLoc();
    Value a = rewriter.create<arith::BitcastOp>(loc, bits, op.getTrueValue());
    Value b = rewriter.create<arith::BitcastOp>(loc, bits, op.getFalseValue());
    Value chosen = rewriter.create<arith::SelectOp>(loc, op.getCondition(), a, b);
    rewriter.replaceOpWithNewOp<arith::BitcastOp>(op, op.getType(), chosen);
    return success();
  }
};

struct ExpandBf16 : trc::impl::ExpandBf16Base<ExpandBf16> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    patterns.add<SelectBits>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
