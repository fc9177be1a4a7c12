//===- ChromeTraceTest.cpp - the --profile file's JSON ---------------------===//
//
// ChromeTrace.h, read back with the project's strict JSON parser: one
// process per rank named by its label, one thread per lane (compute 1,
// comm 2), "X" events in microseconds whose nesting the viewers can see
// (the program inside the compute phase inside the step), args typed, and
// names with quotes, newlines and non-ASCII text escaped so that they
// decode to themselves.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/ChromeTrace.h"

#include "runtime/formats/Json.h"

#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace {
using namespace trc::rt;

Span span(std::string name, const char *category, int64_t startUs, int64_t durUs) {
  Span s;
  s.name = std::move(name);
  s.category = category;
  s.lane = profile::defaultLane(category);
  s.startNs = startUs * 1000;
  s.durationNs = durUs * 1000;
  return s;
}

std::string text(const JsonValue *v) { return v && v->isString() ? v->text() : "<missing>"; }
double number(const JsonValue *v) {
  double d = -1;
  if (!v || !v->asDouble(d))
    return -1;
  return d;
}

const std::string kOddName = "say \"hi\"\n\ttab \\ caf\xc3\xa9";

std::vector<RankTimeline> twoRanks() {
  RankTimeline r0, r1;
  r0.rank = 0;
  r0.label = "rank 0 (data 0, tensor 0)";
  r1.rank = 1;
  r1.label = "rank 1 (data 0, tensor 1)";
  Span collective = span("all-reduce tensor", profile::kCollective, 300, 100);
  collective.args = {{"bytes", "256", true}, {"group", "tensor", false}};
  // Recorded innermost first, as scopes end.
  r0.spans = {collective, span("program step", profile::kProgram, 210, 500),
              span("compute", profile::kPhase, 200, 600), span("step", profile::kStep, 0, 1000)};
  r1.spans = {span(kOddName, profile::kPhase, 1, 2), span("step", profile::kStep, 0, 900)};
  r1.spans[0].lane = "pipeline";
  return {r0, r1};
}

TEST(ChromeTraceTest, ParsesBackWithProcessesLanesAndNesting) {
  std::string json = chromeTraceJson(twoRanks());
  TRC_ASSERT_OK_AND_ASSIGN(JsonValue doc, parseJson(json));
  EXPECT_EQ(text(doc.find("displayTimeUnit")), "ms");
  const JsonValue *events = doc.find("traceEvents");
  ASSERT_TRUE(events && events->isArray());

  std::map<int64_t, std::string> processNames;
  std::map<std::pair<int64_t, int64_t>, std::string> threadNames;
  std::map<std::pair<int64_t, std::string>, const JsonValue *> complete; // by pid, name
  std::map<int64_t, int> completeByPid;
  for (const JsonValue &e : events->elements()) {
    int64_t pid = -1, tid = -1;
    ASSERT_TRUE(e.find("pid") && e.find("pid")->asInt64(pid));
    ASSERT_TRUE(e.find("tid") && e.find("tid")->asInt64(tid));
    std::string ph = text(e.find("ph"));
    if (ph == "M") {
      const JsonValue *args = e.find("args");
      ASSERT_TRUE(args);
      if (text(e.find("name")) == "process_name")
        processNames[pid] = text(args->find("name"));
      if (text(e.find("name")) == "thread_name")
        threadNames[{pid, tid}] = text(args->find("name"));
      continue;
    }
    ASSERT_EQ(ph, "X");
    ++completeByPid[pid];
    complete[{pid, text(e.find("name"))}] = &e;
  }
  EXPECT_EQ(processNames[0], "rank 0 (data 0, tensor 0)");
  EXPECT_EQ(processNames[1], "rank 1 (data 0, tensor 1)");
  EXPECT_EQ((threadNames[{0, 1}]), "compute");
  EXPECT_EQ((threadNames[{0, 2}]), "comm");
  EXPECT_EQ((threadNames[{1, 3}]), "pipeline"); // a lane of the caller's own
  EXPECT_EQ(completeByPid[0], 4);
  EXPECT_EQ(completeByPid[1], 2);

  // The escaped name decodes to itself.
  ASSERT_TRUE(complete.count({1, kOddName}));
  EXPECT_EQ(number(complete[{1, kOddName}]->find("tid")), 3);

  // Microseconds; the collective on the comm lane; args typed.
  const JsonValue *collective = complete[{0, "all-reduce tensor"}];
  EXPECT_EQ(number(collective->find("ts")), 300);
  EXPECT_EQ(number(collective->find("dur")), 100);
  EXPECT_EQ(number(collective->find("tid")), 2);
  EXPECT_EQ(text(collective->find("cat")), "collective");
  const JsonValue *args = collective->find("args");
  ASSERT_TRUE(args);
  EXPECT_TRUE(args->find("bytes")->isNumber());
  EXPECT_EQ(number(args->find("bytes")), 256);
  EXPECT_EQ(text(args->find("group")), "tensor");

  // Nesting: program inside compute inside step, on one lane.
  auto inside = [&](const char *inner, const char *outer) {
    const JsonValue *a = complete[{0, inner}], *b = complete[{0, outer}];
    double as = number(a->find("ts")), ae = as + number(a->find("dur"));
    double bs = number(b->find("ts")), be = bs + number(b->find("dur"));
    return bs <= as && ae <= be && number(a->find("tid")) == number(b->find("tid"));
  };
  EXPECT_TRUE(inside("program step", "compute"));
  EXPECT_TRUE(inside("compute", "step"));
  EXPECT_FALSE(inside("step", "compute"));
}

TEST(ChromeTraceTest, EventsOfARankAreSortedOuterFirst) {
  std::string json = chromeTraceJson(twoRanks());
  // Viewers nest a span in the one before it: the step comes first.
  size_t step = json.find("\"name\":\"step\",\"cat\""),
         compute = json.find("\"name\":\"compute\",\"cat\""),
         program = json.find("\"name\":\"program step\",\"cat\"");
  ASSERT_NE(program, std::string::npos);
  EXPECT_LT(step, compute);
  EXPECT_LT(compute, program);
}

TEST(ChromeTraceTest, NoSpansIsStillAValidFile) {
  TRC_ASSERT_OK_AND_ASSIGN(JsonValue doc, parseJson(chromeTraceJson({})));
  ASSERT_TRUE(doc.find("traceEvents"));
  EXPECT_TRUE(doc.find("traceEvents")->elements().empty());
  RankTimeline empty;
  TRC_ASSERT_OK_AND_ASSIGN(JsonValue one, parseJson(chromeTraceJson({empty})));
  EXPECT_FALSE(one.find("traceEvents")->elements().empty()); // its metadata
}

} // namespace
