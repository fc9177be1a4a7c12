//===- CpuBackend.h - the CPU device backend --------------------------------===//
//
// Device memory is host memory (aligned_alloc, 64 bytes); copies are memcpy;
// run() calls the entry directly on the calling thread. The program's calls
// to trc_rt_* (Blas.h) resolve against the host process, which must export
// them (ENABLE_EXPORTS); constructing a CpuBackend makes sure they are linked.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CPUBACKEND_H
#define TRC_RUNTIME_CPUBACKEND_H

#include "runtime/backends/Backend.h"

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
};

} // namespace trc::rt

#endif // TRC_RUNTIME_CPUBACKEND_H
