//===- LrSchedule.h - learning-rate schedules -------------------------------===//
//
// The learning rate of step s (0-based: the step about to run) as a pure
// function of s, with base rate `lr`, W = warmupSteps, N = totalSteps and
// m = minLr:
//   * warm-up (every kind, when W > 0): for s < W, lr * (s + f) / W with
//     f = warmupFrom: 1 (llm.c's: the first step already moves, step W-1
//     reaches lr) or 0 (PyTorch's LambdaLR warm-ups, Hugging Face's
//     schedules: the first step runs at rate 0, step W reaches lr);
//   * constant: lr after the warm-up;
//   * cosine:   for W <= s < N, m + (lr - m) * 0.5 * (1 + cos(pi * d)) with
//               d = (s - W) / (N - W); m from step N on;
//   * linear:   for W <= s < N, m + (lr - m) * (1 - d); m from step N on.
//
// Specs (the --lr-schedule flag): a kind, then optional key=value pairs
// after ':', separated by ','. Keys: warmup (steps), warmup_from (0 or 1,
// default 1), min (absolute rate),
// min_ratio (min as a fraction of lr; not with min), total (steps; default:
// the run's step count). Examples:
//   constant        constant:warmup=100
//   cosine:warmup=100,min=1e-5,total=5000
//   linear:warmup=10,min_ratio=0.1
// Errors name the spec and the key ("--lr-schedule 'cosine:warmup=x': bad
// value 'x' for warmup (expected a non-negative integer)").
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_LRSCHEDULE_H
#define TRC_RUNTIME_LRSCHEDULE_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace trc::rt {

enum class LrScheduleKind { Constant, Cosine, Linear };

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::Constant;
  double lr = 1e-3;        // peak (base) rate
  int64_t warmupSteps = 0; // W
  int warmupFrom = 1;       // f
  int64_t totalSteps = 0;  // N (decay horizon; unused by constant)
  double minLr = 0;        // m

  // The learning rate of step `step` (0-based). Negative steps count as 0.
  double at(int64_t step) const;
  // Checks lr > 0 and finite, 0 <= minLr <= lr, warmupSteps >= 0, and for
  // cosine/linear totalSteps > warmupSteps.
  Status validate() const;
  // A spec that parses back to this schedule ("cosine:warmup=100,...").
  std::string spec() const;
};

const char *lrScheduleKindName(LrScheduleKind kind);

/// The schedule `spec` (see above) names, with base rate `lr`;
/// `defaultTotal` is the total when the spec has none (the run's --steps).
/// The result is validated.
StatusOr<LrSchedule> parseLrSchedule(std::string_view spec, double lr, int64_t defaultTotal);

/// Whether two spec() texts name the same schedule but for its total (a run
/// extended with more --steps re-derives a total it did not give).
bool differOnlyInTotal(std::string_view a, std::string_view b);

} // namespace trc::rt

#endif // TRC_RUNTIME_LRSCHEDULE_H
