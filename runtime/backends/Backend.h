//===- Backend.h - the device backend interface -----------------------------===//
//
// A Backend owns device memory and runs a loaded program's entry on it:
// allocate/deallocate 64-byte-aligned device buffers, copy host<->device,
// run `trc_entry(slots, arena)` with device pointers. The CPU backend's device
// memory is host memory (CpuBackend.h); the CUDA backend (CudaBackend.h)
// loads the driver at run time. DeviceBuffer is the RAII owner of one
// allocation. createBackend() maps a --device name to a backend: "cpu",
// "cuda", and "auto" (cuda when a CUDA device is present, else cpu).
// Offloaded activations (docs/ARTIFACT.md "Offloading") live in a host arena
// the backend allocates (allocateHost: pinned on CUDA; HostBuffer owns it)
// and move through its copy engine (CopyEngine.h), which the program's
// trc_rt_offload_* calls use while a Session runs (Offload.h).
// Preconditions: a backend outlives every DeviceBuffer and HostBuffer it
// allocated.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_BACKEND_H
#define TRC_RUNTIME_BACKEND_H

#include "runtime/backends/CopyEngine.h"
#include "runtime/support/Status.h"

#include <cstddef>
#include <memory>
#include <string>

namespace trc::rt {

// The program's entry point (ARTIFACT.md).
using EntryFn = void (*)(void **slots, void *arena);

class Backend {
public:
  virtual ~Backend() = default;
  // The artifact target this backend runs ("cpu", "cuda").
  virtual const char *target() const = 0;
  /// The device's PCI bus id as NVML spells it ("00000000:3B:00.0"): how
  /// the GPU's utilisation is found (Nvml.h); empty for the CPU.
  virtual std::string pciBusId() const { return ""; }
  // The bytes the device holds (the CPU's: physical memory); 0: unknown.
  virtual int64_t memoryBytes() const = 0;
  /// A block of at least `bytes` bytes (a zero-byte request still yields a
  /// valid, non-null block), 64-byte aligned, zero-filled.
  virtual StatusOr<void *> allocate(size_t bytes) = 0;
  virtual void deallocate(void *ptr) = 0;
  virtual Status copyToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual Status copyToHost(void *dst, const void *src, size_t bytes) = 0;
  // Device to device (non-overlapping buffers).
  virtual Status copyOnDevice(void *dst, const void *src, size_t bytes) = 0;
  // Calls entry(slots, arena) with device pointers and waits for it.
  virtual Status run(EntryFn entry, void **slots, void *arena) = 0;
  /// The device stream programs run on (a CUstream), which a device
  /// communicator orders its work after (Communicator::setComputeStream);
  /// null for host backends.
  virtual void *computeStream() { return nullptr; }
  /// The communicators order themselves after computeStream() with events:
  /// launches need not be waited for before a collective.
  virtual void collectivesFollowStream() {}
  /// Host memory the device copies offloaded activations to and from: at
  /// least `bytes` (a zero-byte request still yields a valid block),
  /// 64-byte aligned, zero-filled; page-locked where that makes the
  /// device's copies asynchronous (CUDA).
  virtual StatusOr<void *> allocateHost(size_t bytes) = 0;
  virtual void deallocateHost(void *ptr) = 0;
  /// The engine that runs the copies between device memory and the host
  /// arena, made on first use; it lives as long as the backend.
  virtual StatusOr<CopyEngine *> copyEngine() = 0;
};

/// The RAII owner of one block a backend allocates: device memory
/// (DeviceBuffer: allocate/deallocate) or the host arena's memory
/// (HostBuffer: allocateHost/deallocateHost).
template <StatusOr<void *> (Backend::*Allocate)(size_t), void (Backend::*Deallocate)(void *)>
class BackendBuffer {
public:
  BackendBuffer() = default;
  ~BackendBuffer() { reset(); }
  BackendBuffer(BackendBuffer &&other) noexcept { *this = std::move(other); }
  BackendBuffer &operator=(BackendBuffer &&other) noexcept {
    if (this != &other) {
      reset();
      backend_ = other.backend_;
      ptr_ = other.ptr_;
      size_ = other.size_;
      other.backend_ = nullptr;
      other.ptr_ = nullptr;
      other.size_ = 0;
    }
    return *this;
  }
  BackendBuffer(const BackendBuffer &) = delete;
  BackendBuffer &operator=(const BackendBuffer &) = delete;

  Status allocate(Backend &backend, size_t bytes) {
    reset();
    StatusOr<void *> p = (backend.*Allocate)(bytes);
    if (!p.ok())
      return p.status();
    backend_ = &backend;
    ptr_ = *p;
    size_ = bytes;
    return Status::success();
  }
  void reset() {
    if (backend_ && ptr_)
      (backend_->*Deallocate)(ptr_);
    backend_ = nullptr;
    ptr_ = nullptr;
    size_ = 0;
  }
  void *get() const { return ptr_; }
  size_t size() const { return size_; }

private:
  Backend *backend_ = nullptr;
  void *ptr_ = nullptr;
  size_t size_ = 0;
};

using DeviceBuffer = BackendBuffer<&Backend::allocate, &Backend::deallocate>;
using HostBuffer = BackendBuffer<&Backend::allocateHost, &Backend::deallocateHost>;

// "cpu" -> the CPU backend; "cuda" -> the CUDA backend, or an error saying
// what is missing ("--device cuda: the CUDA driver libcuda.so.1 is not
// installed (...)", "--device cuda: no CUDA device (...)"); "auto" -> the
// CUDA backend when the driver loads and sees a device, else the CPU
// backend; anything else -> an error naming the accepted values.
StatusOr<std::unique_ptr<Backend>> createBackend(const std::string &device);

} // namespace trc::rt

#endif // TRC_RUNTIME_BACKEND_H
