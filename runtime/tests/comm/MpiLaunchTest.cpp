//===- MpiLaunchTest.cpp - the MPI backend under a real mpirun --------------===//
//
// Runs trc-communicator-check (CommunicatorCheck.cpp) as real processes:
// under `mpirun --oversubscribe -np 2` and `-np 4` every collective's
// numerics and the non-blocking point-to-point scenarios (an 8 MiB isend
// ring that blocking sends would deadlock, receives posted out of tag
// order, ...) must hold on every rank; a rank killed before a collective
// or while others receive from it (blocking or isend/irecv), a rank that
// never joins one, and a (blocking or non-blocking) receive from a
// sleeping rank must end the run within 60 s with an error naming the
// lost rank; alone (no
// launcher) the program must get world size 1. trc-tensor-parallel-check
// (TensorParallelCheck.cpp) checks a tensor-parallel run's groups and
// logical tensors on 4 ranks. Skipped, with a message,
// where mpirun is not installed. mpirun comes from TRC_TEST_MPIRUN or PATH;
// as root, Open MPI's run-as-root variables are set for it.
//
//===----------------------------------------------------------------------===//
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

struct RunResult {
  int exitCode = -1; // -1: killed by a signal (or by the time limit)
  bool timedOut = false;
  double seconds = 0;
  std::string output; // stdout and stderr together
};

// Runs argv with extra environment variables, output captured; the whole
// process group is killed after `limit` seconds.
RunResult run(const std::vector<std::string> &argv,
              const std::vector<std::pair<std::string, std::string>> &env,
              double limit) {
  RunResult result;
  int fds[2];
  if (::pipe(fds) != 0)
    return result;
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    for (const auto &[name, value] : env)
      ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char *> args;
    for (const std::string &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(fds[1]);
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  char buf[4096];
  while (true) {
    double left = limit - elapsed();
    if (left <= 0) {
      result.timedOut = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int ready = ::poll(&p, 1, int(left * 1000) + 1);
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      continue;
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break; // every writer is gone
    result.output.append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.seconds = elapsed();
  // Anything left of the group (a rank mpirun failed to stop) is a failure
  // the assertions below see through the time; do not leave it running.
  ::kill(-pid, SIGKILL);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

std::string findMpirun() {
  if (const char *path = ::getenv("TRC_TEST_MPIRUN"))
    return path;
  const char *path = ::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos)
      end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    if (::access((dir + "/mpirun").c_str(), X_OK) == 0) {
      // Open MPI derives its prefix from the path it was run by: /bin
      // (a link to /usr/bin on merged-/usr systems) would give "/".
      char real[PATH_MAX];
      if (::realpath(dir.c_str(), real))
        dir = real;
      return dir + "/mpirun";
    }
    start = end + 1;
  }
  return "";
}

// The environment every run gets: the launcher's variables of an enclosing
// run do not leak in (mpirun sets its own).
std::vector<std::pair<std::string, std::string>>
baseEnv(std::vector<std::pair<std::string, std::string>> extra = {}) {
  std::vector<std::pair<std::string, std::string>> env = {
      // A small default keeps a broken run from hanging the suite.
      {"TRC_COLLECTIVE_TIMEOUT_S", "40"},
  };
  if (::geteuid() == 0) {
    env.push_back({"OMPI_ALLOW_RUN_AS_ROOT", "1"});
    env.push_back({"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"});
  }
  for (auto &e : extra)
    env.push_back(std::move(e));
  return env;
}

class MpiLaunch : public ::testing::Test {
protected:
  void SetUp() override {
    mpirun_ = findMpirun();
    if (mpirun_.empty())
      GTEST_SKIP() << "mpirun not found on PATH (install openmpi-bin): "
                      "multi-process communicator tests skipped";
    for (const char *name :
         {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
          "SLURM_STEP_ID", "SLURM_STEPID", "TRC_MPI_LIBRARY"})
      ::unsetenv(name);
  }
  std::vector<std::string> mpirun(int np, const std::string &mode) {
    return {mpirun_,      "--oversubscribe", "-np", std::to_string(np),
            TRC_TEST_COMMUNICATOR_CHECK, mode};
  }
  std::string mpirun_;
};

void expectAllRanksPassed(const RunResult &r, int np, const char *backend) {
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_FALSE(r.timedOut);
  for (int rank = 0; rank < np; ++rank) {
    std::string line = "rank " + std::to_string(rank) + ": ";
    std::string tail = " checks passed (" + std::string(backend) +
                       ", size " + std::to_string(np) + ")";
    size_t at = r.output.find(line);
    bool found = false;
    while (at != std::string::npos && !found) {
      size_t eol = r.output.find('\n', at);
      std::string l = r.output.substr(at, eol - at);
      found = l.find(tail) != std::string::npos;
      at = r.output.find(line, at + 1);
    }
    EXPECT_TRUE(found) << "no success line for rank " << rank << "\n"
                       << r.output;
  }
}

} // namespace

TEST(PlainProcess, GetsTheSingleProcessCommunicator) {
  RunResult r = run({TRC_TEST_COMMUNICATOR_CHECK, "single"}, baseEnv(), 60);
  expectAllRanksPassed(r, 1, "single");
}

TEST_F(MpiLaunch, NumericsOnTwoRanks) {
  RunResult r = run(mpirun(2, "numerics"), baseEnv(), 90);
  expectAllRanksPassed(r, 2, "mpi");
}

TEST_F(MpiLaunch, NumericsOnFourRanks) {
  RunResult r = run(mpirun(4, "numerics"), baseEnv(), 90);
  expectAllRanksPassed(r, 4, "mpi");
}

TEST_F(MpiLaunch, MpiBackendAlsoRunsWithoutLauncher) {
  // Forcing the MPI backend in a plain process: an MPI singleton.
  RunResult r =
      run({TRC_TEST_COMMUNICATOR_CHECK, "numerics", "mpi"}, baseEnv(), 60);
  expectAllRanksPassed(r, 1, "mpi");
}

// A tensor-parallel run's grid (TensorParallelCheck.cpp): with 4 ranks and
// T = 2 the tensor groups are {0,1},{2,3} and the data axes {0,2},{1,3};
// split slots (3 blocks) round-trip through their parts, also ZeRO-sharded
// over the data axis; and with T = 4 the whole world is one tensor group.
TEST_F(MpiLaunch, TensorParallelGroupsAndLogicalTensors) {
  for (const char *config : {R"({"tensor_parallel_degree": 2})",
                             R"({"tensor_parallel_degree": 2, "zero_stage": 1})",
                             R"({"tensor_parallel_degree": 4})"}) {
    RunResult r = run({mpirun_, "--oversubscribe", "-np", "4", TRC_TEST_TENSOR_PARALLEL_CHECK,
                       config},
                      baseEnv(), 90);
    SCOPED_TRACE(config);
    expectAllRanksPassed(r, 4, "tensor-parallel");
  }
}

TEST_F(MpiLaunch, KilledRankEndsTheRun) {
  // Rank 1 dies by SIGKILL before an allReduce ranks 0, 2, 3 are in.
  RunResult r = run(mpirun(4, "kill"), baseEnv(), 90);
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_FALSE(r.timedOut) << r.output;
  EXPECT_LT(r.seconds, 60) << r.output;
  // mpirun names the rank it lost; so does our watchdog if it is first.
  EXPECT_THAT(r.output, AnyOf(HasSubstr("process rank 1 with PID"),
                              HasSubstr("error: rank 1 (pid")));
  EXPECT_THAT(r.output, Not(HasSubstr("the call returned without rank 1")))
      << r.output;
}

TEST_F(MpiLaunch, KilledRankIsNamedByTheWatchdog) {
  // With Open MPI's recovery mode mpirun keeps the job going after a rank
  // dies (and itself exits 0): only the watchdog stops the ranks waiting
  // for it. Each survivor names a lost rank (rank 1, or a survivor that
  // already gave up) and exits.
  std::vector<std::string> argv = mpirun(4, "kill");
  argv.insert(argv.begin() + 1, "--enable-recovery");
  RunResult r = run(argv, baseEnv(), 90);
  EXPECT_FALSE(r.timedOut) << r.output;
  EXPECT_LT(r.seconds, 60) << r.output;
  EXPECT_THAT(r.output, HasSubstr("error: rank 1 (pid ")) << r.output;
  for (int survivor : {0, 2, 3})
    EXPECT_THAT(r.output, HasSubstr(") is gone (exited or was killed) while "
                                    "rank " +
                                    std::to_string(survivor) +
                                    " waited in collective allReduce"))
        << "rank " << survivor << "\n"
        << r.output;
}

TEST_F(MpiLaunch, CollectiveTimesOut) {
  // Rank 1 is alive but never joins; the others give up after 1 s.
  RunResult r = run(mpirun(3, "hang"),
                    baseEnv({{"TRC_COLLECTIVE_TIMEOUT_S", "1"}}), 90);
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_FALSE(r.timedOut) << r.output;
  EXPECT_LT(r.seconds, 30) << r.output;
  EXPECT_THAT(r.output, HasSubstr("error: collective allReduce timed out "
                                  "after 1 s waiting for ranks "))
      << r.output;
}

TEST_F(MpiLaunch, ReceiveTimesOutNamingThePeer) {
  RunResult r = run(mpirun(2, "hang-recv"),
                    baseEnv({{"TRC_COLLECTIVE_TIMEOUT_S", "1"}}), 90);
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_LT(r.seconds, 30) << r.output;
  EXPECT_THAT(r.output, HasSubstr("error: recv from rank 1 timed out after 1 s "
                                  "waiting for rank 1 (not responding; this "
                                  "is rank 0 of 2)"))
      << r.output;
}

TEST_F(MpiLaunch, NonBlockingReceiveTimesOutNamingThePeerAndTag) {
  RunResult r = run(mpirun(2, "hang-irecv"),
                    baseEnv({{"TRC_COLLECTIVE_TIMEOUT_S", "1"}}), 90);
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_LT(r.seconds, 30) << r.output;
  EXPECT_THAT(r.output, HasSubstr("error: irecv tag 4 from rank 1 timed out after 1 s "
                                  "waiting for rank 1 (not responding; this "
                                  "is rank 0 of 2)"))
      << r.output;
}

TEST_F(MpiLaunch, KilledPeerEndsPointToPointWaits) {
  // Rank 1 dies by SIGKILL while rank 0 is in a blocking recv from it and
  // ranks 2, 3 wait for an irecv from it (an 8 MiB isend to it in flight).
  RunResult r = run(mpirun(4, "kill-p2p"), baseEnv(), 90);
  EXPECT_NE(r.exitCode, 0) << r.output;
  EXPECT_FALSE(r.timedOut) << r.output;
  EXPECT_LT(r.seconds, 60) << r.output;
  EXPECT_THAT(r.output, AnyOf(HasSubstr("process rank 1 with PID"),
                              HasSubstr("error: rank 1 (pid")));
  EXPECT_THAT(r.output, Not(HasSubstr("the call returned without rank 1")))
      << r.output;
}

TEST_F(MpiLaunch, KilledPeerIsNamedByTheWatchdogInPointToPointWaits) {
  // Under --enable-recovery only the watchdog stops the survivors: waiting
  // in MPI_Wait (irecv) is watched like the blocking recv, and each names
  // rank 1, the peer it waited for.
  std::vector<std::string> argv = mpirun(4, "kill-p2p");
  argv.insert(argv.begin() + 1, "--enable-recovery");
  RunResult r = run(argv, baseEnv(), 90);
  EXPECT_FALSE(r.timedOut) << r.output;
  EXPECT_LT(r.seconds, 60) << r.output;
  std::string gone = ") is gone (exited or was killed) while rank ";
  EXPECT_THAT(r.output, HasSubstr("error: rank 1 (pid ")) << r.output;
  EXPECT_THAT(r.output, HasSubstr(gone + "0 waited in recv from rank 1\n")) << r.output;
  for (int survivor : {2, 3})
    EXPECT_THAT(r.output, HasSubstr(gone + std::to_string(survivor) +
                                    " waited in irecv tag 3 from rank 1\n"))
        << "rank " << survivor << "\n"
        << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("error: rank 0 (pid"))) << r.output;
}
