//===- CudaCopyEngine.cpp - offloading's copies on a CUDA copy stream ------===//
//
// See CudaCopyEngine.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CudaCopyEngine.h"

#include <cstdint>

namespace trc::rt {

namespace {
cudaabi::DevicePtr devicePtr(const void *p) {
  return cudaabi::DevicePtr(reinterpret_cast<uintptr_t>(p));
}
} // namespace

StatusOr<std::unique_ptr<CudaCopyEngine>> CudaCopyEngine::create(const CudaDriver &api,
                                                                 cudaabi::Stream compute) {
  std::unique_ptr<CudaCopyEngine> engine(new CudaCopyEngine(api, compute));
  if (Status s = cudaCheck(api, "cuStreamCreate (copy stream)",
                           api.StreamCreate(&engine->copy_, cudaabi::kStreamNonBlocking));
      !s) {
    engine->copy_ = nullptr;
    return s;
  }
  return engine;
}

CudaCopyEngine::~CudaCopyEngine() {
  if (copy_)
    api_.StreamSynchronize(copy_);
  for (std::vector<cudaabi::Event> *events : {&ready_, &done_})
    for (cudaabi::Event e : *events)
      if (e)
        api_.EventDestroy(e);
  if (copy_)
    api_.StreamDestroy(copy_);
}

Status CudaCopyEngine::ensureEvents(int64_t id) {
  if (size_t(id) >= ready_.size()) {
    ready_.resize(size_t(id) + 1, nullptr);
    done_.resize(size_t(id) + 1, nullptr);
  }
  for (cudaabi::Event *e : {&ready_[size_t(id)], &done_[size_t(id)]})
    if (!*e) {
      if (Status s = cudaCheck(api_, "cuEventCreate",
                               api_.EventCreate(e, cudaabi::kEventDisableTiming));
          !s) {
        *e = nullptr;
        return s;
      }
    }
  return Status::success();
}

Status CudaCopyEngine::start(int64_t id, CopyDirection direction, void *dst, const void *src,
                             size_t bytes) {
  if (id < 0)
    return Status::error("bad copy number " + std::to_string(id));
  if (Status s = ensureEvents(id); !s)
    return s;
  cudaabi::Event ready = ready_[size_t(id)], done = done_[size_t(id)];
  if (Status s = cudaCheck(api_, "cuEventRecord", api_.EventRecord(ready, compute_)); !s)
    return s;
  if (Status s = cudaCheck(api_, "cuStreamWaitEvent", api_.StreamWaitEvent(copy_, ready, 0)); !s)
    return s;
  if (bytes) {
    Status s = direction == CopyDirection::ToHost
                   ? cudaCheck(api_, "cuMemcpyDtoHAsync",
                               api_.MemcpyDtoHAsync(dst, devicePtr(src), bytes, copy_))
                   : cudaCheck(api_, "cuMemcpyHtoDAsync",
                               api_.MemcpyHtoDAsync(devicePtr(dst), src, bytes, copy_));
    if (!s)
      return s;
  }
  return cudaCheck(api_, "cuEventRecord", api_.EventRecord(done, copy_));
}

Status CudaCopyEngine::wait(int64_t id) {
  if (id < 0 || size_t(id) >= done_.size() || !done_[size_t(id)])
    return Status::error("copy " + std::to_string(id) + " has no event (never started)");
  return cudaCheck(api_, "cuStreamWaitEvent",
                   api_.StreamWaitEvent(compute_, done_[size_t(id)], 0));
}

Status CudaCopyEngine::drain() {
  return cudaCheck(api_, "cuStreamSynchronize (copy stream)", api_.StreamSynchronize(copy_));
}

} // namespace trc::rt
