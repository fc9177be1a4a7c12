//===- ProfilerTest.cpp - the span recorder behind --profile ---------------===//
//
// Profiler.h: nothing is recorded while off (scopes inactive, args
// ignored); once started, nested scopes are recorded child first, each
// inside its parent's interval, with their category's default lane and
// their args typed; pause() skips spans without moving the origin; a
// timeline survives its byte form (odd strings included) and truncated or
// foreign bytes are errors, not crashes.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Profiler.h"

#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace {
using namespace trc::rt;

/// Leaves the process-wide profiler stopped and empty.
struct ProfilerReset {
  ~ProfilerReset() {
    Profiler::instance().stop();
    Profiler::instance().takeSpans();
  }
};

TEST(ProfilerTest, OffRecordsNothing) {
  ProfilerReset reset;
  ASSERT_FALSE(Profiler::recording());
  {
    ProfileScope scope("data");
    EXPECT_FALSE(scope.active());
    scope.arg("bytes", int64_t(5)).arg("group", "world");
  }
  EXPECT_TRUE(Profiler::instance().takeSpans().empty());
}

TEST(ProfilerTest, NestedScopesAreRecordedInsideTheirParent) {
  ProfilerReset reset;
  Profiler::instance().start();
  {
    ProfileScope compute("compute");
    ProfileScope program("program step", profile::kProgram);
    {
      ProfileScope collective("all-reduce world", profile::kCollective);
      EXPECT_TRUE(collective.active());
      collective.arg("bytes", int64_t(256)).arg("group", "world").arg("ratio", 0.5);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  Profiler::instance().stop();
  std::vector<Span> spans = Profiler::instance().takeSpans();
  ASSERT_EQ(spans.size(), 3u);
  // Ended innermost first.
  EXPECT_EQ(spans[0].name, "all-reduce world");
  EXPECT_EQ(spans[1].name, "program step");
  EXPECT_EQ(spans[2].name, "compute");
  EXPECT_EQ(spans[0].lane, profile::kCommLane);
  EXPECT_EQ(spans[1].lane, profile::kComputeLane);
  EXPECT_EQ(spans[2].category, profile::kPhase);
  EXPECT_GE(spans[0].durationNs, 2'000'000);
  for (int inner = 0; inner < 2; ++inner) {
    EXPECT_GE(spans[inner].startNs, spans[inner + 1].startNs);
    EXPECT_LE(spans[inner].endNs(), spans[inner + 1].endNs());
  }
  ASSERT_EQ(spans[0].args.size(), 3u);
  EXPECT_EQ(spans[0].args[0], (SpanArg{"bytes", "256", true}));
  EXPECT_EQ(spans[0].args[1], (SpanArg{"group", "world", false}));
  EXPECT_EQ(spans[0].args[2], (SpanArg{"ratio", "0.5", true}));
  EXPECT_TRUE(spans[1].args.empty());
}

TEST(ProfilerTest, PausedStepsAreSkippedAndTheOriginStays) {
  ProfilerReset reset;
  Profiler &p = Profiler::instance();
  p.start();
  { ProfileScope first("first"); }
  p.pause();
  { ProfileScope skipped("skipped"); }
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  p.resume();
  { ProfileScope last("last"); }
  p.stop();
  { ProfileScope after("after stop"); }
  std::vector<Span> spans = p.takeSpans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].name, "first");
  EXPECT_EQ(spans[1].name, "last");
  EXPECT_GE(spans[1].startNs - spans[0].startNs, 2'000'000);
  // resume() after stop() does not restart.
  p.resume();
  EXPECT_FALSE(Profiler::recording());
}

TEST(ProfilerTest, TimelineBytesRoundTrip) {
  RankTimeline t;
  t.rank = 3;
  t.label = "rank 3 (data 1, tensor 1)";
  Span s;
  s.name = std::string("odd \"name\"\n\t\\ \xc3\xa9 ") + std::string(1, '\0') + "end";
  s.category = profile::kCollective;
  s.lane = "comm";
  s.startNs = -5;
  s.durationNs = 123456789012;
  s.args = {{"bytes", "1024", true}, {"group", "te\"nsor", false}};
  t.spans = {s, Span{}};
  std::string bytes = serializeTimeline(t);
  TRC_ASSERT_OK_AND_ASSIGN(RankTimeline back, parseTimeline(bytes));
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.label, t.label);
  ASSERT_EQ(back.spans.size(), 2u);
  EXPECT_EQ(back.spans[0].name, s.name);
  EXPECT_EQ(back.spans[0].startNs, -5);
  EXPECT_EQ(back.spans[0].durationNs, 123456789012);
  EXPECT_EQ(back.spans[0].args, s.args);
  // Every truncation is an error, and so are foreign bytes.
  for (size_t n = 0; n < bytes.size(); n += 7)
    EXPECT_FALSE(parseTimeline(std::string_view(bytes).substr(0, n)).ok()) << n;
  EXPECT_FALSE(parseTimeline(bytes + "x").ok());
  EXPECT_FALSE(parseTimeline("not a timeline").ok());
  // A huge span count in a short buffer is refused before allocating.
  std::string huge = bytes.substr(0, bytes.find("rank 3") + t.label.size());
  int64_t count = int64_t(1) << 60;
  huge.append(reinterpret_cast<const char *>(&count), 8);
  EXPECT_FALSE(parseTimeline(huge).ok());
}

} // namespace
