//===- InitializerTest.cpp - the init record's generator --------------------===//
//
// Element i is a pure function of the record and i: the same bits however
// the tensor is cut into chunks or shards, fixed golden values, and bit for
// bit what an independent Python implementation of docs/ARTIFACT.md
// computes (scripts/init_reference.py; skipped without the project's Python).
// Statistics of large tensors; constants exact in every dtype; the
// portable log and cosine against libm; manifest numbers; the compiler's
// derivation of a recipe from values. Sessions making initialized params:
// artifact/InitializedParamsTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Initializer.h"

#include "runtime/support/HalfFloat.h"

#include "InitializerTesting.h"
#include "StatusTesting.h"
#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

using ::testing::HasSubstr;
using namespace trc::rt;
using namespace trc::rt::test;

namespace {

uint64_t bitsOf(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

struct Moments {
  double mean = 0, std = 0, kurtosis = 0, lo = 0, hi = 0;
};

Moments momentsOf(const std::vector<float> &v) {
  Moments m;
  double n = double(v.size()), sum = 0;
  m.lo = m.hi = v[0];
  for (float x : v) {
    sum += x;
    m.lo = std::min(m.lo, double(x));
    m.hi = std::max(m.hi, double(x));
  }
  m.mean = sum / n;
  double m2 = 0, m4 = 0;
  for (float x : v) {
    double d = x - m.mean;
    m2 += d * d;
    m4 += d * d * d * d;
  }
  m.std = std::sqrt(m2 / n);
  m.kurtosis = (m4 / n) / ((m2 / n) * (m2 / n));
  return m;
}

} // namespace

TEST(Initializer, SplitMix64StreamAndUnit) {
  // Vigna's reference splitmix64.c seeded with 0 starts with these outputs.
  EXPECT_EQ(splitmix64Output(0, 0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(splitmix64Output(0, 1), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(splitmix64Output(0, 2), 0x06c45d188009454fULL);
  EXPECT_EQ(unitFromBits(0), 0.0);
  EXPECT_EQ(unitFromBits(~uint64_t(0)), 1.0 - 0x1p-53);
  EXPECT_EQ(unitFromBits(uint64_t(1) << 63), 0.5);
}

TEST(Initializer, SameValuesForAnyChunking) {
  for (const Initializer &init : {kNormal, kUniform}) {
    std::vector<float> whole = fillF32(init, 0, 10007);
    // Chunks of odd sizes, concatenated.
    std::vector<float> pieces;
    for (uint64_t first = 0, size = 1; first < whole.size(); first += size, size = size * 3 + 1) {
      uint64_t n = std::min<uint64_t>(size, whole.size() - first);
      std::vector<float> part = fillF32(init, first, n);
      pieces.insert(pieces.end(), part.begin(), part.end());
    }
    ASSERT_EQ(pieces.size(), whole.size());
    EXPECT_EQ(std::memcmp(pieces.data(), whole.data(), whole.size() * 4), 0);
    // Twice: the same bits.
    std::vector<float> again = fillF32(init, 0, 10007);
    EXPECT_EQ(std::memcmp(again.data(), whole.data(), whole.size() * 4), 0);
  }
}

TEST(Initializer, GoldenValues) {
  // Fixed by the format: a change here changes every initialized artifact.
  // (Computed by scripts/init_reference.py, which follows docs/ARTIFACT.md.)
  const uint64_t normal[4] = {0x3fd08c682b9a18cfULL, 0x3fd00284b91e6ca4ULL, 0x3fcb3de47c96f35eULL,
                              0x3fd0d09501405464ULL};
  const uint64_t uniform[4] = {0xbf9b92822e8d94e4ULL, 0xbfbcf5fa96cd24f9ULL, 0x3fc8118709ed0c58ULL,
                               0x3fc7f33ac2bc7954ULL};
  const uint64_t farIndex = uint64_t(1) << 39;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(bitsOf(initializerValue(kNormal, uint64_t(i))), normal[i]) << i;
    EXPECT_EQ(bitsOf(initializerValue(kUniform, uint64_t(i))), uniform[i]) << i;
  }
  EXPECT_EQ(bitsOf(initializerValue(kNormal, farIndex)), normal[3]);
  EXPECT_EQ(bitsOf(initializerValue(kUniform, farIndex)), uniform[3]);
}

TEST(Initializer, AgreesWithTheReferenceBitForBit) {
  std::string probe = std::string("'") + TRC_TEST_PYTHON + "' -c pass >/dev/null 2>&1";
  if (std::system(probe.c_str()) != 0)
    GTEST_SKIP() << TRC_TEST_PYTHON << " is not there (bash scripts/setup.sh makes it)";
  struct Case {
    Initializer init;
    const char *a, *b;
    uint64_t first;
  } cases[] = {
      {kNormal, "0.25", "0.02", 0},
      {kUniform, "-0.125", "0.25", 0},
      {Initializer{InitKind::Normal, 0, 1, 0}, "0", "1", (uint64_t(1) << 40) - 5000},
      {Initializer{InitKind::Normal, -3, 7.5, ~uint64_t(0)}, "-3", "7.5", 123456789},
  };
  for (const Case &c : cases) {
    const uint64_t count = 5000;
    std::string cmd = std::string("'") + TRC_TEST_PYTHON + "' '" + TRC_TEST_INIT_REFERENCE +
                      "' " + initKindName(c.init.kind) + " " + c.a + " " + c.b + " " +
                      std::to_string(c.init.seed) + " " + std::to_string(c.first) + " " +
                      std::to_string(count);
    FILE *pipe = ::popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char line[64];
    uint64_t i = 0, mismatches = 0;
    while (std::fgets(line, sizeof(line), pipe)) {
      uint64_t want = std::strtoull(line, nullptr, 16);
      uint64_t got = bitsOf(initializerValue(c.init, c.first + i));
      if (want != got && mismatches++ < 5)
        ADD_FAILURE() << initKindName(c.init.kind) << " element " << c.first + i << ": runtime "
                      << std::hex << got << ", reference " << want;
      ++i;
    }
    EXPECT_EQ(::pclose(pipe), 0) << cmd;
    EXPECT_EQ(i, count) << cmd;
    EXPECT_EQ(mismatches, 0u);
  }
}

TEST(Initializer, NormalHasItsMeanAndStd) {
  std::vector<float> v = fillF32(Initializer{InitKind::Normal, 0.5, 2.0, 7}, 0, 1 << 21);
  Moments m = momentsOf(v);
  // Standard errors for 2^21 samples: mean 0.0014, std 0.001.
  EXPECT_NEAR(m.mean, 0.5, 0.01);
  EXPECT_NEAR(m.std, 2.0, 0.01);
  EXPECT_NEAR(m.kurtosis, 3.0, 0.03);
  // Tails: beyond 4.5 standard deviations on each side (7 expected).
  EXPECT_LT(m.lo, 0.5 - 4.5 * 2.0);
  EXPECT_GT(m.hi, 0.5 + 4.5 * 2.0);
  // Neighbouring elements are uncorrelated.
  double c = 0;
  for (size_t i = 1; i < v.size(); ++i)
    c += (v[i] - 0.5) * (v[i - 1] - 0.5);
  EXPECT_NEAR(c / double(v.size()) / 4.0, 0.0, 0.005);
}

TEST(Initializer, UniformStaysInItsRange) {
  std::vector<float> v = fillF32(Initializer{InitKind::Uniform, -1, 3, 11}, 0, 1 << 21);
  Moments m = momentsOf(v);
  EXPECT_NEAR(m.mean, 1.0, 0.01);
  EXPECT_NEAR(m.std, 4.0 / std::sqrt(12.0), 0.01);
  EXPECT_NEAR(m.kurtosis, 1.8, 0.01);
  EXPECT_GE(m.lo, -1.0);
  EXPECT_LE(m.hi, 3.0);
  EXPECT_LT(m.lo, -0.999);
  EXPECT_GT(m.hi, 2.999);
}

TEST(Initializer, SeedsAndParametersDiffer) {
  Initializer other = kNormal;
  other.seed = kNormal.seed + 1;
  EXPECT_NE(fillF32(kNormal, 0, 64), fillF32(other, 0, 64));
  EXPECT_NE(parameterSeed(0, "wte.weight"), parameterSeed(0, "wpe.weight"));
  EXPECT_NE(parameterSeed(0, "wte.weight"), parameterSeed(1, "wte.weight"));
  EXPECT_EQ(parameterSeed(5, "a"), parameterSeed(5, "a"));
}

TEST(Initializer, ConstantsAreExactInEveryDType) {
  Initializer one{InitKind::Constant, 1.0, 0, 0};
  Initializer third{InitKind::Constant, 1.0 / 3.0, 0, 0};
  double d[5];
  fillInitializer(third, DType::F64, 3, 5, d);
  for (double x : d)
    EXPECT_EQ(x, 1.0 / 3.0);
  float f[5];
  fillInitializer(third, DType::F32, 0, 5, f);
  for (float x : f)
    EXPECT_EQ(x, float(1.0 / 3.0));
  uint16_t h[5];
  fillInitializer(one, DType::F16, 0, 5, h);
  for (uint16_t x : h)
    EXPECT_EQ(x, 0x3c00);
  fillInitializer(one, DType::BF16, 0, 5, h);
  for (uint16_t x : h)
    EXPECT_EQ(x, 0x3f80);
  // 16-bit values are rounded from the f32.
  fillInitializer(kNormal, DType::BF16, 10, 5, h);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(h[i], floatToBf16(float(initializerValue(kNormal, uint64_t(10 + i)))));
  fillInitializer(kNormal, DType::F16, 10, 5, h);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(h[i], floatToF16(float(initializerValue(kNormal, uint64_t(10 + i)))));
}

TEST(Initializer, PortableLogAndCosineAreAccurate) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200000; ++i) {
    double u = 1.0 - unitFromBits(rng());
    ASSERT_NEAR(portableLog(u), std::log(u), 4e-16 * std::max(1.0, std::fabs(std::log(u)))) << u;
    double t = unitFromBits(rng());
    // (libm's side rounds 2*pi*t first: a few 1e-16 of its own.)
    ASSERT_NEAR(portableCos2Pi(t), std::cos(2 * M_PI * t), 1e-15) << t;
  }
  EXPECT_EQ(portableLog(1.0), 0.0);
  EXPECT_NEAR(portableLog(0x1p-53), -53 * std::log(2.0), 1e-13);
  EXPECT_EQ(portableCos2Pi(0.0), 1.0);
  EXPECT_EQ(portableCos2Pi(0.5), -1.0);
  EXPECT_EQ(portableCos2Pi(0.25), 0.0);
}

TEST(Initializer, NumbersRoundTripAndTheGrammarIsStrict) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 10000; ++i) {
    uint64_t bits = rng();
    double v;
    std::memcpy(&v, &bits, 8);
    if (!std::isfinite(v))
      continue;
    double back = 0;
    std::string text = formatInitNumber(v);
    ASSERT_TRUE(parseInitNumber(text, back)) << text;
    ASSERT_EQ(bitsOf(back), bitsOf(v)) << text;
  }
  EXPECT_EQ(formatInitNumber(0.02), "0.02");
  EXPECT_EQ(formatInitNumber(1.0), "1");
  double v = 0;
  for (const char *good : {"0", "-0", "1.5", "2e-3", "2E+3", "-7.25e10", "00.10"})
    EXPECT_TRUE(parseInitNumber(good, v)) << good;
  for (const char *bad : {"", "inf", "-inf", "nan", "0x1p3", "+1", "1.", ".5", "1e", "1e+",
                          "1e400", "-1e400", "1,5", " 1", "1 ", "--1", "1e5.5"})
    EXPECT_FALSE(parseInitNumber(bad, v)) << bad;
  EXPECT_EQ(formatInitializer(Initializer{InitKind::Normal, 0, 0.02, 42}), "normal 0 0.02 42");
  EXPECT_EQ(formatInitializer(Initializer{InitKind::Constant, 1, 0, 0}), "constant 1");
}

TEST(Initializer, DerivesTheRecipeOfItsOwnValues) {
  Initializer got;
  // Normal values -> normal with their moments.
  std::vector<float> n = fillF32(Initializer{InitKind::Normal, 0, 0.02, 1}, 0, 100000);
  ASSERT_TRUE(deriveInitializer(DType::F32, n.data(), n.size(), 77, got));
  EXPECT_EQ(got.kind, InitKind::Normal);
  EXPECT_NEAR(got.a, 0.0, 0.0005);
  EXPECT_NEAR(got.b, 0.02, 0.0005);
  EXPECT_EQ(got.seed, 77u);
  // Uniform values -> uniform with bounds just outside the extremes.
  std::vector<float> u = fillF32(Initializer{InitKind::Uniform, -0.125, 0.125, 1}, 0, 12288);
  ASSERT_TRUE(deriveInitializer(DType::F32, u.data(), u.size(), 77, got));
  EXPECT_EQ(got.kind, InitKind::Uniform);
  EXPECT_NEAR(got.a, -0.125, 0.0005);
  EXPECT_NEAR(got.b, 0.125, 0.0005);
  Moments m = momentsOf(u);
  EXPECT_LT(got.a, m.lo);
  EXPECT_GT(got.b, m.hi);
  // Small uniform tensors (< 64 elements) are described as normal.
  ASSERT_TRUE(deriveInitializer(DType::F32, u.data(), 63, 77, got));
  EXPECT_EQ(got.kind, InitKind::Normal);
  // Equal elements -> that constant, in any dtype; empty -> 0.
  std::vector<uint16_t> ones(300, 0x3f80); // bf16 1.0
  ASSERT_TRUE(deriveInitializer(DType::BF16, ones.data(), ones.size(), 77, got));
  EXPECT_EQ(got.kind, InitKind::Constant);
  EXPECT_EQ(got.a, 1.0);
  std::vector<double> thirds(10, 1.0 / 3.0);
  ASSERT_TRUE(deriveInitializer(DType::F64, thirds.data(), thirds.size(), 77, got));
  EXPECT_EQ(got.kind, InitKind::Constant);
  EXPECT_EQ(got.a, 1.0 / 3.0);
  ASSERT_TRUE(deriveInitializer(DType::F32, nullptr, 0, 77, got));
  EXPECT_EQ(got.kind, InitKind::Constant);
  EXPECT_EQ(got.a, 0.0);
  // A two-valued tensor is not uniform.
  std::vector<float> signs(1000);
  for (size_t i = 0; i < signs.size(); ++i)
    signs[i] = i % 2 ? 1.0f : -1.0f;
  ASSERT_TRUE(deriveInitializer(DType::F32, signs.data(), signs.size(), 77, got));
  EXPECT_EQ(got.kind, InitKind::Normal);
  // Nothing describes a NaN or an infinity; integers are not initialized.
  n[5] = NAN;
  EXPECT_FALSE(deriveInitializer(DType::F32, n.data(), n.size(), 77, got));
  n[5] = INFINITY;
  EXPECT_FALSE(deriveInitializer(DType::F32, n.data(), n.size(), 77, got));
  int32_t ints[4] = {1, 2, 3, 4};
  EXPECT_FALSE(deriveInitializer(DType::I32, ints, 4, 77, got));
}
