//===- CpuBackend.h - the CPU device backend --------------------------------===//
//
// Device memory is host memory (aligned_alloc, 64 bytes); copies are memcpy;
// run() calls the entry directly on the calling thread. The program's calls
// to trc_rt_* (Blas.h) resolve against the host process, which must export
// them (ENABLE_EXPORTS); constructing a CpuBackend makes sure they are linked.
// The host arena of offloaded activations is a separate allocation of the
// same kind, and the copy engine a ThreadCopyEngine (CopyEngine.h): the
// copies run on a worker thread beside the step, so the schedule's order is
// exercised on the CPU. TRC_OFFLOAD_COPY_DELAY_US=N (tests) holds each copy
// back N microseconds, so a step that read a copy before waiting for it
// would read stale memory.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CPUBACKEND_H
#define TRC_RUNTIME_CPUBACKEND_H

#include "runtime/backends/Backend.h"

#include <memory>

namespace trc::rt {

class CpuBackend final : public Backend {
public:
  CpuBackend();
  const char *target() const override { return "cpu"; }
  int64_t memoryBytes() const override;
  StatusOr<void *> allocate(size_t bytes) override;
  void deallocate(void *ptr) override;
  Status copyToDevice(void *dst, const void *src, size_t bytes) override;
  Status copyToHost(void *dst, const void *src, size_t bytes) override;
  Status copyOnDevice(void *dst, const void *src, size_t bytes) override;
  Status run(EntryFn entry, void **slots, void *arena) override;
  StatusOr<void *> allocateHost(size_t bytes) override { return allocate(bytes); }
  void deallocateHost(void *ptr) override { deallocate(ptr); }
  StatusOr<CopyEngine *> copyEngine() override;

private:
  std::unique_ptr<CopyEngine> copyEngine_;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_CPUBACKEND_H
