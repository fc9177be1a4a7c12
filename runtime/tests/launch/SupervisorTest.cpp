//===- SupervisorTest.cpp - relaunching a job, with a scripted launcher ----===//
//
// A fake `mpirun` (a shell script first on PATH) records each launch's
// arguments and ends as the test scripts it: with a lost rank's status
// (137, 75), an error (1) or success, after writing a checkpoint or taking
// a node out of the hostfile. The supervisor must relaunch exactly when a
// rank was lost and restarts are left, resume once the job has a checkpoint
// of its own, shrink the world to the hostfile, pass SIGTERM on and then
// stop, and refuse what it cannot run.
//
//===----------------------------------------------------------------------===//
#include "runtime/launch/Supervisor.h"
#include "runtime/support/ExitCodes.h"

#include "ScopedEnvironment.h"
#include "StatusTesting.h"
#include "TestArtifact.h"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace trc::rt;
using trc::rt::test::errorOf;
using trc::rt::test::readFile;
using trc::rt::test::ScopedEnvironment;
using trc::rt::test::TempDir;
using trc::rt::test::writeFile;

namespace {

// Launch N runs `before-N` (if any) in the fake's folder, then exits with
// line N of `codes` (0 past its end).
const char *kFakeLauncher = R"(#!/bin/bash
dir=$(dirname "$0")
n=$(( $(cat "$dir/calls" 2>/dev/null || echo 0) + 1 ))
echo $n > "$dir/calls"
echo "$@" > "$dir/args-$n"
if [ -f "$dir/before-$n" ]; then source "$dir/before-$n"; fi
code=$(sed -n "${n}p" "$dir/codes")
exit ${code:-0}
)";

class SupervisorTest : public ::testing::Test {
protected:
  void SetUp() override {
    bin_ = dir_.file("bin");
    std::filesystem::create_directory(bin_);
    writeFile(bin_ + "/mpirun", kFakeLauncher);
    ::chmod((bin_ + "/mpirun").c_str(), 0755);
    env_.set("PATH", (bin_ + ":" + std::string(std::getenv("PATH"))).c_str());
    options_.launcher = "mpirun";
    options_.ranks = 4;
    options_.maxRestarts = 3;
    options_.command = {"trc-run", "model.onnx", "--batch-size", "8", "--checkpoint-dir",
                        checkpoints()};
  }
  std::string checkpoints() const { return dir_.file("ck"); }
  void codes(const std::string &lines) { writeFile(bin_ + "/codes", lines); }
  // Before launch n: a shell snippet.
  void before(int n, const std::string &script) {
    writeFile(bin_ + "/before-" + std::to_string(n), script);
  }
  std::string checkpointAt(int step) const {
    std::string s = std::to_string(step);
    return "mkdir -p " + checkpoints() + "/step-" + s + " && echo step-" + s + " > " +
           checkpoints() + "/latest\n";
  }
  std::string args(int n) const { return readFile(bin_ + "/args-" + std::to_string(n)); }
  int calls() const { return std::stoi(readFile(bin_ + "/calls")); }

  StatusOr<int> run() {
    return superviseElastic(options_, [&](const LaunchEvent &e) { events_.push_back(e); });
  }

  TempDir dir_;
  std::string bin_;
  ScopedEnvironment env_;
  LaunchOptions options_;
  std::vector<LaunchEvent> events_;
};

TEST_F(SupervisorTest, RelaunchesAfterALostRankAndResumesFromTheJobsCheckpoint) {
  codes("137\n0\n");
  before(1, checkpointAt(6));
  StatusOr<int> status = run();
  ASSERT_TRUE(status.ok()) << status.status().message();
  EXPECT_EQ(*status, 0);
  EXPECT_EQ(calls(), 2);
  EXPECT_EQ(args(1), "-np 4 trc-run model.onnx --batch-size 8 --checkpoint-dir " +
                         checkpoints() + " --grad-accum 1\n");
  EXPECT_EQ(args(2), "-np 4 trc-run model.onnx --batch-size 8 --checkpoint-dir " +
                         checkpoints() + " --grad-accum 1 --resume auto\n");
  ASSERT_EQ(events_.size(), 4u);
  EXPECT_EQ(events_[1].kind, LaunchEvent::End);
  EXPECT_EQ(events_[1].end.ending, Ending::RankLost);
  EXPECT_EQ(events_[1].end.signal, SIGKILL);
  EXPECT_EQ(events_[1].checkpointStep, 6);
  EXPECT_TRUE(events_[1].willRestart);
  EXPECT_TRUE(events_[2].resumed);
  EXPECT_EQ(events_[3].end.ending, Ending::Finished);
}

TEST_F(SupervisorTest, BeforeItsFirstCheckpointARelaunchKeepsTheUsersFlags) {
  // An old run's checkpoint is there; the user said to start over.
  std::filesystem::create_directories(checkpoints() + "/step-50");
  writeFile(checkpoints() + "/latest", "step-50\n");
  options_.command.push_back("--overwrite-checkpoints");
  codes(std::to_string(kExitRankLost) + "\n0\n");
  ASSERT_TRUE(run().ok());
  EXPECT_NE(args(2).find("--overwrite-checkpoints"), std::string::npos) << args(2);
  EXPECT_EQ(args(2).find("--resume"), std::string::npos) << args(2);
}

TEST_F(SupervisorTest, AnErrorTheJobNamedIsNotRetried) {
  codes("1\n0\n");
  StatusOr<int> status = run();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 1);
  EXPECT_EQ(calls(), 1);
  EXPECT_EQ(events_.back().end.ending, Ending::Error);
  EXPECT_FALSE(events_.back().willRestart);
}

TEST_F(SupervisorTest, StopsWhenNoRestartIsLeft) {
  options_.maxRestarts = 2;
  codes("137\n137\n137\n0\n");
  StatusOr<int> status = run();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 137);
  EXPECT_EQ(calls(), 3);
  EXPECT_FALSE(events_.back().willRestart);
}

TEST_F(SupervisorTest, RelaunchesOnTheRanksTheHostfileStillHas) {
  std::string hosts = dir_.file("hosts");
  writeFile(hosts, "a slots=2\nb slots=2\n");
  options_.hostfile = hosts;
  options_.ranks = 0; // from the hostfile
  options_.minRanks = 2;
  codes("137\n0\n");
  before(1, "echo 'a slots=2' > " + hosts + "\n" + checkpointAt(4));
  ASSERT_TRUE(run().ok());
  EXPECT_EQ(args(1).substr(0, 21), "-np 4 --hostfile " + hosts.substr(0, 4));
  EXPECT_NE(args(2).find("-np 2 --hostfile"), std::string::npos) << args(2);
  EXPECT_NE(args(2).find("--grad-accum 2 --resume auto"), std::string::npos) << args(2);
  EXPECT_EQ(events_[2].available, 2);

  // Below --min-ranks: the supervisor stops, saying why.
  std::filesystem::remove(bin_ + "/calls");
  events_.clear();
  writeFile(hosts, "a slots=4\n");
  before(1, "echo 'a slots=1' > " + hosts);
  StatusOr<int> status = run();
  EXPECT_EQ(errorOf(status), "1 rank(s) available and --min-ranks 2: no world between them "
                             "fits the job (its --config's degrees must divide it and "
                             "--batch-size 8 must split over its data ranks)");
}

TEST_F(SupervisorTest, PassesSigtermOnAndDoesNotRelaunch) {
  codes("0\n0\n");
  // The job stops as trc-run does: on SIGTERM, 143 after its checkpoint.
  before(1, "touch " + bin_ + "/running\ntrap 'kill %1; exit 143' TERM\nsleep 30 & wait\n");
  std::thread stopper([&] {
    for (int i = 0; i < 200 && !std::filesystem::exists(bin_ + "/running"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ::kill(::getpid(), SIGTERM);
  });
  auto start = std::chrono::steady_clock::now();
  StatusOr<int> status = run();
  stopper.join();
  ASSERT_TRUE(status.ok()) << status.status().message();
  EXPECT_EQ(*status, 143);
  EXPECT_EQ(calls(), 1);
  EXPECT_EQ(events_.back().end.ending, Ending::Interrupted);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20);
}

TEST_F(SupervisorTest, RefusesWhatItCannotRun) {
  options_.command = {"trc-run", "model.onnx", "--batch-size", "8"};
  EXPECT_EQ(errorOf(run()), "--max-restarts 3 relaunches from the job's checkpoints: give "
                            "trc-run --checkpoint-dir (and --checkpoint-every), or "
                            "--max-restarts 0");
  options_.maxRestarts = 0;
  options_.launcher = "srun";
  env_.set("PATH", bin_.c_str()); // no srun there
  EXPECT_EQ(errorOf(run()), "srun: cannot run: No such file or directory");
  options_.launcher = "mpirun";
  options_.minRanks = 5;
  EXPECT_EQ(errorOf(run()), "--min-ranks 5 is more than the 4 ranks of the first launch");
}

} // namespace
