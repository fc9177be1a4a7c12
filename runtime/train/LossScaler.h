//===- LossScaler.h - dynamic loss scaling for f16 training -----*- C++ -*-===//
//
// torch.cuda.amp.GradScaler's policy with its defaults: the loss is
// multiplied by `scale` (initially 2^16); a step whose gradients overflow
// (non-finite global norm) is skipped and the scale halves; after `interval`
// (2000) consecutive good steps it doubles (the scale never goes below 1,
// where torch has no floor). The state (scale and the count
// of good steps) is saved in checkpoints as two tensors so that a resumed
// run continues exactly. No preconditions.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_LOSSSCALER_H
#define TRC_RUNTIME_LOSSSCALER_H

#include "trc/Abi/SlotNames.h"

#include <cmath>
#include <cstdint>

namespace trc::rt {

struct LossScaler {
  // Checkpointed under the input's name.
  static constexpr const char *kScaleTensor = abi::kLossScale;
  static constexpr const char *kGoodStepsTensor = abi::kLossScaleGoodSteps;

  double scale = 65536.0;
  int64_t goodSteps = 0;
  int64_t interval = 2000;

  /// Records a step's outcome; returns whether its update may be applied.
  bool update(double gradNorm) {
    if (!std::isfinite(gradNorm)) {
      scale = std::fmax(scale * 0.5, 1.0);
      goodSteps = 0;
      return false;
    }
    if (++goodSteps == interval) {
      scale = std::fmin(scale * 2.0, 1.0e30);
      goodSteps = 0;
    }
    return true;
  }
};

} // namespace trc::rt

#endif
