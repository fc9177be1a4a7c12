//===- ProfileSummaryTest.cpp - the --profile-summary arithmetic -----------===//
//
// ProfileSummary.h on a timeline whose answer is worked out by hand: the
// four shares partition the step time with communication first (a
// collective inside a program counts once), phases outside programs are
// host time, gaps are idle, spans outside steps count in no share;
// consumers are inclusive totals with counts and percentages of the step
// time, longest first, cut to the top N; a timeline without step spans
// uses its extent.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/ProfileSummary.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {
using namespace trc::rt;
using ::testing::HasSubstr;

Span span(std::string name, const char *category, double startMs, double durMs) {
  Span s;
  s.name = std::move(name);
  s.category = category;
  s.lane = profile::defaultLane(category);
  s.startNs = int64_t(startMs * 1e6);
  s.durationNs = int64_t(durMs * 1e6);
  return s;
}

RankTimeline handWorked() {
  RankTimeline t;
  t.rank = 1;
  t.label = "rank 1 (data 1, tensor 0)";
  t.spans = {
      // Step 1, 0-100 ms: data 10, feed 10, compute phase 20-80 holding a
      // program 21-79 that holds a collective 50-60, update 80-90, idle 90-100.
      span("step", profile::kStep, 0, 100),
      span("data", profile::kPhase, 0, 10),
      span("feed", profile::kPhase, 10, 10),
      span("compute", profile::kPhase, 20, 60),
      span("program step", profile::kProgram, 21, 58),
      span("all-reduce world", profile::kCollective, 50, 10),
      span("update", profile::kPhase, 80, 10),
      // Step 2, 200-250 ms: a recv waits 10 ms, the rest is idle.
      span("step", profile::kStep, 200, 50),
      span("recv from rank 0", profile::kP2p, 210, 10),
      // Outside every step: in the consumers, in no share.
      span("compute", profile::kPhase, 300, 10),
      // A category of the caller's own: a consumer, no share.
      span("marker", "custom", 0, 1),
  };
  return t;
}

TEST(ProfileSummaryTest, SharesPartitionTheStepTime) {
  RankProfileSummary s = summarizeTimeline(handWorked());
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.steps, 2);
  EXPECT_NEAR(s.stepMs, 150, 1e-6);
  EXPECT_NEAR(s.communicationMs, 20, 1e-6);  // 50-60 and 210-220
  EXPECT_NEAR(s.computeMs, 48, 1e-6);        // 21-79 less the collective
  EXPECT_NEAR(s.hostMs, 32, 1e-6);           // 10 + 10 + 1 + 1 + 10
  EXPECT_NEAR(s.idleMs, 50, 1e-6);           // 90-100 and 40 ms of step 2
  EXPECT_NEAR(s.computeMs + s.communicationMs + s.hostMs + s.idleMs, s.stepMs, 1e-9);
}

TEST(ProfileSummaryTest, ConsumersAreInclusiveTotalsLongestFirst) {
  RankProfileSummary s = summarizeTimeline(handWorked(), 3);
  ASSERT_EQ(s.top.size(), 3u);
  EXPECT_EQ(s.top[0].name, "compute"); // 60 + 10, both compute phases
  EXPECT_EQ(s.top[0].category, "phase");
  EXPECT_EQ(s.top[0].count, 2);
  EXPECT_NEAR(s.top[0].totalMs, 70, 1e-6);
  EXPECT_NEAR(s.top[0].percentOfSteps, 100.0 * 70 / 150, 1e-6);
  EXPECT_EQ(s.top[1].name, "program step");
  EXPECT_NEAR(s.top[1].totalMs, 58, 1e-6);
  EXPECT_EQ(s.top[2].totalMs, 10); // one of the 10 ms spans
  for (const ProfileConsumer &c : summarizeTimeline(handWorked(), 100).top)
    EXPECT_NE(c.category, "step"); // steps are the denominator, not a consumer
  EXPECT_EQ(summarizeTimeline(handWorked(), 100).top.size(), 8u);
}

TEST(ProfileSummaryTest, WithoutStepsTheExtentIsTheStepTime) {
  RankTimeline t;
  t.spans = {span("forward", profile::kCompute, 10, 30),
             span("send to rank 1", profile::kP2p, 40, 10)};
  RankProfileSummary s = summarizeTimeline(t);
  EXPECT_EQ(s.steps, 0);
  EXPECT_EQ(s.label, "rank 0");
  EXPECT_NEAR(s.stepMs, 40, 1e-6);
  EXPECT_NEAR(s.computeMs, 30, 1e-6);
  EXPECT_NEAR(s.communicationMs, 10, 1e-6);
  EXPECT_NEAR(summarizeTimeline(RankTimeline{}).stepMs, 0, 0);
}

TEST(ProfileSummaryTest, TextNamesTheRankItsSharesAndConsumers) {
  std::string text = formatProfileSummary({summarizeTimeline(handWorked(), 2)});
  EXPECT_THAT(text, HasSubstr("rank 1 (data 1, tensor 0): 2 steps, 150.000 ms: compute 32.0%, "
                              "communication 13.3%, host 21.3%, idle 33.3%"));
  EXPECT_THAT(text, HasSubstr("compute"));
  EXPECT_THAT(text, HasSubstr("70.000"));
  EXPECT_THAT(text, HasSubstr("46.7%"));
  EXPECT_THAT(text, HasSubstr("program step"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("all-reduce world"))); // cut to the top 2
}

} // namespace
