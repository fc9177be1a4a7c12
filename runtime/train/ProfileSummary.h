//===- ProfileSummary.h - where each rank's step time went -----*- C++ -*-===//
//
// What `trc-run --profile-summary` prints: for each rank, its step time
// (the total of its kStep spans; a timeline without step spans uses the
// interval from its first span's start to its last span's end), that time
// split into four shares that add up to it, and its top consumers.
//
// The shares partition the step time by what was running, in this order of
// precedence (a collective inside a program run counts once, as
// communication):
//   communication  inside a kCollective or kP2p span (a recv's wait too)
//   compute        inside a kProgram or kCompute span, not communicating
//   host           inside a kPhase span only (data loading, feeding inputs,
//                  reading outputs back, applying updates, checkpoints)
//   idle           inside a step but in none of those (metrics, gaps)
// A consumer is every span of one (name, category) but kStep: its total
// time (inclusive: a compute phase's total contains its program runs),
// that total as a percentage of the step time, and its count. Pure
// arithmetic on the spans; no clocks.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_PROFILESUMMARY_H
#define TRC_RUNTIME_TRAIN_PROFILESUMMARY_H

#include "runtime/support/Profiler.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trc::rt {

struct ProfileConsumer {
  std::string name, category;
  double totalMs = 0, percentOfSteps = 0;
  int64_t count = 0;
};

struct RankProfileSummary {
  int rank = 0;
  std::string label;
  int64_t steps = 0;  // kStep spans
  double stepMs = 0;  // their total (see above)
  double computeMs = 0, communicationMs = 0, hostMs = 0, idleMs = 0; // sum to stepMs
  std::vector<ProfileConsumer> top; // by total time, longest first
};

/// One rank's summary with at most `topCount` consumers.
RankProfileSummary summarizeTimeline(const RankTimeline &timeline, size_t topCount = 8);

/// The text printed after training: one block per rank (see above).
std::string formatProfileSummary(const std::vector<RankProfileSummary> &ranks);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_PROFILESUMMARY_H
