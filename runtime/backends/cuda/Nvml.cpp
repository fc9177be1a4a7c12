//===- Nvml.cpp - a GPU's utilisation, from NVML (Nvml.h) ------------------===//
#include "runtime/backends/cuda/Nvml.h"

#include "runtime/support/DynamicLibrary.h"

#include <cstdlib>
#include <map>
#include <mutex>

namespace trc::rt {
namespace {

// NVML's ABI (nvml.h), the part used here; no NVIDIA header is needed.
constexpr int kNvmlSuccess = 0;
struct NvmlUtilization {
  unsigned int gpu, memory;
};
struct NvmlMemory {
  unsigned long long total, free, used;
};

} // namespace

struct NvmlDevice::Api {
  std::string library;
  int (*Init)() = nullptr;                                          // nvmlInit_v2
  const char *(*ErrorString)(int) = nullptr;                        // nvmlErrorString
  int (*DeviceGetHandleByPciBusId)(const char *, void **) = nullptr; // _v2
  int (*DeviceGetUtilizationRates)(void *, NvmlUtilization *) = nullptr;
  int (*DeviceGetMemoryInfo)(void *, NvmlMemory *) = nullptr;

  std::string error(const char *call, int rc) const {
    const char *text = ErrorString ? ErrorString(rc) : nullptr;
    return std::string(call) + ": " + (text ? text : "error " + std::to_string(rc));
  }
};

namespace {

/// The library NVML is loaded from: TRC_NVML_LIBRARY, else the driver's.
std::string nvmlLibrary(bool &named) {
  const char *env = std::getenv("TRC_NVML_LIBRARY");
  named = env && *env;
  return named ? env : "libnvidia-ml.so.1";
}

/// Loads and initializes the NVML `library` once per process (never
/// unloaded: samples may be taken until the process ends); a failure is
/// remembered with its reason.
StatusOr<const NvmlDevice::Api *> loadNvml() {
  struct Loaded {
    NvmlDevice::Api api;
    std::string failure;
  };
  static std::mutex mutex;
  static std::map<std::string, Loaded> loaded;
  bool named = false;
  std::string library = nvmlLibrary(named);
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, first] = loaded.try_emplace(library);
  Loaded &l = it->second;
  if (first) {
    NvmlDevice::Api &api = l.api;
    api.library = library;
    std::string why;
    void *lib = openLibrary(library, why);
    if (!lib) {
      l.failure = library + " (NVML, installed with the NVIDIA driver" +
                  (named ? "; named by TRC_NVML_LIBRARY" : "") + ") is not loadable: " + why;
    } else {
      SymbolBinder bind{lib, ""};
      bind(api.Init, "nvmlInit_v2");
      bind(api.ErrorString, "nvmlErrorString");
      bind(api.DeviceGetHandleByPciBusId, "nvmlDeviceGetHandleByPciBusId_v2");
      bind(api.DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates");
      bind(api.DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo");
      if (!bind.missing.empty())
        l.failure = library + " has no " + bind.missing + " (not NVML?)";
      else if (int rc = api.Init(); rc != kNvmlSuccess)
        l.failure = library + ": " + api.error("nvmlInit_v2", rc);
    }
  }
  if (!l.failure.empty())
    return Status::error(l.failure);
  return &l.api;
}

} // namespace

StatusOr<std::unique_ptr<NvmlDevice>> NvmlDevice::open(const std::string &pciBusId) {
  StatusOr<const Api *> api = loadNvml();
  if (!api.ok())
    return api.status();
  std::unique_ptr<NvmlDevice> device(new NvmlDevice());
  device->api_ = *api;
  if (int rc = (*api)->DeviceGetHandleByPciBusId(pciBusId.c_str(), &device->device_);
      rc != kNvmlSuccess)
    return Status::error("GPU " + pciBusId + ": " +
                         (*api)->error("nvmlDeviceGetHandleByPciBusId_v2", rc));
  return device;
}

NvmlDevice::~NvmlDevice() = default;

StatusOr<GpuSample> NvmlDevice::sample() const {
  NvmlUtilization utilization{};
  if (int rc = api_->DeviceGetUtilizationRates(device_, &utilization); rc != kNvmlSuccess)
    return Status::error(api_->error("nvmlDeviceGetUtilizationRates", rc));
  NvmlMemory memory{};
  if (int rc = api_->DeviceGetMemoryInfo(device_, &memory); rc != kNvmlSuccess)
    return Status::error(api_->error("nvmlDeviceGetMemoryInfo", rc));
  GpuSample s;
  s.utilisationPercent = utilization.gpu;
  s.memoryUsedMb = double(memory.used) / double(1 << 20);
  return s;
}

} // namespace trc::rt
