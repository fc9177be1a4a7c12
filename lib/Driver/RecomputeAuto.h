//===- RecomputeAuto.h - --recompute auto: the least that fits -*- C++ -*-===//
//
// trc-run's --recompute auto [--memory-budget BYTES]: the training step is
// compiled with no recomputation; if its arena (the memory plan's, what the
// step's temporaries take) exceeds the limit (the budget, or the device's
// memory less the step's parameters, gradients and optimizer state), it is
// compiled again with trc-recompute policy=budget. The pass budgets its own
// tensor-level estimate of the peak; the ratio of the arena to that estimate
// measured on the first compile converts the arena limit into the pass's
// budget, corrected by the arena each compile measures (a few compiles;
// the fitting one with the least recomputation is kept). Fails with
// the smallest reachable arena (every layer recomputed) when nothing fits.
// Built with the compiler only.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DRIVER_RECOMPUTEAUTO_H
#define TRC_DRIVER_RECOMPUTEAUTO_H

#include "runtime/train/StepCompiler.h"
#include "trc/Passes.h"
#include "trc/Pipelines/Pipelines.h"

#include <functional>
#include <string>
#include <vector>

namespace trc {

/// One in-process compile's result.
struct CompileOutcome {
  std::string artifactDir;       // a temporary folder's artifact
  rt::TrainingModelInfo info;
  int64_t arenaBytes = -1;       // the largest arena of its programs
  int64_t stateBytes = 0;        // the step's slots: parameters, state, I/O
  int64_t estimatedPeak = 0;     // trc-recompute's estimate (0: not run)
  std::vector<std::string> recomputeChoices; // per layer
  std::vector<MemoryPlanSummary> memory;     // per program
};

using CompileOnce =
    std::function<bool(const RecomputeOptions *, CompileOutcome &, std::string &error)>;

/// Compiles through `once` as the banner says; on success `outcome` is the
/// compile kept (the others' folders are removed).
bool compileWithRecomputeAuto(const rt::TrainingBuild &build, const CompileOnce &once,
                              CompileOutcome &outcome, std::string &error);

} // namespace trc

#endif
