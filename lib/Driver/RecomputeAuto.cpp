//===- RecomputeAuto.cpp - --recompute auto ---------------------------------===//
//
// See RecomputeAuto.h.
//
//===----------------------------------------------------------------------===//
#include "RecomputeAuto.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstdio>
#include <limits>

namespace trc {

namespace {

/// Removes a compile's temporary folder (the artifact's parent).
void discard(const CompileOutcome &outcome) {
  if (!outcome.artifactDir.empty())
    llvm::sys::fs::remove_directories(llvm::sys::path::parent_path(outcome.artifactDir));
}

std::string describeChoices(const std::vector<std::string> &choices) {
  std::string out;
  for (const std::string &c : choices)
    out += (out.empty() ? "" : ",") + c;
  return out.empty() ? "none" : out;
}

} // namespace

bool compileWithRecomputeAuto(const rt::TrainingBuild &build, const CompileOnce &once,
                              CompileOutcome &outcome, std::string &error) {
  if (build.pipeline) {
    error = "error: --recompute auto is not available with pipeline stages yet (its budget "
            "would be per stage); use --recompute selective or full\n";
    return false;
  }
  // Policy budget with no limit decides "none" and records its estimate.
  RecomputeOptions probe;
  probe.policy = "budget";
  probe.budget = std::numeric_limits<int64_t>::max();
  CompileOutcome first;
  if (!once(&probe, first, error))
    return false;
  int64_t limit = build.memoryLimit;
  if (limit == 0) {
    if (build.deviceMemory <= 0) {
      discard(first);
      error = "error: --recompute auto: the device's memory is unknown here; give "
              "--memory-budget BYTES\n";
      return false;
    }
    // A tenth of the device for the runtime, libraries and fragmentation.
    limit = build.deviceMemory / 10 * 9 - first.stateBytes;
    if (limit <= 0) {
      discard(first);
      error = "error: --recompute auto: the step's parameters, gradients and state alone take " +
              std::to_string(first.stateBytes) + " bytes of the device's " +
              std::to_string(build.deviceMemory) + "\n";
      return false;
    }
  }
  if (first.arenaBytes <= limit) {
    std::fprintf(stderr, "trc-run: recompute auto: none (arena %lld bytes fits %lld)\n",
                 static_cast<long long>(first.arenaBytes), static_cast<long long>(limit));
    outcome = std::move(first);
    return true;
  }
  // The pass budgets its estimate: scale the arena limit by arena/estimate
  // (measured on the first compile), then correct by what each compile
  // measures. Keep the fitting compile with the largest arena (the least
  // recomputation); stop once one lands within 5% of the limit.
  double scale = first.estimatedPeak > 0 && first.arenaBytes > 0
                     ? double(first.arenaBytes) / double(first.estimatedPeak)
                     : 1.0;
  discard(first);
  double budget = double(limit) / scale;
  CompileOutcome best;
  for (int attempt = 0; attempt < 4; ++attempt) {
    RecomputeOptions options;
    options.policy = "budget";
    options.budget = std::max<int64_t>(1, int64_t(budget));
    CompileOutcome tried;
    std::string ignored;
    if (!once(&options, tried, ignored))
      break; // the estimate cannot be met: see what full reaches below
    // Aim at the limit: the arena follows the budget about in proportion.
    double next = budget * 0.98 * double(limit) / double(tried.arenaBytes);
    if (tried.arenaBytes <= limit && tried.arenaBytes > best.arenaBytes) {
      discard(best);
      best = std::move(tried);
    } else {
      discard(tried);
    }
    if (best.arenaBytes >= 0.95 * double(limit))
      break;
    budget = next;
  }
  if (best.arenaBytes >= 0) {
    std::fprintf(stderr, "trc-run: recompute auto: layers %s (arena %lld bytes fits %lld)\n",
                 describeChoices(best.recomputeChoices).c_str(),
                 static_cast<long long>(best.arenaBytes), static_cast<long long>(limit));
    outcome = std::move(best);
    return true;
  }
  RecomputeOptions full;
  full.policy = "full";
  CompileOutcome fullest;
  if (!once(&full, fullest, error))
    return false;
  if (fullest.arenaBytes <= limit) {
    std::fprintf(stderr, "trc-run: recompute auto: full (arena %lld bytes fits %lld)\n",
                 static_cast<long long>(fullest.arenaBytes), static_cast<long long>(limit));
    outcome = std::move(fullest);
    return true;
  }
  discard(fullest);
  error = "error: --recompute auto: no recomputation fits " + std::to_string(limit) +
          " bytes of arena" + (build.memoryLimit ? " (--memory-budget)" : "") +
          ": the smallest reachable arena is " + std::to_string(fullest.arenaBytes) +
          " bytes (--recompute full)\n";
  return false;
}

} // namespace trc
