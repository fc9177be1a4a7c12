//===- StopSignalsTest.cpp - stop signals set a flag, bounded by a grace ---===//
#include "runtime/support/StopSignals.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

namespace {
using trc::rt::StopSignals;

TEST(StopSignals, CaughtSignalsAreRecordedNotFatal) {
  {
    StopSignals guard(0);
    EXPECT_EQ(StopSignals::pending(), 0);
    std::raise(SIGUSR1);
    EXPECT_EQ(StopSignals::pending(), SIGUSR1);
    std::raise(SIGTERM); // the first one is kept
    EXPECT_EQ(StopSignals::pending(), SIGUSR1);
  }
  StopSignals again(0); // a new guard starts clean
  EXPECT_EQ(StopSignals::pending(), 0);
}

TEST(StopSignals, Names) {
  EXPECT_EQ(StopSignals::name(SIGTERM), "SIGTERM");
  EXPECT_EQ(StopSignals::name(SIGINT), "SIGINT");
  EXPECT_EQ(StopSignals::name(SIGUSR1), "SIGUSR1");
  EXPECT_EQ(StopSignals::name(SIGHUP), "signal " + std::to_string(SIGHUP));
}

// A stop that does not happen within the grace ends the process.
TEST(StopSignalsDeathTest, TheGraceEndsAStopThatTakesTooLong) {
  EXPECT_EXIT(
      {
        StopSignals guard(0.2);
        std::raise(SIGTERM);
        std::this_thread::sleep_for(std::chrono::seconds(30));
      },
      ::testing::ExitedWithCode(128 + SIGTERM),
      "^error: SIGTERM: the step in flight and its checkpoint did not finish within "
      "--signal-grace 0.2 s; ending without a new checkpoint\n$");
}

} // namespace
