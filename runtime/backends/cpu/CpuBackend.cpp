//===- CpuBackend.cpp - the CPU device backend ------------------------------===//
//
// See CpuBackend.h; also createBackend() of Backend.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/CpuBackend.h"

#include "runtime/backends/cpu/Blas.h"
#include "runtime/backends/Offload.h"
#include "runtime/support/Parse.h"
#include "runtime/backends/cuda/CudaBackend.h"
#include "runtime/support/Tensor.h"

#include <cstdlib>
#include <unistd.h>
#include <cstring>

namespace trc::rt {

CpuBackend::CpuBackend() {
  // Referencing the table keeps Blas.o (and with it every trc_rt_* symbol the
  // program may call) in executables that link the static runtime library.
  (void)runtimeExports();
  (void)offloadExports();
  // Programs run their loop nests on OpenMP threads between matmuls that
  // run on the runtime's own pool. OpenMP workers by default spin 200 ms
  // after each region, stealing the pool's cores; with 0 they sleep at once
  // and a training step's ~thousand small regions pay a wake-up each
  // (measured on the GPT-2 benchmark: 9.4 s per training step at 0, 0.8 s
  // at 1 ms; forward 272 ms at 0, 218 ms at 1 ms, 255 ms at 200 ms). 1 ms
  // unless the user chose otherwise.
  setenv("KMP_BLOCKTIME", "1", /*overwrite=*/0);
}

int64_t CpuBackend::memoryBytes() const {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  return pages > 0 && size > 0 ? int64_t(pages) * int64_t(size) : 0;
}

StatusOr<void *> CpuBackend::allocate(size_t bytes) {
  if (bytes > SIZE_MAX - kAlignment)
    return Status::error("cannot allocate " + std::to_string(bytes) +
                         " bytes of CPU memory: out of memory");
  size_t rounded = bytes == 0 ? kAlignment
                              : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void *p = std::aligned_alloc(kAlignment, rounded);
  if (!p)
    return Status::error("cannot allocate " + std::to_string(bytes) +
                         " bytes of CPU memory: out of memory");
  std::memset(p, 0, rounded);
  return p;
}

void CpuBackend::deallocate(void *ptr) { std::free(ptr); }

Status CpuBackend::copyToDevice(void *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memcpy(dst, src, bytes);
  return Status::success();
}

Status CpuBackend::copyOnDevice(void *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memcpy(dst, src, bytes);
  return Status::success();
}

Status CpuBackend::copyToHost(void *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memcpy(dst, src, bytes);
  return Status::success();
}

Status CpuBackend::run(EntryFn entry, void **slots, void *arena) {
  if (!entry)
    return Status::error("no entry point to run");
  entry(slots, arena);
  return Status::success();
}

StatusOr<CopyEngine *> CpuBackend::copyEngine() {
  if (!copyEngine_) {
    std::chrono::microseconds delay(0);
    if (const char *v = std::getenv("TRC_OFFLOAD_COPY_DELAY_US"); v && *v) {
      std::optional<uint64_t> us = parseUint64(v, 10'000'000);
      if (!us)
        return Status::error("TRC_OFFLOAD_COPY_DELAY_US must be a number of microseconds "
                             "(at most 10000000), got '" +
                             std::string(v).substr(0, 32) + "'");
      delay = std::chrono::microseconds(*us);
    }
    copyEngine_ = std::make_unique<ThreadCopyEngine>(delay);
  }
  return copyEngine_.get();
}

StatusOr<std::unique_ptr<Backend>> createBackend(const std::string &device) {
  std::string why;
  if (device == "cuda" || (device == "auto" && cudaDevicePresent(why))) {
    StatusOr<std::unique_ptr<CudaBackend>> cuda = CudaBackend::create();
    if (!cuda.ok())
      return Status(cuda.status()).withPrefix("--device " + device + ": ");
    return std::unique_ptr<Backend>(*std::move(cuda));
  }
  if (device == "cpu" || device == "auto")
    return std::unique_ptr<Backend>(std::make_unique<CpuBackend>());
  return Status::error("unknown device '" + device +
                       "' (expected cpu, cuda or auto)");
}

} // namespace trc::rt
