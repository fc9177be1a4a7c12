//===- ThreadPool.h - the runtime's parallel tasks --------------------------===//
//
// parallelFor(n, fn) runs fn(0..n-1), each index exactly once and in no
// particular order, on the calling thread plus helper threads, and returns
// when all are done (n <= 0: nothing runs). Where the build found LLVM's
// libomp, the helpers are its OpenMP team, the threads compiled programs
// run their parallel loops on (one set of threads for both; size:
// TRC_NUM_THREADS, else OMP_NUM_THREADS, else the cores); elsewhere a pool
// of workers that sleep on a condition variable (they never spin), so they
// do not steal cores from the programs' loops (size: TRC_NUM_THREADS, a
// whole number in 1..1024, else the number of cores). Calls from several
// threads at once are serialized: one job's tasks never run beside
// another's; a call from inside a task runs its tasks on that thread.
// Precondition: fn does not throw (an exception escaping a task on a worker
// ends the process); report failures through the captured state instead.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_THREADPOOL_H
#define TRC_RUNTIME_THREADPOOL_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace trc::rt {

/// Threads that parallelFor uses (workers + the caller); at least 1.
int threadCount();

void parallelFor(int64_t n, const std::function<void(int64_t)> &fn);

/// The one reader of TRC_NUM_THREADS and OMP_NUM_THREADS' syntax, run at a
/// tool's start before libomp reads them: TRC_NUM_THREADS a whole number in
/// 1..1024, OMP_NUM_THREADS libomp's syntax (a positive integer or a
/// comma-separated list of them, each at most 1024). The error names the
/// variable and its value.
Status checkThreadVariables();

/// Where the runtime's threads are libomp's: whether `dir` (libomp's, by
/// default: /dev/shm) has room for the one page libomp maps there at its
/// first parallel region. libomp writes that page through the mapping, so
/// a full /dev/shm kills the process with SIGBUS and no message; refused
/// here instead, with the free bytes. A missing `dir` passes (libomp then
/// registers under /tmp); so does every build without libomp.
Status checkOpenMpSharedMemory(const char *dir = "/dev/shm");

/// Removes an empty libomp registration file of this process's pid
/// (__KMP_REGISTERED_LIB_<pid>_<uid> in /dev/shm and in TMPDIR or /tmp): a
/// process with the same pid that could not size it (a full disk) left it,
/// and libomp would map it and die of SIGBUS at its first parallel region.
/// No other live process has this pid, and an empty file registers nothing.
/// Call before the first parallel region. `dirs` for tests.
void removeStaleOpenMpRegistration(const std::vector<std::string> &dirs = {});

/// Whether the user set TRC_NUM_THREADS or OMP_NUM_THREADS.
bool threadCountSetByUser();

} // namespace trc::rt

#endif // TRC_RUNTIME_THREADPOOL_H
