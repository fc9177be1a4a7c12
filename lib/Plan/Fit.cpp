//===- Fit.cpp - non-negative relative least squares (Fit.h) ---------------===//
//
// With at most 4 features there are at most 15 non-empty subsets: each is
// solved by its normal equations (Gaussian elimination with pivoting) on
// the rows divided by the measured time (relative error), and the best
// subset whose coefficients are all >= 0 wins. Exhaustive and exact.
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/Fit.h"

#include <cmath>
#include <limits>

namespace trc::plan {
namespace {

// Solves A x = b in place (n x n); false when singular.
bool solve(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double> &x) {
  size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t pivot = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[pivot][c]))
        pivot = r;
    if (std::fabs(a[pivot][c]) < 1e-300)
      return false;
    std::swap(a[c], a[pivot]);
    std::swap(b[c], b[pivot]);
    for (size_t r = 0; r < n; ++r) {
      if (r == c)
        continue;
      double f = a[r][c] / a[c][c];
      for (size_t k = c; k < n; ++k)
        a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  x.resize(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = b[i] / a[i][i];
  return true;
}

double squaredRelativeError(const std::vector<std::vector<double>> &rows,
                            const std::vector<double> &seconds, const std::vector<double> &coef) {
  double e = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    double p = 0;
    for (size_t j = 0; j < coef.size(); ++j)
      p += coef[j] * rows[i][j];
    double r = (p - seconds[i]) / seconds[i];
    e += r * r;
  }
  return e;
}

} // namespace

std::vector<double> fitNonNegative(const std::vector<std::vector<double>> &rows,
                                   const std::vector<double> &seconds) {
  size_t n = rows.empty() ? 0 : rows[0].size();
  std::vector<double> best(n, 0.0);
  double bestError = std::numeric_limits<double>::infinity();
  // Features are scaled to unit mean so the normal equations are well posed.
  std::vector<double> scale(n, 0.0);
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < n; ++j)
      scale[j] += std::fabs(rows[i][j] / seconds[i]) / double(rows.size());
  for (unsigned mask = 1; mask < (1u << n); ++mask) {
    std::vector<size_t> used;
    for (size_t j = 0; j < n; ++j)
      if (mask & (1u << j) && scale[j] > 0)
        used.push_back(j);
    if (used.empty())
      continue;
    size_t u = used.size();
    std::vector<std::vector<double>> ata(u, std::vector<double>(u, 0.0));
    std::vector<double> atb(u, 0.0), x;
    for (size_t i = 0; i < rows.size(); ++i) {
      for (size_t p = 0; p < u; ++p) {
        double fp = rows[i][used[p]] / seconds[i] / scale[used[p]];
        atb[p] += fp; // the target, seconds / seconds, is 1
        for (size_t q = 0; q < u; ++q)
          ata[p][q] += fp * rows[i][used[q]] / seconds[i] / scale[used[q]];
      }
    }
    if (!solve(ata, atb, x))
      continue;
    std::vector<double> coef(n, 0.0);
    bool feasible = true;
    for (size_t p = 0; p < u; ++p) {
      coef[used[p]] = x[p] / scale[used[p]];
      feasible &= x[p] >= 0;
    }
    if (!feasible)
      continue;
    double e = squaredRelativeError(rows, seconds, coef);
    if (e < bestError) {
      bestError = e;
      best = coef;
    }
  }
  return best;
}

double meanRelativeError(const std::vector<std::vector<double>> &rows,
                         const std::vector<double> &seconds,
                         const std::vector<double> &coefficients) {
  double sum = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    double p = 0;
    for (size_t j = 0; j < coefficients.size(); ++j)
      p += coefficients[j] * rows[i][j];
    sum += std::fabs(p - seconds[i]) / seconds[i];
  }
  return rows.empty() ? 0 : sum / double(rows.size());
}

MatmulFit fitMatmul(const std::vector<MatmulSample> &samples, int elementBytes) {
  std::vector<std::vector<double>> rows;
  std::vector<double> seconds;
  for (const MatmulSample &s : samples) {
    rows.push_back({2 * s.m * s.n * s.k * s.batch,
                    double(elementBytes) * (s.m * s.k + s.k * s.n + s.m * s.n) * s.batch,
                    s.batch}); // one library call per product of the batch
    seconds.push_back(s.seconds);
  }
  std::vector<double> c = fitNonNegative(rows, seconds);
  MatmulFit f;
  f.flopsPerSecond = c[0] > 0 ? 1 / c[0] : 0;
  f.bytesPerSecond = c[1] > 0 ? 1 / c[1] : 0;
  f.callSeconds = c[2];
  return f;
}

void fitKernels(const std::vector<KernelSample> &samples, MeasuredConstants &out) {
  std::vector<std::vector<double>> rows;
  std::vector<double> seconds;
  for (const KernelSample &s : samples) {
    rows.push_back({s.bytes, s.ops});
    seconds.push_back(s.seconds);
  }
  std::vector<double> c = fitNonNegative(rows, seconds);
  if (c[0] <= 0 && !samples.empty()) { // every kernel moves bytes: the largest sample's rate
    const KernelSample *big = &samples[0];
    for (const KernelSample &s : samples)
      if (s.bytes > big->bytes)
        big = &s;
    c = {big->seconds / big->bytes, 0.0};
  }
  out.kernelBytesPerSecond = c[0] > 0 ? 1 / c[0] : 0;
  out.kernelOpSeconds = c[1];
}

LinkFit fitLink(const std::vector<TransferSample> &samples) {
  std::vector<std::vector<double>> rows;
  std::vector<double> seconds;
  for (const TransferSample &s : samples) {
    rows.push_back({1.0, s.bytes});
    seconds.push_back(s.seconds);
  }
  std::vector<double> c = fitNonNegative(rows, seconds);
  LinkFit f;
  f.latency = c[0];
  f.bandwidth = c[1] > 0 ? 1 / c[1] : 0;
  return f;
}

} // namespace trc::plan
