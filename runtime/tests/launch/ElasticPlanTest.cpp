//===- ElasticPlanTest.cpp - trc-launch's decisions, without processes -----===//
//
// The job's flags, hostfiles, the world of a relaunch (fewer ranks, the
// global batch kept by more accumulation, plans that no longer fit), how an
// attempt ended and the relaunch command.
//
//===----------------------------------------------------------------------===//
#include "runtime/launch/ElasticPlan.h"
#include "runtime/support/ExitCodes.h"

#include "StatusTesting.h"
#include "TestArtifact.h"

#include <csignal>
#include <filesystem>
#include <gtest/gtest.h>

using namespace trc::rt;
using trc::rt::test::errorOf;
using trc::rt::test::TempDir;
using trc::rt::test::writeFile;

namespace {

std::vector<std::string> job(std::vector<std::string> flags) {
  flags.insert(flags.begin(), {"trc-run", "model.onnx"});
  return flags;
}

LaunchOptions options(int64_t ranks, int64_t minRanks, std::vector<std::string> command) {
  LaunchOptions o;
  o.launcher = "mpirun";
  o.ranks = ranks;
  o.minRanks = minRanks;
  o.command = std::move(command);
  return o;
}

TEST(ElasticPlanTest, ReadsTheFlagsARelaunchNeedsInBothSpellings) {
  StatusOr<JobCommand> j = readJobCommand(job({"--data", "d.txt", "--batch-size", "8",
                                               "--grad-accum=2", "--checkpoint-dir=ck",
                                               "--config", "{\"tensor_parallel_degree\": 2}"}));
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(j->batchSize, 8);
  EXPECT_EQ(j->gradAccum, 2);
  EXPECT_EQ(j->checkpointDir, "ck");
  EXPECT_EQ(j->config, "{\"tensor_parallel_degree\": 2}");
}

TEST(ElasticPlanTest, AValueThatLooksLikeAFlagStaysTheValueOfItsFlag) {
  // trc-run's table says --metrics takes a value: "--grad-accum" here is a
  // file name, neither read as the job's accumulation nor dropped.
  std::vector<std::string> command =
      job({"--metrics", "--grad-accum", "--batch-size", "8", "--lr", "0.1"});
  StatusOr<JobCommand> j = readJobCommand(command);
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(j->batchSize, 8);
  EXPECT_EQ(j->gradAccum, 1);
  EXPECT_EQ(launchCommand(options(2, 1, command), {2, 2}, false),
            (std::vector<std::string>{"mpirun", "-np", "2", "trc-run", "model.onnx", "--metrics",
                                      "--grad-accum", "--batch-size", "8", "--lr", "0.1",
                                      "--grad-accum", "2"}));
}

TEST(ElasticPlanTest, RefusesAJobWithoutItsGlobalBatchOrWithBadNumbers) {
  EXPECT_EQ(errorOf(readJobCommand(job({"--steps", "5"}))),
            ("the job has no --batch-size: a relaunch keeps the global batch, so the "
             "command must name it"));
  EXPECT_EQ(errorOf(readJobCommand(job({"--batch-size", "0"}))),
            ("the job's option '--batch-size': expected a positive "
                                      "integer, got '0'"));
  EXPECT_EQ(errorOf(readJobCommand(job({"--batch-size", "4", "--grad-accum"}))),
            ("the job's option '--grad-accum' needs a value"));
  EXPECT_FALSE(readJobCommand({}).ok());
}

TEST(ElasticPlanTest, ReadsOpenMpiHostfiles) {
  TempDir dir;
  writeFile(dir.file("hosts"), "# the job's nodes\nnode1 slots=4\n\nnode2   # one slot\n");
  StatusOr<std::vector<Host>> hosts = readHostfile(dir.file("hosts"));
  ASSERT_TRUE(hosts.ok()) << hosts.status().message();
  ASSERT_EQ(hosts->size(), 2u);
  EXPECT_EQ((*hosts)[0].name, "node1");
  EXPECT_EQ((*hosts)[0].slots, 4);
  EXPECT_EQ((*hosts)[1].slots, 1);
  EXPECT_EQ(totalSlots(*hosts), 5);

  writeFile(dir.file("bad"), "node1 slots=4\nnode2 slots=zero\n");
  EXPECT_EQ(errorOf(readHostfile(dir.file("bad"))),
            (dir.file("bad") +
                                      ":2: 'slots=zero': expected slots=N (N >= 1)"));
  writeFile(dir.file("empty"), "# nobody\n");
  EXPECT_EQ(errorOf(readHostfile(dir.file("empty"))),
            (dir.file("empty") + ": no hosts"));
  EXPECT_FALSE(readHostfile(dir.file("missing")).ok());
}

TEST(ElasticPlanTest, KeepsTheWorldWhenEveryRankIsBack) {
  LaunchOptions o = options(4, 0, job({"--batch-size", "8"}));
  StatusOr<WorldChoice> w = chooseWorld(4, o, *readJobCommand(o.command));
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->ranks, 4);
  EXPECT_EQ(w->gradAccum, 1);
  // More ranks than the first launch's are not used.
  EXPECT_EQ(chooseWorld(8, o, *readJobCommand(o.command))->ranks, 4);
}

TEST(ElasticPlanTest, FewerRanksAccumulateToKeepTheGlobalBatchAndTheMicrobatch) {
  LaunchOptions o = options(4, 1, job({"--batch-size", "8", "--grad-accum", "2"}));
  JobCommand j = *readJobCommand(o.command);
  // 4 ranks x 2 steps x 1 row; on 3 ranks 8 rows do not split: 2 ranks,
  // 4 steps of 1 row.
  StatusOr<WorldChoice> w = chooseWorld(3, o, j);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->ranks, 2);
  EXPECT_EQ(w->gradAccum, 4);
  EXPECT_EQ(chooseWorld(1, o, j)->gradAccum, 8);
}

TEST(ElasticPlanTest, AModelParallelPlanShrinksItsDataDegreeOnly) {
  LaunchOptions o = options(4, 2, job({"--batch-size", "4", "--config",
                                       "{\"tensor_parallel_degree\": 2}"}));
  JobCommand j = *readJobCommand(o.command);
  // tensor 2 x data 2 (2 rows a rank) -> tensor 2 x data 1, 2 steps of 2.
  StatusOr<WorldChoice> w = chooseWorld(3, o, j);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->ranks, 2);
  EXPECT_EQ(w->gradAccum, 2);
}

TEST(ElasticPlanTest, SaysWhyNoWorldFits) {
  LaunchOptions o = options(4, 3, job({"--batch-size", "4"}));
  EXPECT_EQ(errorOf(chooseWorld(2, o, *readJobCommand(o.command))),
            ("2 rank(s) available and --min-ranks 3: no world between "
                                      "them fits the job (its --config's degrees must divide "
                                      "it and --batch-size 4 must split over its data ranks)"));
  // ZeRO-3 over 4 ranks named explicitly does not shard over 2.
  LaunchOptions zero = options(4, 1, job({"--batch-size", "4", "--config",
                                          "{\"sharded_data_parallel_degree\": 4}"}));
  EXPECT_FALSE(chooseWorld(2, zero, *readJobCommand(zero.command)).ok());
  LaunchOptions bad = options(4, 1, job({"--batch-size", "4", "--config",
                                         "{\"tensor_parallel_degree\": 3}"}));
  EXPECT_EQ(errorOf(chooseWorld(4, bad, *readJobCommand(bad.command))),
            ("the job's --config is not a plan for its first 4 ranks"));
}

TEST(ElasticPlanTest, ClassifiesHowAnAttemptEnded) {
  auto exited = [](int code) { return code << 8; };
  EXPECT_EQ(classifyEnding(exited(0), false).ending, Ending::Finished);
  EXPECT_EQ(classifyEnding(exited(kExitError), false).ending, Ending::Error);
  AttemptEnd lost = classifyEnding(exited(kExitRankLost), false);
  EXPECT_EQ(lost.ending, Ending::RankLost);
  EXPECT_EQ(lost.signal, 0);
  // mpirun and srun report a rank killed by SIGKILL as 137.
  AttemptEnd killed = classifyEnding(exited(128 + SIGKILL), false);
  EXPECT_EQ(killed.ending, Ending::RankLost);
  EXPECT_EQ(killed.signal, SIGKILL);
  EXPECT_EQ(describeEnding(killed), "a rank was killed by signal 9 (Killed)");
  AttemptEnd signalled = classifyEnding(SIGSEGV, false);
  EXPECT_EQ(signalled.ending, Ending::RankLost);
  EXPECT_EQ(signalled.exitStatus, 128 + SIGSEGV);
  EXPECT_EQ(classifyEnding(exited(1), true).ending, Ending::Interrupted);
}

TEST(ElasticPlanTest, TheRelaunchCommandResumesWithTheChosenAccumulation) {
  LaunchOptions o = options(4, 1, job({"--batch-size", "8", "--grad-accum=1",
                                       "--overwrite-checkpoints", "--checkpoint-dir", "ck",
                                       "--resume", "auto"}));
  o.hostfile = "hosts";
  o.launcherArgs = {"--oversubscribe"};
  std::vector<std::string> first = launchCommand(o, {4, 1}, false);
  EXPECT_EQ(first, (std::vector<std::string>{
                       "mpirun", "-np", "4", "--hostfile", "hosts", "--oversubscribe", "trc-run",
                       "model.onnx", "--batch-size", "8", "--overwrite-checkpoints",
                       "--checkpoint-dir", "ck", "--resume", "auto", "--grad-accum", "1"}));
  std::vector<std::string> again = launchCommand(o, {2, 2}, true);
  EXPECT_EQ(again, (std::vector<std::string>{
                       "mpirun", "-np", "2", "--hostfile", "hosts", "--oversubscribe", "trc-run",
                       "model.onnx", "--batch-size", "8", "--checkpoint-dir", "ck",
                       "--grad-accum", "2", "--resume", "auto"}));
  o.launcher = "srun";
  o.hostfile.clear();
  o.launcherArgs.clear();
  EXPECT_EQ(launchCommand(o, {2, 2}, true)[0], "srun");
  EXPECT_EQ(launchCommand(o, {2, 2}, true)[2], "2");
}

TEST(ElasticPlanTest, ReadsTheLastCheckpointStep) {
  TempDir dir;
  EXPECT_EQ(lastCheckpointStep(dir.path()), -1);
  EXPECT_EQ(lastCheckpointStep(""), -1);
  std::filesystem::create_directory(dir.file("step-8"));
  writeFile(dir.file("latest"), "step-8\n");
  EXPECT_EQ(lastCheckpointStep(dir.path()), 8);
}

} // namespace
