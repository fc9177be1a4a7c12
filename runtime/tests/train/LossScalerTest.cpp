//===- LossScalerTest.cpp - fp16's dynamic loss scale ----------------------===//
//
// LossScaler's skip / back-off / growth policy.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/LossScaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace trc::rt;

TEST(LossScaler, SkipsOverflowsBacksOffAndGrows) {
  LossScaler s;
  s.interval = 3;
  EXPECT_EQ(s.scale, 65536.0);
  EXPECT_FALSE(s.update(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(s.scale, 32768.0);
  EXPECT_FALSE(s.update(std::nan("")));
  EXPECT_EQ(s.scale, 16384.0);
  EXPECT_TRUE(s.update(1.0));
  EXPECT_TRUE(s.update(2.0));
  EXPECT_EQ(s.scale, 16384.0);
  EXPECT_TRUE(s.update(3.0)); // the third good step in a row doubles it
  EXPECT_EQ(s.scale, 32768.0);
  EXPECT_EQ(s.goodSteps, 0);
  EXPECT_TRUE(s.update(1.0));
  EXPECT_FALSE(s.update(INFINITY)); // an overflow restarts the count
  EXPECT_EQ(s.goodSteps, 0);
  s.scale = 1.0;
  EXPECT_FALSE(s.update(INFINITY));
  EXPECT_EQ(s.scale, 1.0); // never below 1
}
