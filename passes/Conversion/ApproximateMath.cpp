//===- ApproximateMath.cpp - trc-approximate-math ---------------------------===//
//
// f32 math ops -> MLIR's polynomial approximations (see Passes.td), so the
// loops that contain them vectorize. Precondition: none; ops on other types
// and ops without an approximation are left for the libm/LLVM lowering.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace trc {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct ApproximateMath : trc::impl::ApproximateMathBase<ApproximateMath> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
