//===- ProfileMpiTest.cpp - trc-run --profile on two MPI ranks -------------===//
//
// `mpirun -np 2 trc-run STEP --profile trace.json --profile-summary` on the
// hand-written training step (TestTrainingStep.h), data parallel and then
// tensor parallel: rank 0 writes one trace with two processes named by
// their grid position, each with its steps and the collectives its program
// issued over a group of 2 ranks; the ranks' clocks line up (a blocking
// all-reduce cannot end on one rank before it started on the other, so
// the two ranks' spans of the same all-reduce overlap); the summary names
// both ranks. Skipped where mpirun is not installed (TRC_TEST_MPIRUN or
// PATH, as MpiLaunchTest.cpp finds it).
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Json.h"

#include "TestArtifact.h"
#include "TestTrainingStep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sys/wait.h>
#include <unistd.h>

namespace {
using namespace trc::rt;
using ::testing::HasSubstr;

std::string mpirunPath() {
  if (const char *path = std::getenv("TRC_TEST_MPIRUN"))
    return path;
  for (const char *dir : {"/usr/bin", "/usr/local/bin"})
    if (::access((std::string(dir) + "/mpirun").c_str(), X_OK) == 0)
      return std::string(dir) + "/mpirun";
  return "";
}

std::string shellQuoted(const std::string &s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs `command` under a 120 s limit; its exit code and output.
int runCommand(const std::string &command, std::string &output) {
  std::string line = "timeout -s KILL 120 " + command + " 2>&1";
  FILE *pipe = ::popen(line.c_str(), "r");
  if (!pipe)
    return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0)
    output.append(buf, n);
  int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Event {
  std::string name;
  double ts = 0, dur = 0;
  int64_t ranks = 0;
};

class ProfileMpi : public ::testing::Test {
protected:
  void SetUp() override {
    mpirun_ = mpirunPath();
    if (mpirun_.empty())
      GTEST_SKIP() << "mpirun not found (install openmpi-bin): the 2-rank profile test skipped";
    for (const char *name : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                             "SLURM_STEP_ID", "SLURM_STEPID", "TRC_MPI_LIBRARY"})
      ::unsetenv(name);
    ::setenv("TRC_COLLECTIVE_TIMEOUT_S", "60", 1);
    if (::geteuid() == 0) {
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
      ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    test::writeTestTokens(dir_.file("tokens.bin"));
  }

  /// Trains the step saved for `plan` on 2 ranks with --profile; the trace's
  /// events by pid, and the process names.
  void trainOnTwoRanks(const test::TestStepPlan &plan, const std::string &config) {
    std::string step = dir_.file("step"), trace = dir_.file("trace.json");
    std::filesystem::create_directory(step);
    ASSERT_TRUE(test::writeTestTrainingStep(step, plan));
    std::string command = shellQuoted(mpirun_) + " --oversubscribe -np 2 " + shellQuoted(TRC_TEST_TRC_RUN) +
                          " " + shellQuoted(step) + " --data " + shellQuoted(dir_.file("tokens.bin")) +
                          " --batch-size " + std::to_string(test::kStepRows * plan.dataRanks) +
                          " --seq-len 8 --steps 3 --profile " + shellQuoted(trace) +
                          " --profile-summary";
    if (!config.empty())
      command += " --config " + shellQuoted(config);
    int code = runCommand(command, output_);
    ASSERT_EQ(code, 0) << output_;
    std::string text = test::readFile(trace);
    StatusOr<JsonValue> doc = parseJson(text);
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    for (const JsonValue &e : doc->find("traceEvents")->elements()) {
      int64_t pid = -1;
      ASSERT_TRUE(e.find("pid")->asInt64(pid));
      if (e.find("ph")->text() == "M") {
        if (e.find("name")->text() == "process_name")
          names_[pid] = e.find("args")->find("name")->text();
        continue;
      }
      if (e.find("ph")->text() == "C") { // a utilisation sample of rank `pid`
        ++counters_[pid];
        continue;
      }
      Event ev;
      ev.name = e.find("name")->text();
      ASSERT_TRUE(e.find("ts")->asDouble(ev.ts));
      ASSERT_TRUE(e.find("dur")->asDouble(ev.dur));
      if (const JsonValue *args = e.find("args"))
        if (const JsonValue *ranks = args->find("ranks"))
          ranks->asInt64(ev.ranks);
      events_[pid].push_back(ev);
    }
  }

  std::vector<Event> named(int64_t pid, const std::string &name) {
    std::vector<Event> out;
    for (const Event &e : events_[pid])
      if (e.name == name)
        out.push_back(e);
    return out;
  }

  /// The same all-reduce on both ranks overlaps in time: one clock origin.
  void expectAlignedCollectives(const std::string &name) {
    std::vector<Event> a = named(0, name), b = named(1, name);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].ranks, 2) << name;
      double slackUs = 50'000; // the barrier's exit is not simultaneous
      EXPECT_LE(std::max(a[i].ts, b[i].ts), std::min(a[i].ts + a[i].dur, b[i].ts + b[i].dur) +
                                                slackUs)
          << name << " #" << i << ": rank 0 at " << a[i].ts << "+" << a[i].dur << " us, rank 1 at "
          << b[i].ts << "+" << b[i].dur << " us";
    }
  }

  std::string mpirun_, output_;
  test::TempDir dir_;
  std::map<int64_t, std::vector<Event>> events_;
  std::map<int64_t, int64_t> counters_; // "ph":"C" events per rank
  std::map<int64_t, std::string> names_;
};

TEST_F(ProfileMpi, DataParallelRunWritesOneTraceWithTwoRanks) {
  trainOnTwoRanks({2, 2, "zero-stage=0 shard-degree=1 bucket-mb=25.000000"}, "");
  EXPECT_EQ(names_.size(), 2u);
  EXPECT_EQ(names_[0], "rank 0 (data 0, tensor 0)");
  EXPECT_EQ(names_[1], "rank 1 (data 1, tensor 0)");
  for (int64_t pid : {0, 1}) {
    EXPECT_EQ(named(pid, "step").size(), 3u) << "rank " << pid;
    EXPECT_EQ(named(pid, "program step").size(), 3u) << "rank " << pid;
    // Each rank's own utilisation track: start, before each step, end.
    EXPECT_EQ(counters_[pid], 5) << "rank " << pid;
  }
  expectAlignedCollectives("all-reduce world");
  EXPECT_THAT(output_, HasSubstr("rank 0 (data 0, tensor 0): 3 steps"));
  EXPECT_THAT(output_, HasSubstr("rank 1 (data 1, tensor 0): 3 steps"));
  EXPECT_THAT(output_, HasSubstr("all-reduce world"));
}

TEST_F(ProfileMpi, TensorParallelRanksAreNamedByTheirTensorIndex) {
  trainOnTwoRanks({2, 1,
                   "zero-stage=0 shard-degree=1 bucket-mb=25.000000 tensor-parallel: degree=2 "
                   "sequence-parallel=false"},
                  R"({"tensor_parallel_degree": 2})");
  EXPECT_EQ(names_[0], "rank 0 (data 0, tensor 0)");
  EXPECT_EQ(names_[1], "rank 1 (data 0, tensor 1)");
  expectAlignedCollectives("all-reduce tensor");
  EXPECT_THAT(output_, HasSubstr("rank 1 (data 0, tensor 1): 3 steps"));
}

TEST_F(ProfileMpi, UnwritablePathStopsEveryRankBeforeTraining) {
  std::string step = dir_.file("step");
  std::filesystem::create_directory(step);
  ASSERT_TRUE(test::writeTestTrainingStep(step, {2, 2, "zero-stage=0 shard-degree=1 "
                                                       "bucket-mb=25.000000"}));
  std::string bad = dir_.file("missing/trace.json");
  std::string command = shellQuoted(mpirun_) + " --oversubscribe -np 2 " + shellQuoted(TRC_TEST_TRC_RUN) +
                        " " + shellQuoted(step) + " --data " + shellQuoted(dir_.file("tokens.bin")) +
                        " --batch-size 4 --seq-len 8 --steps 3 --profile " + shellQuoted(bad);
  int code = runCommand(command, output_);
  EXPECT_NE(code, 0) << output_;
  EXPECT_THAT(output_, HasSubstr("error: --profile " + bad + ": cannot write the trace"));
  EXPECT_THAT(output_, ::testing::Not(HasSubstr("step 1/")));
}

} // namespace
