//===- CopyEngine.h - asynchronous copies between device and host ----------===//
//
// What a step's offloaded activations move through (docs/ARTIFACT.md
// "Offloading"): a copy is started after everything the step has done so far
// (its source is final) and runs beside the step's later work; the step
// waits for it, by its number, before it reads the destination or reuses
// the source's memory. Each backend has one (Backend::copyEngine):
//
//   ThreadCopyEngine (here; the CPU backend's): one worker thread copies,
//     in start order, while the program computes; wait() blocks the caller
//     until that copy is done. `delay` holds each copy back before it
//     starts (tests: a step that did not wait would read stale memory).
//   CudaCopyEngine (cuda/CudaCopyEngine.h): cuMemcpyAsync on a copy stream
//     that waits for the compute stream with events; wait() makes the
//     compute stream wait for the copy's event.
//
// Preconditions: one thread starts and waits (the program's); a copy number
// is not started again before its wait; source and destination stay
// allocated until the wait.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_COPYENGINE_H
#define TRC_RUNTIME_COPYENGINE_H

#include "runtime/support/Status.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

namespace trc::rt {

enum class CopyDirection { ToHost, ToDevice };

class CopyEngine {
public:
  virtual ~CopyEngine() = default;
  /// Starts copy `id`: `bytes` from `src` to `dst` (`direction` says which
  /// is the host's).
  virtual Status start(int64_t id, CopyDirection direction, void *dst, const void *src,
                       size_t bytes) = 0;
  /// The step's later work happens after copy `id` is done.
  virtual Status wait(int64_t id) = 0;
  /// Every copy started is done (the end of a step that failed midway).
  virtual Status drain() = 0;
};

class ThreadCopyEngine final : public CopyEngine {
public:
  explicit ThreadCopyEngine(std::chrono::microseconds delay = std::chrono::microseconds(0));
  ~ThreadCopyEngine() override;
  ThreadCopyEngine(const ThreadCopyEngine &) = delete;
  ThreadCopyEngine &operator=(const ThreadCopyEngine &) = delete;

  Status start(int64_t id, CopyDirection direction, void *dst, const void *src,
               size_t bytes) override;
  Status wait(int64_t id) override;
  Status drain() override;
  /// Copies done since construction (tests).
  uint64_t copiesDone() const;

private:
  struct Job {
    int64_t id;
    void *dst;
    const void *src;
    size_t bytes;
  };
  void work();

  const std::chrono::microseconds delay_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  std::set<int64_t> pending_; // started, not yet copied
  uint64_t done_ = 0;
  bool stopping_ = false;
  std::thread worker_; // last: starts after the members it reads
};

} // namespace trc::rt

#endif // TRC_RUNTIME_COPYENGINE_H
