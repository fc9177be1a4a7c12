//===- FakeNvml.cpp - a stand-in for libnvidia-ml.so.1 (tests only) --------===//
//
// Built as fake-cuda/libnvidia-ml.so.1: NvmlTest.cpp loads it through
// TRC_NVML_LIBRARY, and the fake-CUDA ctests find it on LD_LIBRARY_PATH
// beside FakeCudaDriver.cpp's device. One GPU, at PCI bus id
// 00000000:3B:00.0 (the fake driver's), busy 87% of the time with 1.5 GiB
// of its 80 GiB in use; any other bus id is NVML_ERROR_NOT_FOUND.
//
//===----------------------------------------------------------------------===//
#include <cstring>
#include <strings.h>

namespace {
constexpr int kSuccess = 0, kNotFound = 6, kUninitialized = 1;
struct Utilization {
  unsigned int gpu, memory;
};
struct Memory {
  unsigned long long total, free, used;
};
int gpu = 0;           // the device handle points here
bool initialized = false;
} // namespace

extern "C" {
int nvmlInit_v2() {
  initialized = true;
  return kSuccess;
}
int nvmlShutdown() {
  initialized = false;
  return kSuccess;
}
const char *nvmlErrorString(int rc) {
  return rc == kNotFound ? "Not Found" : rc == kUninitialized ? "Uninitialized" : "Unknown Error";
}
int nvmlDeviceGetHandleByPciBusId_v2(const char *busId, void **device) {
  if (!initialized)
    return kUninitialized;
  if (!busId || ::strcasecmp(busId, "00000000:3B:00.0") != 0)
    return kNotFound;
  *device = &gpu;
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(void *device, Utilization *u) {
  if (device != &gpu)
    return kNotFound;
  u->gpu = 87;
  u->memory = 40;
  return kSuccess;
}
int nvmlDeviceGetMemoryInfo(void *device, Memory *m) {
  if (device != &gpu)
    return kNotFound;
  m->total = 80ull << 30;
  m->used = 3ull << 29;
  m->free = m->total - m->used;
  return kSuccess;
}
}
