//===- Initializer.cpp - parameters made from a recipe, not from bytes ------===//
//
// See Initializer.h. Every floating-point operation below is one IEEE-754
// binary64 operation rounded to nearest (the build compiles this file with
// -ffp-contract=off so no multiply and add fuse); docs/ARTIFACT.md spells
// out the same steps for other implementations.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Initializer.h"

#include "runtime/formats/Checksum.h"
#include "runtime/support/HalfFloat.h"
#include "runtime/support/SplitMix64.h"
#include "runtime/support/Parse.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

namespace trc::rt {

const char *initKindName(InitKind kind) {
  switch (kind) {
  case InitKind::Constant:
    return "constant";
  case InitKind::Normal:
    return "normal";
  case InitKind::Uniform:
    return "uniform";
  }
  return "?";
}

bool isInitializable(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::F16 ||
         dtype == DType::BF16;
}

uint64_t splitmix64Output(uint64_t seed, uint64_t n) {
  // splitmix64() adds the increment first: output n mixes seed + (n+1)*gamma.
  return splitmix64(seed + n * 0x9e3779b97f4a7c15ULL);
}

double unitFromBits(uint64_t bits) {
  return double(bits >> 11) * 0x1p-53;
}

namespace {

constexpr double kSqrtHalf = 0x1.6a09e667f3bcdp-1; // nearest to sqrt(1/2)
constexpr double kLn2 = 0x1.62e42fefa39efp-1;      // nearest to ln 2
constexpr double kHalfPi = 0x1.921fb54442d18p+0;   // nearest to pi/2

// c[k] = 1/(2k+1), k = 0..11 (each the double nearest it: one division).
struct LogCoefficients {
  std::array<double, 12> c;
  LogCoefficients() {
    for (int k = 0; k < 12; ++k)
      c[size_t(k)] = 1.0 / double(2 * k + 1);
  }
};

// cosine: a[k] = (-1)^k / (2k)!, sine: b[k] = (-1)^k / (2k+1)!, k = 0..10;
// the factorials (up to 21!) are exact doubles, so each is one division.
struct TrigCoefficients {
  std::array<double, 11> a, b;
  TrigCoefficients() {
    double factorial = 1; // n!
    for (int n = 0; n <= 21; ++n) {
      if (n > 0)
        factorial = factorial * double(n);
      int k = n / 2;
      double sign = (k % 2) ? -1.0 : 1.0;
      if (n % 2 == 0)
        a[size_t(k)] = sign / factorial;
      else
        b[size_t(k)] = sign / factorial;
    }
  }
};

const LogCoefficients &logCoefficients() {
  static const LogCoefficients c;
  return c;
}
const TrigCoefficients &trigCoefficients() {
  static const TrigCoefficients c;
  return c;
}

// Horner from the highest coefficient down: p = c[n-1]; p = p*y + c[k].
template <size_t N> double horner(const std::array<double, N> &c, double y) {
  double p = c[N - 1];
  for (size_t k = N - 1; k-- > 0;)
    p = p * y + c[k];
  return p;
}

double toDouble(DType dtype, const void *data, uint64_t i) {
  switch (dtype) {
  case DType::F64:
    return static_cast<const double *>(data)[i];
  case DType::F32:
    return static_cast<const float *>(data)[i];
  case DType::F16:
    return f16ToFloat(static_cast<const uint16_t *>(data)[i]);
  case DType::BF16:
    return bf16ToFloat(static_cast<const uint16_t *>(data)[i]);
  default:
    return 0;
  }
}

} // namespace

double portableLog(double x) {
  // x = m * 2^e, m in [sqrt(1/2), sqrt(2)) (frexp and doubling are exact).
  int e = 0;
  double m = std::frexp(x, &e);
  if (m < kSqrtHalf) {
    m = m * 2.0;
    e = e - 1;
  }
  // ln m = 2 atanh(s) = 2s (1 + w/3 + w^2/5 + ... + w^11/23), s = (m-1)/(m+1).
  double s = (m - 1.0) / (m + 1.0);
  double w = s * s;
  double p = horner(logCoefficients().c, w);
  return double(e) * kLn2 + (2.0 * s) * p;
}

double portableCos2Pi(double t) {
  // 2*pi*t = (pi/2) (q + f): q quarter turns (exact), f in [0, 1).
  double t4 = 4.0 * t;
  int q = int(t4);
  double f = t4 - double(q);
  // cos and sin of (pi/2) f from their series at x = (pi/2) f, f <= 1/2;
  // for f > 1/2 from those of (pi/2) (1 - f), exchanged.
  bool exchange = f > 0.5;
  double x = (exchange ? 1.0 - f : f) * kHalfPi;
  double y = x * x;
  double c = horner(trigCoefficients().a, y);
  double s = x * horner(trigCoefficients().b, y);
  double cosF = exchange ? s : c, sinF = exchange ? c : s;
  switch (q & 3) {
  case 0:
    return cosF;
  case 1:
    return -sinF;
  case 2:
    return -cosF;
  default:
    return sinF;
  }
}

double initializerValue(const Initializer &init, uint64_t index) {
  switch (init.kind) {
  case InitKind::Constant:
    return init.a;
  case InitKind::Uniform: {
    double u = unitFromBits(splitmix64Output(init.seed, index));
    return init.a + (init.b - init.a) * u;
  }
  case InitKind::Normal: {
    double u1 = 1.0 - unitFromBits(splitmix64Output(init.seed, 2 * index));
    double u2 = unitFromBits(splitmix64Output(init.seed, 2 * index + 1));
    double r = std::sqrt(-2.0 * portableLog(u1));
    double z = r * portableCos2Pi(u2);
    return init.a + init.b * z;
  }
  }
  return 0;
}

void fillInitializer(const Initializer &init, DType dtype, uint64_t first,
                     uint64_t count, void *out) {
  for (uint64_t i = 0; i < count; ++i) {
    double v = initializerValue(init, first + i);
    switch (dtype) {
    case DType::F64:
      static_cast<double *>(out)[i] = v;
      break;
    case DType::F32:
      static_cast<float *>(out)[i] = float(v);
      break;
    case DType::F16:
      static_cast<uint16_t *>(out)[i] = floatToF16(float(v));
      break;
    case DType::BF16:
      static_cast<uint16_t *>(out)[i] = floatToBf16(float(v));
      break;
    default:
      return;
    }
  }
}

std::string formatInitNumber(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

bool parseInitNumber(std::string_view text, double &value) {
  // The manifest's grammar first (docs/ARTIFACT.md): parseDouble alone would
  // also take ".5" and "5.".
  size_t i = 0, n = text.size();
  auto digits = [&] {
    size_t start = i;
    while (i < n && text[i] >= '0' && text[i] <= '9')
      ++i;
    return i > start;
  };
  if (n == 0 || n > 64)
    return false;
  if (text[i] == '-')
    ++i;
  if (!digits())
    return false;
  if (i < n && text[i] == '.') {
    ++i;
    if (!digits())
      return false;
  }
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < n && (text[i] == '+' || text[i] == '-'))
      ++i;
    if (!digits())
      return false;
  }
  if (i != n)
    return false;
  std::optional<double> v = parseDouble(text);
  if (v)
    value = *v;
  return v.has_value();
}

std::string formatInitializer(const Initializer &init) {
  std::string s = initKindName(init.kind);
  s += " " + formatInitNumber(init.a);
  if (init.kind != InitKind::Constant)
    s += " " + formatInitNumber(init.b) + " " + std::to_string(init.seed);
  return s;
}

bool deriveInitializer(DType dtype, const void *data, uint64_t count,
                       uint64_t seed, Initializer &out) {
  if (!isInitializable(dtype))
    return false;
  if (count == 0) {
    out = Initializer{InitKind::Constant, 0, 0, 0};
    return true;
  }
  double first = toDouble(dtype, data, 0), lo = first, hi = first, sum = 0;
  bool equal = true;
  for (uint64_t i = 0; i < count; ++i) {
    double v = toDouble(dtype, data, i);
    if (!std::isfinite(v))
      return false;
    equal = equal && v == first;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  if (equal) {
    out = Initializer{InitKind::Constant, first, 0, 0};
    return true;
  }
  double n = double(count);
  double mean = sum / n, m2 = 0, m4 = 0;
  for (uint64_t i = 0; i < count; ++i) {
    double d = toDouble(dtype, data, i) - mean;
    m2 += d * d;
    m4 += d * d * d * d;
  }
  double variance = m2 / n;
  if (!std::isfinite(mean) || !std::isfinite(variance) || !std::isfinite(m4))
    return false;
  if (variance == 0) { // differences too small to square
    out = Initializer{InitKind::Constant, mean, 0, 0};
    return true;
  }
  // Uniform when the shape says so (kurtosis 1.8 against a normal's 3, and
  // a range of sqrt(12) standard deviations); endpoints widened by one
  // spacing, the unbiased estimate of a uniform's bounds from its samples.
  if (count >= 64) {
    double kurtosis = (m4 / n) / (variance * variance);
    double spacing = (hi - lo) / (n - 1);
    double ratio = (hi - lo + 2 * spacing) / std::sqrt(12 * variance);
    if (kurtosis < 2.4 && ratio > 0.85 && ratio < 1.15) {
      out = Initializer{InitKind::Uniform, lo - spacing, hi + spacing, seed};
      return std::isfinite(out.b - out.a);
    }
  }
  out = Initializer{InitKind::Normal, mean, std::sqrt(variance), seed};
  return true;
}

uint64_t parameterSeed(uint64_t seed, std::string_view name) {
  return splitmix64(seed ^ fnv1a64(name.data(), name.size()));
}

} // namespace trc::rt
