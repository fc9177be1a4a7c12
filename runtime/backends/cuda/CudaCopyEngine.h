//===- CudaCopyEngine.h - offloading's copies on a CUDA copy stream --------===//
//
// The CUDA backend's CopyEngine (runtime/backends/CopyEngine.h). Copy k:
//
//   start  cuEventRecord(ready[k], compute)      the step so far is enqueued
//          cuStreamWaitEvent(copy, ready[k])      the copy stream waits for it
//          cuMemcpyDtoHAsync / cuMemcpyHtoDAsync  on the copy stream
//          cuEventRecord(done[k], copy)
//   wait   cuStreamWaitEvent(compute, done[k])    later kernels wait for it
//
// so copies overlap the kernels enqueued between a start and its wait, the
// host never blocks, and a step whose every copy is waited for joins the
// copy stream back into the compute stream (which CUDA graph capture
// requires: the capture forks into the copy stream at the first start and
// rejoins at each wait). Events (CU_EVENT_DISABLE_TIMING) are made per copy
// number on first use and kept. The host side of every copy is the host
// arena, allocated page-locked (cuMemHostAlloc), without which
// cuMemcpyAsync would copy synchronously.
// Preconditions: the context is current when the engine is called; the
// compute stream outlives the engine.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CUDACOPYENGINE_H
#define TRC_RUNTIME_CUDACOPYENGINE_H

#include "runtime/backends/CopyEngine.h"
#include "runtime/backends/cuda/CudaDriver.h"

#include <memory>
#include <vector>

namespace trc::rt {

class CudaCopyEngine final : public CopyEngine {
public:
  /// An engine with a non-blocking copy stream of its own, beside the
  /// `compute` stream.
  static StatusOr<std::unique_ptr<CudaCopyEngine>> create(const CudaDriver &api,
                                                          cudaabi::Stream compute);
  ~CudaCopyEngine() override;
  CudaCopyEngine(const CudaCopyEngine &) = delete;
  CudaCopyEngine &operator=(const CudaCopyEngine &) = delete;

  Status start(int64_t id, CopyDirection direction, void *dst, const void *src,
               size_t bytes) override;
  Status wait(int64_t id) override;
  Status drain() override;
  cudaabi::Stream copyStream() const { return copy_; }

private:
  CudaCopyEngine(const CudaDriver &api, cudaabi::Stream compute) : api_(api), compute_(compute) {}
  Status ensureEvents(int64_t id);

  const CudaDriver &api_;
  cudaabi::Stream compute_ = nullptr;
  cudaabi::Stream copy_ = nullptr;
  std::vector<cudaabi::Event> ready_, done_; // by copy number
};

} // namespace trc::rt

#endif // TRC_RUNTIME_CUDACOPYENGINE_H
