//===- ProfileTrainerTest.cpp - runTrainer with --profile, end to end ------===//
//
// A real training loop (one process) on the hand-written training step of
// TestTrainingProgram.c, saved as TestTrainingStep.h writes it: with a
// profile path the trace holds rank 0's process, one step span per step,
// each step's phases inside it, one program span inside each compute
// phase, and the collectives the program issued (all-reduce over the world
// and tensor groups, with their bytes) inside the program span; the
// summary goes to stderr; --profile-steps N keeps the last N steps; an
// unwritable path is an error naming it before any step runs; without the
// flags nothing is recorded.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Json.h"
#include "runtime/support/Profiler.h"
#include "runtime/train/RunProfile.h"
#include "runtime/train/Trainer.h"

#include "StatusTesting.h"
#include "TestArtifact.h"
#include "TestTrainingStep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

namespace {
using namespace trc::rt;
using ::testing::HasSubstr;

struct Event {
  std::string name, category;
  double ts = 0, dur = 0;
  int64_t pid = -1, tid = -1;
  const JsonValue *args = nullptr;
  bool contains(const Event &e) const {
    return tid == e.tid && pid == e.pid && ts <= e.ts && e.ts + e.dur <= ts + dur;
  }
};

class ProfileTrainer : public ::testing::Test {
protected:
  void SetUp() override {
    step_ = dir_.file("step");
    std::filesystem::create_directory(step_);
    ASSERT_TRUE(test::writeTestTrainingStep(step_));
    test::writeTestTokens(dir_.file("tokens.bin"));
    options_.model = step_;
    options_.device = "cpu";
    options_.data = dir_.file("tokens.bin");
    options_.batchSize = test::kStepRows;
    options_.seqLen = test::kStepSeq;
    options_.steps = 3;
    options_.optimizer.name = "adamw";
  }

  /// The trace's complete events and its process names.
  void readTrace(const std::string &path) {
    text_ = test::readFile(path);
    TRC_ASSERT_OK_AND_ASSIGN(doc_, parseJson(text_));
    const JsonValue *events = doc_.find("traceEvents");
    ASSERT_TRUE(events && events->isArray());
    for (const JsonValue &e : events->elements()) {
      Event ev;
      ev.name = e.find("name")->text();
      ASSERT_TRUE(e.find("pid")->asInt64(ev.pid));
      if (e.find("ph")->text() == "C") { // a counter sample: the process's, no thread
        ev.category = e.find("cat")->text();
        ASSERT_TRUE(e.find("ts")->asDouble(ev.ts));
        ev.args = e.find("args");
        counters_.push_back(ev);
        continue;
      }
      ASSERT_TRUE(e.find("tid")->asInt64(ev.tid));
      if (e.find("ph")->text() == "M") {
        if (ev.name == "process_name")
          processNames_[ev.pid] = e.find("args")->find("name")->text();
        continue;
      }
      ev.category = e.find("cat")->text();
      ASSERT_TRUE(e.find("ts")->asDouble(ev.ts));
      ASSERT_TRUE(e.find("dur")->asDouble(ev.dur));
      ev.args = e.find("args");
      events_.push_back(ev);
    }
  }
  std::vector<Event> named(const std::string &name) const {
    std::vector<Event> out;
    for (const Event &e : events_)
      if (e.name == name)
        out.push_back(e);
    return out;
  }

  test::TempDir dir_;
  std::string step_;
  TrainerOptions options_;
  std::string text_;
  JsonValue doc_;
  std::vector<Event> events_;
  std::vector<Event> counters_; // "ph":"C" events
  std::map<int64_t, std::string> processNames_;
};

// Each rank's utilisation is sampled at the start, before every recorded
// step and at the end: counter events of its process, in time order, with
// the CPU share of the interval before and the resident memory.
TEST_F(ProfileTrainer, UtilisationSamplesAreCounterTracks) {
  options_.profilePath = dir_.file("trace.json");
  ASSERT_TRUE(runTrainer(options_, nullptr).ok());
  readTrace(options_.profilePath);
  ASSERT_EQ(counters_.size(), size_t(options_.steps + 2));
  for (size_t i = 0; i < counters_.size(); ++i) {
    const Event &c = counters_[i];
    EXPECT_EQ(c.name, "utilisation");
    EXPECT_EQ(c.category, "counter");
    EXPECT_EQ(c.pid, 0);
    if (i)
      EXPECT_GE(c.ts, counters_[i - 1].ts);
    double cpu = -1, rss = -1;
    ASSERT_TRUE(c.args && c.args->find("cpu_percent")->asDouble(cpu));
    ASSERT_TRUE(c.args->find("rss_mb")->asDouble(rss));
    EXPECT_GE(cpu, 0);
    EXPECT_GT(rss, 1); // this test process holds more than a MiB
  }
}

TEST_F(ProfileTrainer, TraceNestsProgramsAndCollectivesInsideStepPhases) {
  options_.profilePath = dir_.file("trace.json");
  options_.profileSummary = true;
  std::vector<double> losses;
  ::testing::internal::CaptureStderr();
  Status s = runTrainer(options_, nullptr, [&](const StepResult &r) { losses.push_back(r.loss); });
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(s.ok()) << s.message() << err;
  ASSERT_EQ(losses.size(), 3u);
  EXPECT_LT(losses[2], losses[0]); // it trains
  EXPECT_FALSE(Profiler::recording());

  readTrace(options_.profilePath);
  EXPECT_EQ(processNames_[0], "rank 0 (data 0, tensor 0)");
  EXPECT_EQ(processNames_.size(), 1u);
  std::vector<Event> steps = named("step");
  ASSERT_EQ(steps.size(), 3u);
  for (size_t i = 0; i < steps.size(); ++i) {
    int64_t number = 0;
    ASSERT_TRUE(steps[i].args && steps[i].args->find("step")->asInt64(number));
    EXPECT_EQ(number, int64_t(i) + 1);
  }
  for (const char *phase : {"data", "feed", "compute", "readback", "update"}) {
    std::vector<Event> phases = named(phase);
    ASSERT_EQ(phases.size(), 3u) << phase;
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(phases[i].category, "phase");
      EXPECT_TRUE(steps[i].contains(phases[i])) << phase << " of step " << i + 1;
    }
  }
  std::vector<Event> programs = named("program step"), computes = named("compute");
  ASSERT_EQ(programs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(programs[i].category, "program");
    EXPECT_TRUE(computes[i].contains(programs[i])) << "program run " << i + 1;
  }
  // Two world all-reduces (gradient, loss) and one tensor all-reduce per
  // run, each inside its program's interval, on the comm lane.
  std::vector<Event> world = named("all-reduce world"), tensor = named("all-reduce tensor");
  ASSERT_EQ(world.size(), 6u);
  ASSERT_EQ(tensor.size(), 3u);
  int64_t bytes = 0, ranks = 0;
  ASSERT_TRUE(world[0].args && world[0].args->find("bytes")->asInt64(bytes));
  ASSERT_TRUE(world[0].args->find("ranks")->asInt64(ranks));
  EXPECT_EQ(bytes, 64 * 4); // the gradient of W, first
  EXPECT_EQ(ranks, 1);
  EXPECT_EQ(world[0].args->find("group")->text(), "world");
  for (const Event &c : world) {
    EXPECT_EQ(c.category, "collective");
    EXPECT_EQ(c.tid, 2);
    bool inAProgram = false;
    for (const Event &p : programs)
      inAProgram |= p.ts <= c.ts && c.ts + c.dur <= p.ts + p.dur;
    EXPECT_TRUE(inAProgram);
  }

  EXPECT_THAT(err, HasSubstr("trc-run: profile of steps 1-3 (the first, warm-up step included"));
  EXPECT_THAT(err, HasSubstr("trace in " + options_.profilePath));
  EXPECT_THAT(err, HasSubstr("rank 0 (data 0, tensor 0): 3 steps, "));
  EXPECT_THAT(err, HasSubstr("program step"));
}

TEST_F(ProfileTrainer, ProfileStepsKeepsTheLastSteps) {
  options_.profilePath = dir_.file("trace.json");
  options_.profileSteps = 2;
  ::testing::internal::CaptureStderr();
  Status s = runTrainer(options_, nullptr);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(s.ok()) << s.message();
  readTrace(options_.profilePath);
  std::vector<Event> steps = named("step");
  ASSERT_EQ(steps.size(), 2u);
  int64_t first = 0;
  ASSERT_TRUE(steps[0].args->find("step")->asInt64(first));
  EXPECT_EQ(first, 2);
  EXPECT_EQ(named("program step").size(), 2u);
  EXPECT_EQ(named("all-reduce world").size(), 4u);
  EXPECT_THAT(err, HasSubstr("profile of steps 2-3 (earlier steps, warm-up included, not "
                             "recorded)"));
  EXPECT_THAT(err, ::testing::Not(HasSubstr("communication"))); // no --profile-summary
}

TEST_F(ProfileTrainer, SummaryWithoutAFile) {
  options_.profileSummary = true;
  ::testing::internal::CaptureStderr();
  Status s = runTrainer(options_, nullptr);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_THAT(err, HasSubstr("rank 0 (data 0, tensor 0): 3 steps"));
  EXPECT_THAT(err, ::testing::Not(HasSubstr("trace in")));
}

TEST_F(ProfileTrainer, UnwritablePathIsAnErrorBeforeTraining) {
  for (std::string path : {dir_.file("no-such-folder/trace.json"), dir_.path()}) {
    options_.profilePath = path;
    int steps = 0;
    Status s = runTrainer(options_, nullptr, [&](const StepResult &) { ++steps; });
    ASSERT_FALSE(s.ok()) << path;
    EXPECT_THAT(s.message(), HasSubstr("--profile " + path + ": cannot write the trace"));
    EXPECT_EQ(steps, 0) << "trained before refusing " << path;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.file("no-such-folder")));
}

TEST_F(ProfileTrainer, ProfileOptionsAreChecked) {
  options_.profileSteps = 2;
  EXPECT_EQ(test::errorOf(validateTrainerOptions(options_)),
            "--profile-steps needs --profile FILE or --profile-summary");
  options_.profileSteps = -1;
  options_.profileSummary = true;
  EXPECT_THAT(test::errorOf(validateTrainerOptions(options_)),
              HasSubstr("'--profile-steps' expects a positive integer"));
}

// Which steps the headline says were recorded, warm-up included or not
// (a resumed run's first step is its warm-up).
TEST_F(ProfileTrainer, HeadlineSaysWhetherTheWarmUpStepIsIn) {
  options_.profilePath = "t.json";
  EXPECT_THAT(profileHeadline(options_, 0, 0, 3),
              HasSubstr("profile of steps 1-3 (the first, warm-up step included"));
  EXPECT_THAT(profileHeadline(options_, 5, 5, 8), HasSubstr("steps 6-8 (the first, warm-up"));
  EXPECT_THAT(profileHeadline(options_, 0, 2, 3),
              HasSubstr("profile of step 3 (earlier steps, warm-up included, not recorded)"));
  EXPECT_THAT(profileHeadline(options_, 3, 3, 3), HasSubstr("profile of no steps (none ran)"));
  EXPECT_THAT(profileHeadline(options_, 0, 0, 3), HasSubstr("trace in t.json"));
}

TEST_F(ProfileTrainer, WithoutTheFlagsNothingIsRecorded) {
  Status s = runTrainer(options_, nullptr);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(Profiler::recording());
  EXPECT_TRUE(Profiler::instance().takeSpans().empty());
}

} // namespace
