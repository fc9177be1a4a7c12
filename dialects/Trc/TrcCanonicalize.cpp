//===- TrcCanonicalize.cpp - canonicalization patterns of trc ops ---------===//
//
// Rewrites that pay on real exports and need more than a folder:
//  * pow(x, c) with a constant exponent c in {1, 2, 3, 0.5} becomes
//    multiplications or sqrt (GELU's tanh form exports x^3 as Pow, which
//    would otherwise be a call to powf per element).
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace trc;

namespace {
struct PowByConstant : OpRewritePattern<PowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PowOp op, PatternRewriter &rw) const override {
    SplatElementsAttr exponent;
    if (!matchPattern(op.getRhs(), m_Constant(&exponent)) ||
        !isa<FloatType>(exponent.getElementType()))
      return failure();
    double c = exponent.getSplatValue<APFloat>().convertToDouble();
    Value x = op.getLhs();
    Location loc = op.getLoc();
    if (c == 1.0) {
      rw.replaceOp(op, x);
    } else if (c == 2.0) {
      rw.replaceOpWithNewOp<MulOp>(op, x, x);
    } else if (c == 3.0) {
      rw.replaceOpWithNewOp<MulOp>(op, rw.create<MulOp>(loc, x, x), x);
    } else if (c == 0.5) {
      rw.replaceOpWithNewOp<SqrtOp>(op, x);
    } else {
      return failure();
    }
    return success();
  }
};
} // namespace

void PowOp::getCanonicalizationPatterns(RewritePatternSet &patterns, MLIRContext *ctx) {
  patterns.add<PowByConstant>(ctx);
}
