//===- Nvml.h - a GPU's utilisation, from NVML ------------------*- C++ -*-===//
//
// What the driver says a GPU is doing, for the profile's utilisation
// counters (RunProfile.h): the share of the last sample period in which a
// kernel ran on it (NVML's "GPU utilization", percent) and the device
// memory in use by every process (MiB). NVML is libnvidia-ml.so.1, which
// the driver installs; it is loaded at run time with dlopen (TRC_NVML_LIBRARY
// names another), so builds and machines without it are unaffected.
//
// The device is named by its PCI bus id ("00000000:3B:00.0", what
// CudaBackend::pciBusId gives): NVML's indices need not be CUDA's ordinals
// (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_BACKENDS_CUDA_NVML_H
#define TRC_RUNTIME_BACKENDS_CUDA_NVML_H

#include "runtime/support/Status.h"

#include <memory>
#include <string>

namespace trc::rt {

struct GpuSample {
  double utilisationPercent = 0; // kernels running, share of the period
  double memoryUsedMb = 0;       // device memory in use (all processes)
};

class NvmlDevice {
public:
  /// The device at `pciBusId`. The error says which library or device and
  /// why (not installed, no such device, NVML's own error text).
  static StatusOr<std::unique_ptr<NvmlDevice>> open(const std::string &pciBusId);
  ~NvmlDevice();
  NvmlDevice(const NvmlDevice &) = delete;
  NvmlDevice &operator=(const NvmlDevice &) = delete;

  StatusOr<GpuSample> sample() const;

  struct Api; // NVML's entry points (Nvml.cpp)

private:
  NvmlDevice() = default;
  const Api *api_ = nullptr;
  void *device_ = nullptr; // nvmlDevice_t
};

} // namespace trc::rt

#endif // TRC_RUNTIME_BACKENDS_CUDA_NVML_H
