//===- CopyEngine.cpp - the CPU backend's copy engine ----------------------===//
//
// ThreadCopyEngine of CopyEngine.h: a FIFO of copies served by one worker.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/CopyEngine.h"

#include <cstring>

namespace trc::rt {

ThreadCopyEngine::ThreadCopyEngine(std::chrono::microseconds delay)
    : delay_(delay), worker_([this] { work(); }) {}

ThreadCopyEngine::~ThreadCopyEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void ThreadCopyEngine::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return; // stopping, nothing left
    Job job = queue_.front();
    queue_.pop_front();
    lock.unlock();
    if (delay_.count() > 0)
      std::this_thread::sleep_for(delay_);
    if (job.bytes)
      std::memcpy(job.dst, job.src, job.bytes);
    lock.lock();
    pending_.erase(job.id);
    ++done_;
    changed_.notify_all();
  }
}

Status ThreadCopyEngine::start(int64_t id, CopyDirection, void *dst, const void *src,
                               size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pending_.insert(id).second)
      return Status::error("copy " + std::to_string(id) + " started again before its wait");
    queue_.push_back({id, dst, src, bytes});
  }
  changed_.notify_all();
  return Status::success();
}

Status ThreadCopyEngine::wait(int64_t id) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !pending_.count(id); });
  return Status::success();
}

Status ThreadCopyEngine::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return pending_.empty(); });
  return Status::success();
}

uint64_t ThreadCopyEngine::copiesDone() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

} // namespace trc::rt
