//===- ThreadPoolTest.cpp - the runtime's worker pool -----------------------===//
//
// What ThreadPool.h promises, each checked so that a pool breaking it fails:
// every index runs exactly once and all have finished when parallelFor
// returns; the work runs on threadCount() threads at once, the caller among
// them; calls from several threads never overlap; idle workers sleep
// (no CPU time while there is no job); back-to-back jobs never mix tasks.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <ctime>
#include <mutex>
#include <set>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace trc::rt;

namespace {

// CPU time of the whole process (every thread), in seconds.
double processCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

} // namespace

TEST(ThreadPool, RunsEveryIndexExactlyOnce) {
  for (int64_t n : {0, 1, 2, 3, 17, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    parallelFor(n, [&](int64_t i) { hits[static_cast<size_t>(i)]++; });
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "index " << i << " of " << n;
  }
  // Negative counts run nothing.
  bool ran = false;
  parallelFor(-3, [&](int64_t) { ran = true; });
  EXPECT_FALSE(ran);
}

// The slowest task (wherever it runs) has finished when parallelFor returns.
TEST(ThreadPool, ReturnsOnlyWhenEveryTaskHasFinished) {
  for (int rep = 0; rep < 5; ++rep) {
    const int64_t n = 8;
    std::vector<std::atomic<bool>> finished(n);
    parallelFor(n, [&](int64_t i) {
      if (i == rep % n)
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
      finished[size_t(i)] = true;
    });
    for (int64_t i = 0; i < n; ++i)
      ASSERT_TRUE(finished[size_t(i)]) << "rep " << rep << " index " << i;
  }
}

// threadCount() tasks that each wait until all of them have started: they
// can only all start if threadCount() threads, the caller one of them, run
// them at the same time. A pool with fewer real threads, or whose caller
// only waits, times out here.
TEST(ThreadPool, RunsOnThreadCountThreadsAtOnceIncludingTheCaller) {
  const int threads = threadCount();
  ASSERT_GE(threads, 1);
  if (threads == 1)
    GTEST_SKIP() << "the pool has one thread (TRC_NUM_THREADS=1 or one core)";
  std::atomic<int> started{0};
  std::atomic<int> startedAtTimeout{-1};
  std::mutex mutex;
  std::set<std::thread::id> ids;
  parallelFor(threads, [&](int64_t) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ids.insert(std::this_thread::get_id());
    }
    ++started;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started.load() < threads) {
      if (std::chrono::steady_clock::now() > deadline) {
        startedAtTimeout = started.load();
        return;
      }
      std::this_thread::yield();
    }
  });
  EXPECT_EQ(startedAtTimeout.load(), -1)
      << "after 20 s only " << startedAtTimeout.load() << " of " << threads
      << " tasks had started";
  EXPECT_EQ(int(ids.size()), threads);
  EXPECT_EQ(ids.count(std::this_thread::get_id()), 1u) << "the caller ran no task";
}

// Jobs of different callers never run at the same time: a task of one job
// never sees a task of another still running.
TEST(ThreadPool, CallersFromSeveralThreadsAreSerializedNotLost) {
  constexpr int kCallers = 4;
  std::atomic<int64_t> sum{0};
  std::atomic<int> running[kCallers] = {};
  std::atomic<int> overlaps{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t)
    callers.emplace_back([&, t] {
      for (int rep = 0; rep < 50; ++rep)
        parallelFor(10, [&](int64_t i) {
          ++running[t];
          for (int other = 0; other < kCallers; ++other)
            if (other != t && running[other].load() != 0)
              ++overlaps;
          volatile int spin = 0; // long enough to overlap if it could
          for (int k = 0; k < 2000; ++k)
            spin = spin + k;
          sum += i;
          --running[t];
        });
    });
  for (auto &c : callers)
    c.join();
  EXPECT_EQ(sum.load(), kCallers * 50 * 45);
  EXPECT_EQ(overlaps.load(), 0);
}

// Idle helpers sleep: with no job, the process uses (almost) no CPU time.
// A helper that spun for good would use the whole window. (libomp's team
// spins for its block time, 200 ms by default, before it sleeps: the window
// starts after that.)
TEST(ThreadPool, IdleWorkersUseNoCpu) {
  if (threadCount() == 1)
    GTEST_SKIP() << "the pool has no workers";
  parallelFor(threadCount() * 4, [](int64_t) {}); // workers started and idle
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  double cpu0 = processCpuSeconds();
  auto wall0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  double cpu = processCpuSeconds() - cpu0;
  EXPECT_LT(cpu, 0.1) << cpu << " s of CPU in " << wall << " s with no job";
}

// Back-to-back small jobs: a worker that wakes late for one job must not run
// (or count) tasks of the next; that race once deadlocked a bf16 training run
// (the widening matmul issues many small jobs). It is timing-dependent: this
// stress run checks the invariant but did not reproduce the hang on demand.
TEST(ThreadPool, BackToBackJobsRunEachTaskOnce) {
  std::vector<std::atomic<int>> hits(4);
  for (int rep = 0; rep < 100000; ++rep) {
    int64_t n = 2 + rep % 3;
    parallelFor(n, [&](int64_t i) {
      volatile int spin = 0; // long enough for workers to join in
      for (int k = 0; k < 200 * int(i); ++k)
        spin = spin + k;
      hits[static_cast<size_t>(i)]++;
    });
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(hits[static_cast<size_t>(i)].exchange(0), 1) << "rep " << rep << " index " << i;
  }
}

namespace {

// Sets one variable for the life of the object and restores it after.
class ScopedVariable {
public:
  ScopedVariable(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedVariable() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

std::string threadVariablesError(const char *name, const char *value) {
  ScopedVariable v(name, value);
  Status s = checkThreadVariables();
  return s ? "" : std::string(s.message());
}

} // namespace

TEST(ThreadPool, ThreadVariablesAreCheckedWithTheirValue) {
  // libomp's syntax: a positive integer or a list of them.
  for (const char *good : {"1", "4", "4,2", " 3 , 1", "1024"})
    EXPECT_EQ(threadVariablesError("OMP_NUM_THREADS", good), "") << good;
  for (const char *bad : {"abc", "-1", "2x", "0", "", "4,", ",4", "4,,2", "1.5", "0x4"})
    EXPECT_EQ(threadVariablesError("OMP_NUM_THREADS", bad),
              std::string("OMP_NUM_THREADS='") + bad +
                  "' is not a positive integer (or a list of them)")
        << bad;
  EXPECT_EQ(threadVariablesError("OMP_NUM_THREADS", "4,100000"),
            "OMP_NUM_THREADS='4,100000' asks for more than 1024 threads");
  EXPECT_EQ(threadVariablesError("OMP_NUM_THREADS", "99999999999999999999"),
            "OMP_NUM_THREADS='99999999999999999999' is not a positive integer (or a list of "
            "them)");
  EXPECT_EQ(threadVariablesError("TRC_NUM_THREADS", "8"), "");
  for (const char *bad : {"0", "abc", "1025", "-2", " 4"})
    EXPECT_EQ(threadVariablesError("TRC_NUM_THREADS", bad),
              std::string("TRC_NUM_THREADS='") + bad + "' is not a whole number from 1 to 1024")
        << bad;
}

TEST(ThreadPool, SharedMemoryCheckPassesWithRoomOrWithoutTheFolder) {
  // The refusal of a full folder needs a private tmpfs (a mount):
  // test/Training/full-dev-shm.test.
  EXPECT_TRUE(checkOpenMpSharedMemory("/nonexistent-folder-of-trc-tests"));
  const char *tmp = std::getenv("TMPDIR");
  EXPECT_TRUE(checkOpenMpSharedMemory(tmp ? tmp : "/tmp"));
}

TEST(ThreadPool, StaleEmptyOpenMpRegistrationOfThisPidIsRemoved) {
  // A full disk leaves libomp's registration file empty; a later process
  // with the same pid mapped it and died of SIGBUS.
  std::string dir = ::testing::TempDir() + "trc-kmp-XXXXXX";
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  std::string mine = dir + "/__KMP_REGISTERED_LIB_" + std::to_string(::getpid()) + "_" +
                     std::to_string(::getuid());
  std::string other = dir + "/__KMP_REGISTERED_LIB_1_0";
  for (const std::string &path : {mine, other})
    std::fclose(std::fopen(path.c_str(), "w"));
  removeStaleOpenMpRegistration({dir});
  EXPECT_NE(::access(mine.c_str(), F_OK), 0) << "this pid's empty file is removed";
  EXPECT_EQ(::access(other.c_str(), F_OK), 0) << "another pid's is left alone";
  // A registration with contents is libomp's to judge.
  FILE *f = std::fopen(mine.c_str(), "w");
  std::fputs("0x1234-cafe-libomp.so", f);
  std::fclose(f);
  removeStaleOpenMpRegistration({dir});
  EXPECT_EQ(::access(mine.c_str(), F_OK), 0);
  for (const std::string &path : {mine, other})
    ::unlink(path.c_str());
  ::rmdir(dir.c_str());
}
