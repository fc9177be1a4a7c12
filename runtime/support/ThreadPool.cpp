//===- ThreadPool.cpp - a small sleeping worker pool -----------------------===//
#include "runtime/support/ThreadPool.h"

#include "runtime/support/Parse.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <thread>
#include <unistd.h>
#include <vector>

#ifdef TRC_PARALLEL_FOR_OPENMP
#include <omp.h>
#endif

namespace trc::rt {
namespace {

constexpr int64_t kMaxThreads = 1024;

/// TRC_NUM_THREADS when it is a whole number in [1, 1024], else `fallback`
/// (checkThreadVariables refused any other value at the start).
int configuredThreads(int fallback) {
  if (const char *env = std::getenv("TRC_NUM_THREADS"))
    if (std::optional<int64_t> n = parseInt64(env, 1, kMaxThreads))
      return int(*n);
  return fallback;
}

/// libomp's syntax: a positive integer or a comma-separated list of them
/// (spaces around the numbers allowed); `largest` is the largest of them.
bool isThreadList(std::string_view text, int64_t &largest) {
  largest = 0;
  for (std::string_view item : splitText(text, ',')) {
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
      item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t'))
      item.remove_suffix(1);
    std::optional<int64_t> n = parseInt64(item, 1);
    if (!n)
      return false;
    largest = std::max(largest, *n);
  }
  return true;
}

#ifdef TRC_PARALLEL_FOR_OPENMP
// The tasks run on LLVM's OpenMP runtime, whose threads also run the
// compiled programs' parallel loops: one team for both, handed from a loop
// nest to a matrix product while its threads still spin, instead of a
// second set of threads competing with them for the same cores.
int teamSize() {
  static const int threads = configuredThreads(omp_get_max_threads());
  return threads;
}

std::mutex &callers() {
  static std::mutex instance;
  return instance;
}
#else

class Pool {
public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i)
      workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto &w : workers_)
      w.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void run(int64_t n, const std::function<void(int64_t)> &fn) {
    std::lock_guard<std::mutex> serial(callers_);
    {
      // A worker that woke late for the previous job may still be inside
      // drain(): resetting the counters under it would let it run a task of
      // this job twice (or count one that never ran), so wait it out.
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [&] { return active_ == 0; });
      job_ = &fn;
      total_ = n;
      next_ = 0;
      pending_ = n;
      ++generation_;
    }
    wake_.notify_all();
    drain();
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0 && active_ == 0; });
    job_ = nullptr;
  }

private:
  // Takes tasks until none are left; the last finisher signals the caller.
  void drain() {
    while (true) {
      int64_t i = next_.fetch_add(1);
      if (i >= total_)
        return;
      (*job_)(i);
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_all();
      }
    }
  }
  void work() {
    uint64_t seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_)
          return;
        seen = generation_;
        ++active_;
      }
      drain();
      std::lock_guard<std::mutex> lock(mutex_);
      if (--active_ == 0)
        done_.notify_all();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_, callers_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)> *job_ = nullptr;
  std::atomic<int64_t> next_{0}, pending_{0};
  int64_t total_ = 0;
  uint64_t generation_ = 0;
  int active_ = 0; // workers inside drain() (guarded by mutex_)
  bool stopping_ = false;
};

Pool &pool() {
  static Pool instance([] {
    // Anything but a whole number in [1, 1024] is ignored ("4x" too).
    unsigned cores = std::thread::hardware_concurrency();
    return configuredThreads(cores ? static_cast<int>(cores) : 1);
  }());
  return instance;
}
#endif

} // namespace

#ifdef TRC_PARALLEL_FOR_OPENMP
int threadCount() { return teamSize(); }

void parallelFor(int64_t n, const std::function<void(int64_t)> &fn) {
  if (n <= 0)
    return;
  // Inside a parallel region (a task that calls parallelFor): run here.
  if (n == 1 || teamSize() == 1 || omp_in_parallel()) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  std::lock_guard<std::mutex> serial(callers());
  int threads = int(std::min<int64_t>(teamSize(), n));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t i = 0; i < n; ++i)
    fn(i);
}
#else
int threadCount() { return pool().size(); }

void parallelFor(int64_t n, const std::function<void(int64_t)> &fn) {
  if (n <= 0)
    return;
  if (n == 1 || threadCount() == 1) {
    for (int64_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  pool().run(n, fn);
}
#endif

Status checkThreadVariables() {
  if (const char *v = std::getenv("TRC_NUM_THREADS"); v && !parseInt64(v, 1, kMaxThreads))
    return Status::error(std::string("TRC_NUM_THREADS='") + v +
                         "' is not a whole number from 1 to " + std::to_string(kMaxThreads));
  // libomp aborts on "abc" and takes "-1" or "2x" for a huge team: checked
  // here, before it reads the variable (at its first parallel region).
  if (const char *v = std::getenv("OMP_NUM_THREADS")) {
    int64_t largest = 0;
    if (!isThreadList(v, largest))
      return Status::error(std::string("OMP_NUM_THREADS='") + v +
                           "' is not a positive integer (or a list of them)");
    if (largest > kMaxThreads)
      return Status::error(std::string("OMP_NUM_THREADS='") + v + "' asks for more than " +
                           std::to_string(kMaxThreads) + " threads");
  }
  return Status::success();
}

Status checkOpenMpSharedMemory(const char *dir) {
#ifdef TRC_PARALLEL_FOR_OPENMP
  // libomp needs one page; a margin of a few more for the processes that
  // start beside this one (an mpirun job's ranks, a test suite's jobs).
  constexpr unsigned long long kNeededBytes = 64 * 1024;
  struct statvfs fs;
  if (::statvfs(dir, &fs) != 0)
    return Status::success();
  unsigned long long freeBytes = (unsigned long long)fs.f_bavail * fs.f_frsize;
  if (freeBytes < kNeededBytes)
    return Status::error(
        std::string(dir) + " has " + std::to_string(freeBytes) +
        " bytes free: the OpenMP runtime (libomp) maps a page there when it starts and dies "
        "of SIGBUS without one; remove what fills it (left-over vader_segment.* files of "
        "killed MPI jobs) or give the container more (docker run --shm-size)");
#else
  (void)dir;
#endif
  return Status::success();
}

void removeStaleOpenMpRegistration(const std::vector<std::string> &dirs) {
  std::vector<std::string> where = dirs;
  if (where.empty()) {
    const char *tmp = std::getenv("TMPDIR");
    where = {"/dev/shm", tmp && *tmp ? tmp : "/tmp"};
  }
  std::string name = "__KMP_REGISTERED_LIB_" + std::to_string(::getpid()) + "_" +
                     std::to_string(::getuid());
  for (const std::string &dir : where) {
    std::string path = dir + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
      ::unlink(path.c_str());
  }
}

bool threadCountSetByUser() {
  return std::getenv("TRC_NUM_THREADS") || std::getenv("OMP_NUM_THREADS");
}

} // namespace trc::rt
