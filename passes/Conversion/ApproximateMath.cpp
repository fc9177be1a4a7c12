//===- ApproximateMath.cpp - trc-approximate-math ---------------------------===//
//
// f32 math ops (but logarithms) -> MLIR's polynomial approximations (see
// Passes.td), so the loops that contain them vectorize. Precondition: none; ops on other types
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
    // Not the logarithms: their approximation treats subnormal inputs as the
    // smallest normal float (log(1e-40) = -87.3 instead of -92.1), and trc
    // takes logs of small probabilities. They stay libm calls.
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return !name.contains("log"); });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
