//===- PipelineBuffers.h - per-microbatch buffers of a pipeline rank -*- C++ -*-===//
//
// The buffers PipelineExecutor binds into its stage programs' stash, send
// and receive slots: a pool per slot ("stash:3", "send:t0", "recv:t1"), each
// buffer lent to one microbatch from its F (or receive) until its last use,
// so a rank holds as many as its schedule has microbatches in flight.
//
// Activation offloading (offload_activations with pipeline stages): a
// stash can move to host memory (Backend::allocateHost) while the rank runs
// other microbatches and come back before its backward. Both moves go
// through the backend's copy engine (CopyEngine.h), so they run beside the
// programs: offload() starts the copy to the host, and its device buffer
// goes back to the pool at the next settleOffloads(); prefetch() starts
// the copy back; buffer() waits for it (or copies back at once when no
// prefetch was made). Which stashes move, and when, is the executor's
// choice (its schedule's look-ahead).
//
// Stash bytes are counted where they live: device-resident stashes (the
// schedule's activation memory) and host-resident ones, each with its peak.
// Preconditions: one thread; the backend outlives this object; a slot's
// byte size is the same for every microbatch.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_PIPELINEBUFFERS_H
#define TRC_RUNTIME_TRAIN_PIPELINEBUFFERS_H

#include "runtime/backends/Backend.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trc::rt {

class PipelineBuffers {
public:
  explicit PipelineBuffers(Backend &backend) : backend_(backend) {}
  /// Waits for the copies still running (their memory is freed after).
  ~PipelineBuffers();
  PipelineBuffers(const PipelineBuffers &) = delete;
  PipelineBuffers &operator=(const PipelineBuffers &) = delete;

  /// Microbatch `microbatch`'s device buffer of `slot` (`bytes` long),
  /// lent until release(); a stash on the host is copied back first.
  StatusOr<void *> buffer(const std::string &slot, int microbatch, uint64_t bytes);
  /// The buffer goes back to its pool (nothing when none is lent).
  void release(const std::string &slot, int microbatch);

  /// Starts copying a lent stash to host memory; its device buffer stays
  /// lent until settleOffloads().
  Status offload(const std::string &slot, int microbatch);
  /// Offloads started so far are done; their device buffers go back to
  /// their pools.
  Status settleOffloads();
  /// Starts copying a stash on the host back to a device buffer (nothing
  /// when it is not on the host or already coming back).
  Status prefetch(const std::string &slot, int microbatch);
  bool onHost(const std::string &slot, int microbatch) const;

  uint64_t peakDeviceStashBytes() const { return peakDevice_; }
  uint64_t peakHostStashBytes() const { return peakHost_; }

private:
  struct SlotPool {
    std::vector<DeviceBuffer> buffers;
    std::vector<size_t> free;
    std::map<int, size_t> lent; // microbatch -> buffer
    std::vector<HostBuffer> hostBuffers;
    std::vector<size_t> hostFree;
    std::map<int, size_t> onHost; // microbatch -> host buffer
    uint64_t bytes = 0;
    bool stash = false;
  };
  struct Copy {
    int64_t id;
    std::string slot;
    int microbatch;
  };
  SlotPool &pool(const std::string &slot, uint64_t bytes);
  StatusOr<size_t> lend(SlotPool &pool, const std::string &slot, int microbatch);
  StatusOr<CopyEngine *> engine();
  // Waits for the copy back of (slot, microbatch) and frees its host buffer.
  Status finishReload(SlotPool &pool, const std::string &slot, int microbatch);
  // Waits for `copy` (of `copies`), drops it, and frees the microbatch's
  // host buffer: the device buffer holds the stash.
  Status dropHostCopy(std::vector<Copy> &copies, std::vector<Copy>::iterator copy,
                      SlotPool &pool, int microbatch);
  void countDevice(const SlotPool &pool, int64_t sign);
  void countHost(const SlotPool &pool, int64_t sign);

  Backend &backend_;
  CopyEngine *copies_ = nullptr;
  int64_t nextCopy_ = 0;
  std::map<std::string, SlotPool> pools_;
  std::vector<Copy> offloading_, reloading_;
  uint64_t device_ = 0, host_ = 0, peakDevice_ = 0, peakHost_ = 0;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_PIPELINEBUFFERS_H
