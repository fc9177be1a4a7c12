//===- Fit.h - least-squares fits of measured times -------------*- C++ -*-===//
//
// trc-run --calibrate turns timings into a device profile's constants with
// these fits: seconds = sum_i coefficient_i x feature_i, each coefficient
// >= 0 (a feature that would take a negative coefficient is dropped: the
// best fit over the subsets of features with non-negative solutions),
// minimizing the squared *relative* error, so a 10 us and a 100 ms sample
// weigh the same. Plain C++ (no MLIR), unit-tested in PlanTest.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_FIT_H
#define TRC_PLAN_FIT_H

#include "trc/Plan/Cluster.h"

#include <vector>

namespace trc::plan {

// rows[i] holds sample i's features (all rows the same length, at most 4);
// returns one coefficient per feature (0 for dropped ones). Preconditions:
// seconds[i] > 0, rows.size() == seconds.size().
std::vector<double> fitNonNegative(const std::vector<std::vector<double>> &rows,
                                   const std::vector<double> &seconds);

// Products of (m x k) by (k x n), `batch` of them per call, each timed.
struct MatmulSample {
  double m = 0, n = 0, k = 0, batch = 1, seconds = 0;
};
MatmulFit fitMatmul(const std::vector<MatmulSample> &samples, int elementBytes);

// A kernel probe: `ops` unfused ops moving `bytes`, timed.
struct KernelSample {
  double ops = 0, bytes = 0, seconds = 0;
};
// Sets kernelBytesPerSecond and kernelOpSeconds.
void fitKernels(const std::vector<KernelSample> &samples, MeasuredConstants &out);

// Transfers of `bytes`, timed: latency + bytes / bandwidth.
struct TransferSample {
  double bytes = 0, seconds = 0;
};
LinkFit fitLink(const std::vector<TransferSample> &samples);

// A fit's mean absolute relative error over its samples (for the report).
double meanRelativeError(const std::vector<std::vector<double>> &rows,
                         const std::vector<double> &seconds,
                         const std::vector<double> &coefficients);

} // namespace trc::plan

#endif // TRC_PLAN_FIT_H
