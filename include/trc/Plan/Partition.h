//===- Partition.h - contiguous pieces into balanced stages -----*- C++ -*-===//
//
// The min-max partition trc-pipeline-stages cuts a model with, and the
// planner predicts those cuts with: `weights` (one per piece, in order) into
// `stages` contiguous groups minimizing the largest group's sum (dynamic
// programming, O(stages x pieces^2)). Returns the first piece of each group
// followed by weights.size(). Header-only and plain C++: lib/Parallel and
// lib/Plan share it.
// Precondition: 1 <= stages <= weights.size().
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_PARTITION_H
#define TRC_PLAN_PARTITION_H

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace trc::plan {

inline std::vector<int64_t> balancedCuts(const std::vector<double> &weights, int64_t stages) {
  const int64_t pieces = int64_t(weights.size());
  std::vector<double> prefix(size_t(pieces) + 1, 0.0);
  for (int64_t p = 0; p < pieces; ++p)
    prefix[size_t(p) + 1] = prefix[size_t(p)] + weights[size_t(p)];
  // best[k][j]: the smallest largest weight of k stages over pieces [0, j).
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(size_t(stages) + 1,
                                        std::vector<double>(size_t(pieces) + 1, inf));
  std::vector<std::vector<int64_t>> from(size_t(stages) + 1,
                                         std::vector<int64_t>(size_t(pieces) + 1, -1));
  best[0][0] = 0;
  for (int64_t k = 1; k <= stages; ++k)
    for (int64_t j = k; j <= pieces; ++j)
      for (int64_t i = k - 1; i < j; ++i) {
        double w = std::max(best[size_t(k) - 1][size_t(i)], prefix[size_t(j)] - prefix[size_t(i)]);
        if (w < best[size_t(k)][size_t(j)]) {
          best[size_t(k)][size_t(j)] = w;
          from[size_t(k)][size_t(j)] = i;
        }
      }
  std::vector<int64_t> cuts(size_t(stages) + 1, pieces);
  int64_t j = pieces;
  for (int64_t k = stages; k >= 1; --k) {
    j = from[size_t(k)][size_t(j)];
    cuts[size_t(k) - 1] = j;
  }
  return cuts;
}

} // namespace trc::plan

#endif // TRC_PLAN_PARTITION_H
