//===- LaunchEnvironmentTest.cpp - rank and size from launcher variables ----===//
//
// readLaunchEnvironment under the variables Open MPI, PMIx and Slurm set
// (setenv), a plain process, and each kind of malformed or contradictory
// value, whose error must name the variable.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/LaunchEnvironment.h"

#include "ScopedEnvironment.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using ::testing::HasSubstr;
using namespace trc::rt;
using trc::rt::test::ScopedEnvironment;

namespace {

LaunchEnvironment readOk() {
  StatusOr<LaunchEnvironment> env = readLaunchEnvironment();
  EXPECT_TRUE(env.ok()) << env.status().message();
  return env.ok() ? *env : LaunchEnvironment();
}

std::string readError() {
  Status s = readLaunchEnvironment().status();
  EXPECT_FALSE(s);
  return s.message();
}

void setOpenMpi(ScopedEnvironment &e, const char *rank, const char *size,
                const char *localRank, const char *localSize) {
  e.set("OMPI_COMM_WORLD_RANK", rank);
  e.set("OMPI_COMM_WORLD_SIZE", size);
  e.set("OMPI_COMM_WORLD_LOCAL_RANK", localRank);
  e.set("OMPI_COMM_WORLD_LOCAL_SIZE", localSize);
}

void setSlurmStep(ScopedEnvironment &e, const char *procId, const char *ntasks,
                  const char *localId, const char *perNode,
                  const char *nodeId) {
  e.set("SLURM_STEP_ID", "0");
  e.set("SLURM_PROCID", procId);
  e.set("SLURM_STEP_NUM_TASKS", ntasks);
  e.set("SLURM_LOCALID", localId);
  e.set("SLURM_STEP_TASKS_PER_NODE", perNode);
  e.set("SLURM_NODEID", nodeId);
}

} // namespace

TEST(LaunchEnvironment, PlainProcessIsRankZeroOfOne) {
  ScopedEnvironment e;
  LaunchEnvironment env = readOk();
  EXPECT_EQ(env.launcher, Launcher::None);
  EXPECT_FALSE(env.launched());
  EXPECT_FALSE(env.multiProcess());
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.size, 1);
  EXPECT_EQ(env.localRank, 0);
  EXPECT_EQ(env.localSize, 1);
  EXPECT_EQ(env.describe(), "a single process");
}

TEST(LaunchEnvironment, OpenMpi) {
  ScopedEnvironment e;
  setOpenMpi(e, "3", "4", "1", "2");
  LaunchEnvironment env = readOk();
  EXPECT_EQ(env.launcher, Launcher::OpenMpi);
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.size, 4);
  EXPECT_EQ(env.localRank, 1);
  EXPECT_EQ(env.localSize, 2);
  EXPECT_TRUE(env.multiProcess());
  EXPECT_EQ(env.describe(), "rank 3 of 4 (local 1 of 2) under Open MPI");
  // mpirun -np 1 is a launched world of one.
  setOpenMpi(e, "0", "1", "0", "1");
  env = readOk();
  EXPECT_TRUE(env.launched());
  EXPECT_FALSE(env.multiProcess());
  // PMIX_RANK set by the same mpirun agrees.
  setOpenMpi(e, "2", "4", "0", "2");
  e.set("PMIX_RANK", "2");
  env = readOk();
  EXPECT_EQ(env.launcher, Launcher::OpenMpi);
  EXPECT_EQ(env.rank, 2);
}

TEST(LaunchEnvironment, OpenMpiWithoutLocalVariables) {
  ScopedEnvironment e;
  e.set("OMPI_COMM_WORLD_RANK", "1");
  e.set("OMPI_COMM_WORLD_SIZE", "2");
  LaunchEnvironment env = readOk();
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.size, 2);
  EXPECT_EQ(env.localSize, 0); // unknown
  EXPECT_EQ(env.describe(), "rank 1 of 2 under Open MPI");
}

TEST(LaunchEnvironment, OpenMpiWinsOverInheritedSlurmVariables) {
  // mpirun inside a Slurm allocation: the step's Slurm variables are stale.
  ScopedEnvironment e;
  setSlurmStep(e, "0", "2", "0", "2", "0");
  setOpenMpi(e, "5", "8", "1", "4");
  LaunchEnvironment env = readOk();
  EXPECT_EQ(env.launcher, Launcher::OpenMpi);
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.size, 8);
}

TEST(LaunchEnvironment, MalformedValuesNameTheVariable) {
  ScopedEnvironment e;
  setOpenMpi(e, "1x", "4", "0", "1");
  EXPECT_EQ(readError(), "environment variable OMPI_COMM_WORLD_RANK='1x' is "
                         "not a non-negative decimal integer");
  setOpenMpi(e, "1", "", "0", "1");
  EXPECT_EQ(readError(), "environment variable OMPI_COMM_WORLD_SIZE='' is not "
                         "a non-negative decimal integer");
  setOpenMpi(e, "-1", "4", "0", "1");
  EXPECT_THAT(readError(), HasSubstr("OMPI_COMM_WORLD_RANK='-1'"));
  setOpenMpi(e, "0", "99999999999", "0", "1");
  EXPECT_THAT(readError(), HasSubstr("OMPI_COMM_WORLD_SIZE='99999999999'"));
  setOpenMpi(e, "0", " 4", "0", "1");
  EXPECT_THAT(readError(), HasSubstr("OMPI_COMM_WORLD_SIZE=' 4'"));
  setOpenMpi(e, "0", "0", "0", "1");
  EXPECT_EQ(readError(), "environment variable OMPI_COMM_WORLD_SIZE='0' must "
                         "be at least 1");
  setOpenMpi(e, "0", "4", "0", "x");
  EXPECT_THAT(readError(), HasSubstr("OMPI_COMM_WORLD_LOCAL_SIZE='x'"));
}

TEST(LaunchEnvironment, ContradictionsNameTheVariables) {
  ScopedEnvironment e;
  setOpenMpi(e, "4", "4", "0", "1");
  EXPECT_EQ(readError(), "environment variable OMPI_COMM_WORLD_RANK=4 is not "
                         "below OMPI_COMM_WORLD_SIZE=4");
  setOpenMpi(e, "0", "4", "2", "2");
  EXPECT_EQ(readError(), "environment variable OMPI_COMM_WORLD_LOCAL_RANK=2 "
                         "is not below OMPI_COMM_WORLD_LOCAL_SIZE=2");
  setOpenMpi(e, "0", "2", "0", "3");
  EXPECT_EQ(readError(), "environment variable OMPI_COMM_WORLD_LOCAL_SIZE=3 "
                         "exceeds OMPI_COMM_WORLD_SIZE=2");
  setOpenMpi(e, "1", "4", "1", "2");
  e.set("PMIX_RANK", "2");
  EXPECT_EQ(readError(), "environment variable PMIX_RANK=2 contradicts "
                         "OMPI_COMM_WORLD_RANK=1");
  e.set("PMIX_RANK", "one");
  EXPECT_THAT(readError(), HasSubstr("PMIX_RANK='one'"));
  e.unset("PMIX_RANK");
  e.unset("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(readError(), "environment variable OMPI_COMM_WORLD_RANK is set "
                         "but OMPI_COMM_WORLD_SIZE is not");
  setOpenMpi(e, "1", "4", "1", "2");
  e.unset("OMPI_COMM_WORLD_LOCAL_RANK");
  EXPECT_EQ(readError(), "environment variable OMPI_COMM_WORLD_LOCAL_SIZE is "
                         "set but OMPI_COMM_WORLD_LOCAL_RANK is not");
}

TEST(LaunchEnvironment, PmixGivesARankOnly) {
  ScopedEnvironment e;
  e.set("PMIX_RANK", "3");
  LaunchEnvironment env = readOk();
  EXPECT_EQ(env.launcher, Launcher::Pmix);
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.size, 0); // unknown
  EXPECT_TRUE(env.multiProcess());
  EXPECT_EQ(env.describe(), "rank 3 of an unknown number under PMIx");
}

TEST(LaunchEnvironment, SlurmStep) {
  ScopedEnvironment e;
  setSlurmStep(e, "1", "4", "1", "2(x2)", "0");
  LaunchEnvironment env = readOk();
  EXPECT_EQ(env.launcher, Launcher::Slurm);
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.size, 4);
  EXPECT_EQ(env.localRank, 1);
  EXPECT_EQ(env.localSize, 2);
  // Uneven nodes: "3,1" puts one task on node 1.
  setSlurmStep(e, "3", "4", "0", "3,1", "1");
  env = readOk();
  EXPECT_EQ(env.localSize, 1);
  setSlurmStep(e, "4", "6", "0", "2(x2),1(x2)", "3");
  env = readOk();
  EXPECT_EQ(env.localSize, 1);
  // srun --mpi=pmix also sets PMIX_RANK, equal to SLURM_PROCID.
  e.set("PMIX_RANK", "4");
  env = readOk();
  EXPECT_EQ(env.launcher, Launcher::Slurm);
  e.set("PMIX_RANK", "0");
  EXPECT_EQ(readError(),
            "environment variable PMIX_RANK=0 contradicts SLURM_PROCID=4");
}

TEST(LaunchEnvironment, SlurmFallsBackToNtasksAndOldStepName) {
  ScopedEnvironment e;
  e.set("SLURM_STEPID", "2");
  e.set("SLURM_PROCID", "1");
  e.set("SLURM_NTASKS", "2");
  LaunchEnvironment env = readOk();
  EXPECT_EQ(env.launcher, Launcher::Slurm);
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.size, 2);
  EXPECT_EQ(env.localSize, 0); // no SLURM_LOCALID
  e.unset("SLURM_NTASKS");
  EXPECT_EQ(readError(), "environment variable SLURM_PROCID is set in a Slurm "
                         "job step but neither SLURM_STEP_NUM_TASKS nor "
                         "SLURM_NTASKS is");
}

TEST(LaunchEnvironment, SlurmBatchScriptIsASingleProcess) {
  // sbatch's script sees SLURM_PROCID=0 and SLURM_NTASKS=N but no step id.
  ScopedEnvironment e;
  e.set("SLURM_PROCID", "0");
  e.set("SLURM_NTASKS", "4");
  e.set("SLURM_LOCALID", "0");
  EXPECT_EQ(readOk().launcher, Launcher::None);
  e.set("SLURM_STEP_ID", "batch");
  EXPECT_EQ(readOk().launcher, Launcher::None);
  e.set("SLURM_STEP_ID", "4294967291"); // SLURM_BATCH_SCRIPT
  EXPECT_EQ(readOk().launcher, Launcher::None);
}

TEST(LaunchEnvironment, SlurmRankOutsideAStepStillBelowTheTasks) {
  // A batch script is rank 0 of its tasks; a rank the allocation cannot
  // hold, or one that is not a number, is a mistake even there.
  ScopedEnvironment e;
  e.set("SLURM_PROCID", "5");
  e.set("SLURM_NTASKS", "2");
  EXPECT_EQ(readError(), "environment variable SLURM_PROCID=5 is not below SLURM_NTASKS=2");
  e.set("SLURM_PROCID", "one");
  EXPECT_EQ(readError(),
            "environment variable SLURM_PROCID='one' is not a non-negative decimal integer");
  e.set("SLURM_PROCID", "1");
  e.unset("SLURM_NTASKS");
  EXPECT_EQ(readOk().launcher, Launcher::None);
}

TEST(LaunchEnvironment, SlurmErrorsNameTheVariable) {
  ScopedEnvironment e;
  setSlurmStep(e, "4", "4", "0", "2(x2)", "0");
  EXPECT_EQ(readError(), "environment variable SLURM_PROCID=4 is not below "
                         "SLURM_STEP_NUM_TASKS=4");
  setSlurmStep(e, "1", "4", "0", "2(x", "0");
  EXPECT_EQ(readError(), "environment variable SLURM_STEP_TASKS_PER_NODE='2(x' "
                         "is not a Slurm task count list (like 2(x3),1)");
  setSlurmStep(e, "1", "4", "0", "2(x2)", "2");
  EXPECT_EQ(readError(), "environment variable SLURM_NODEID=2 is beyond the 2 "
                         "node(s) of SLURM_STEP_TASKS_PER_NODE='2(x2)'");
  setSlurmStep(e, "1", "4", "2", "2(x2)", "0");
  EXPECT_EQ(readError(), "environment variable SLURM_LOCALID=2 is not below "
                         "the local size from SLURM_STEP_TASKS_PER_NODE=2");
  setSlurmStep(e, "1", "4", "0", "8", "0");
  EXPECT_THAT(readError(),
              HasSubstr("SLURM_STEP_TASKS_PER_NODE='8' gives node 0 8 "
                        "task(s)"));
  setSlurmStep(e, "1", "four", "0", "2(x2)", "0");
  EXPECT_THAT(readError(), HasSubstr("SLURM_STEP_NUM_TASKS='four'"));
}
