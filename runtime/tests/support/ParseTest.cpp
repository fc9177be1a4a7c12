//===- ParseTest.cpp - strict, locale-independent number parsing ------------===//
//
// parseInt64 / parseUint64 / parseDouble take the whole text or nothing:
// overflow, trailing junk, spaces, signs they do not allow, empty text and
// non-finite values are rejected; "1,5" is never a number and "1.5" is one
// and a half even under a decimal-comma LC_NUMERIC (ScopedLocale.h).
// splitText keeps empty pieces.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Parse.h"

#include "ScopedLocale.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <string>

using namespace trc::rt;
using trc::rt::test::ScopedDecimalCommaLocale;

TEST(Parse, Int64TakesTheWholeTextInRange) {
  EXPECT_EQ(parseInt64("0"), 0);
  EXPECT_EQ(parseInt64("-17"), -17);
  EXPECT_EQ(parseInt64("007"), 7);
  EXPECT_EQ(parseInt64("9223372036854775807"),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(parseInt64("-9223372036854775808"),
            std::numeric_limits<int64_t>::min());
  // Overflow is rejected, not clamped or wrapped.
  EXPECT_EQ(parseInt64("9223372036854775808"), std::nullopt);
  EXPECT_EQ(parseInt64("-9223372036854775809"), std::nullopt);
  EXPECT_EQ(parseInt64("99999999999999999999999"), std::nullopt);
  for (const char *bad : {"", "-", "+1", " 1", "1 ", "12x", "1.0", "1e3",
                          "0x10", "1,000", "--1", "\t1", "1\n"})
    EXPECT_EQ(parseInt64(bad), std::nullopt) << "'" << bad << "'";
  // The caller's range.
  EXPECT_EQ(parseInt64("1024", 1, 1024), 1024);
  EXPECT_EQ(parseInt64("1", 1, 1024), 1);
  EXPECT_EQ(parseInt64("0", 1, 1024), std::nullopt);
  EXPECT_EQ(parseInt64("1025", 1, 1024), std::nullopt);
  EXPECT_EQ(parseInt64("-5", -5, -1), -5);
}

TEST(Parse, Uint64HasNoSign) {
  EXPECT_EQ(parseUint64("18446744073709551615"),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(parseUint64("18446744073709551616"), std::nullopt);
  EXPECT_EQ(parseUint64("-0"), std::nullopt);
  EXPECT_EQ(parseUint64("-1"), std::nullopt);
  EXPECT_EQ(parseUint64("+1"), std::nullopt);
  EXPECT_EQ(parseUint64(""), std::nullopt);
  EXPECT_EQ(parseUint64("12 "), std::nullopt);
  EXPECT_EQ(parseUint64("2147483647", 2147483647u), 2147483647u);
  EXPECT_EQ(parseUint64("2147483648", 2147483647u), std::nullopt);
}

TEST(Parse, DoubleIsFiniteAndWhole) {
  EXPECT_EQ(parseDouble("1.5"), 1.5);
  EXPECT_EQ(parseDouble("-2.5e-3"), -2.5e-3);
  EXPECT_EQ(parseDouble("1E3"), 1000.0);
  EXPECT_EQ(parseDouble(".5"), 0.5);
  EXPECT_EQ(parseDouble("7"), 7.0);
  EXPECT_EQ(parseDouble("1e308"), 1e308);
  EXPECT_EQ(parseDouble("0.1"), 0.1); // correctly rounded
  EXPECT_EQ(parseDouble("1e309"), std::nullopt); // overflow (ERANGE)
  EXPECT_EQ(parseDouble("-1e309"), std::nullopt);
  for (const char *bad : {"", "inf", "-inf", "infinity", "nan", "NaN", "1,5",
                          "+1.5", " 1.5", "1.5 ", "1.5x", "0x1p3", "1e",
                          "e5", ".", "-", "1..5", "1.5.", "١"})
    EXPECT_EQ(parseDouble(bad), std::nullopt) << "'" << bad << "'";
}

TEST(Parse, DoubleIgnoresTheLocale) {
  ScopedDecimalCommaLocale locale;
  if (!locale.ok())
    GTEST_SKIP() << "no decimal-comma locale installed (e.g. localedef -i "
                    "de_DE -f UTF-8 de_DE.UTF-8); the C-locale checks above "
                    "still ran";
  // What the C library now does (why the runtime does not use it).
  EXPECT_EQ(std::strtod("1,5", nullptr), 1.5) << locale.name();
  EXPECT_EQ(parseDouble("1.5"), 1.5) << locale.name();
  EXPECT_EQ(parseDouble("1,5"), std::nullopt) << locale.name();
  EXPECT_EQ(parseDouble("-2.5e-3"), -2.5e-3) << locale.name();
}

TEST(Parse, SplitKeepsEmptyPieces) {
  using V = std::vector<std::string_view>;
  EXPECT_EQ(splitText("a,b,c", ','), (V{"a", "b", "c"}));
  EXPECT_EQ(splitText("a,,b", ','), (V{"a", "", "b"}));
  EXPECT_EQ(splitText("a,", ','), (V{"a", ""}));
  EXPECT_EQ(splitText("", ','), (V{""}));
  EXPECT_EQ(splitText("a b", ','), (V{"a b"}));
  EXPECT_EQ(splitText("x  y", ' '), (V{"x", "", "y"}));
}
