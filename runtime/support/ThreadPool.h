//===- ThreadPool.h - a small sleeping worker pool -------------------------===//
//
// parallelFor(n, fn) runs fn(0..n-1) on the calling thread plus the pool's
// workers and returns when all are done. Idle workers sleep on a condition
// variable (they never spin), so they do not steal cores from the OpenMP
// loops of compiled programs. Size: TRC_NUM_THREADS, else the number of
// cores. Calls from several threads at once are serialized.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_THREADPOOL_H
#define TRC_RUNTIME_THREADPOOL_H

#include <cstdint>
#include <functional>

namespace trc::rt {

/// Threads that parallelFor uses (workers + the caller); at least 1.
int threadCount();

void parallelFor(int64_t n, const std::function<void(int64_t)> &fn);

} // namespace trc::rt

#endif // TRC_RUNTIME_THREADPOOL_H
