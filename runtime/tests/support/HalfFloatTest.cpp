//===- HalfFloatTest.cpp - 16-bit float conversions --------------------------===//
//
// HalfFloat.h against the compiler's own _Float16 conversion (every f16 bit
// pattern widened; a sweep of f32 patterns narrowed) and bf16 rounding
// cases.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/HalfFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace trc::rt;

TEST(HalfFloat, F16WidensEveryPatternLikeTheCompiler) {
  for (uint32_t h = 0; h < 65536; ++h) {
    uint16_t bits = uint16_t(h);
    _Float16 ref;
    std::memcpy(&ref, &bits, 2);
    float want = float(ref), got = f16ToFloat(bits);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << h;
      continue;
    }
    EXPECT_EQ(std::memcmp(&want, &got, 4), 0) << "pattern " << h;
  }
}

TEST(HalfFloat, F16NarrowsLikeTheCompiler) {
  for (uint64_t i = 0; i < (uint64_t(1) << 32); i += 65537) {
    uint32_t bits = uint32_t(i);
    float f;
    std::memcpy(&f, &bits, 4);
    uint16_t got = floatToF16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16ToFloat(got))) << bits;
      continue;
    }
    _Float16 ref = _Float16(f);
    uint16_t want;
    std::memcpy(&want, &ref, 2);
    ASSERT_EQ(got, want) << "f32 pattern " << bits << " (" << f << ")";
  }
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00); // rounds up to infinity
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff); // the largest finite
}

TEST(HalfFloat, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  float halfway;
  uint32_t bits = 0x3f808000u; // exactly between 0x3f80 and 0x3f81: to even
  std::memcpy(&halfway, &bits, 4);
  EXPECT_EQ(floatToBf16(halfway), 0x3f80);
  bits = 0x3f818000u; // between 0x3f81 and 0x3f82: to even (up)
  std::memcpy(&halfway, &bits, 4);
  EXPECT_EQ(floatToBf16(halfway), 0x3f82);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  EXPECT_EQ(bf16ToFloat(0x4049), 3.140625f);
}
