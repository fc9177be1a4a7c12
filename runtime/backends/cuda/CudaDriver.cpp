//===- CudaDriver.cpp - the CUDA driver API, loaded at run time -------------===//
//
// See CudaDriver.h. One X-macro lists every entry point once: the member it
// fills, the symbol it is looked up as, and whether it may be missing.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CudaDriver.h"

#include "runtime/support/DynamicLibrary.h"

#include <dlfcn.h>
#include <mutex>
#include <type_traits>

namespace trc::rt {

namespace {

#define TRC_CUDA_DRIVER_SYMBOLS(X)                                             \
  X(Init, "cuInit", false)                                                     \
  X(DriverGetVersion, "cuDriverGetVersion", false)                             \
  X(GetErrorString, "cuGetErrorString", false)                                 \
  X(GetErrorName, "cuGetErrorName", false)                                     \
  X(DeviceGetCount, "cuDeviceGetCount", false)                                 \
  X(DeviceGet, "cuDeviceGet", false)                                           \
  X(DeviceGetAttribute, "cuDeviceGetAttribute", false)                         \
  X(DeviceGetName, "cuDeviceGetName", false)                                   \
  X(DeviceTotalMem, "cuDeviceTotalMem_v2", false)                              \
  X(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", false)                 \
  X(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", false)            \
  X(CtxSetCurrent, "cuCtxSetCurrent", false)                                   \
  X(MemAlloc, "cuMemAlloc_v2", false)                                          \
  X(MemFree, "cuMemFree_v2", false)                                            \
  X(MemcpyHtoD, "cuMemcpyHtoD_v2", false)                                      \
  X(MemcpyDtoH, "cuMemcpyDtoH_v2", false)                                      \
  X(MemcpyDtoD, "cuMemcpyDtoD_v2", false)                                      \
  X(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", false)                            \
  X(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", false)                            \
  X(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", false)                            \
  X(MemsetD8, "cuMemsetD8_v2", false)                                          \
  X(MemsetD8Async, "cuMemsetD8Async", false)                                   \
  X(MemsetD2D8Async, "cuMemsetD2D8Async", false)                               \
  X(MemHostAlloc, "cuMemHostAlloc", false)                                     \
  X(MemFreeHost, "cuMemFreeHost", false)                                       \
  X(EventCreate, "cuEventCreate", false)                                       \
  X(EventDestroy, "cuEventDestroy_v2", false)                                  \
  X(EventRecord, "cuEventRecord", false)                                       \
  X(StreamWaitEvent, "cuStreamWaitEvent", false)                               \
  X(StreamCreate, "cuStreamCreate", false)                                     \
  X(StreamDestroy, "cuStreamDestroy_v2", false)                                \
  X(StreamSynchronize, "cuStreamSynchronize", false)                           \
  X(ModuleLoadData, "cuModuleLoadData", false)                                 \
  X(ModuleLoadDataEx, "cuModuleLoadDataEx", false)                             \
  X(ModuleUnload, "cuModuleUnload", false)                                     \
  X(ModuleGetFunction, "cuModuleGetFunction", false)                           \
  X(FuncSetAttribute, "cuFuncSetAttribute", false)                             \
  X(LaunchKernel, "cuLaunchKernel", false)                                     \
  X(StreamBeginCapture, "cuStreamBeginCapture_v2", true)                       \
  X(StreamEndCapture, "cuStreamEndCapture", true)                              \
  X(GraphInstantiate, "cuGraphInstantiateWithFlags", true)                     \
  X(GraphLaunch, "cuGraphLaunch", true)                                        \
  X(GraphDestroy, "cuGraphDestroy", true)                                      \
  X(GraphExecDestroy, "cuGraphExecDestroy", true)

const CudaDriverSymbol kSymbols[] = {
#define TRC_SYMBOL_ENTRY(member, name, optional) {name, optional},
    TRC_CUDA_DRIVER_SYMBOLS(TRC_SYMBOL_ENTRY)
#undef TRC_SYMBOL_ENTRY
};

std::mutex gMutex;
CudaDriver gDriver;
bool gLoaded = false;
std::string gLoadError; // a failed load is not retried

} // namespace

const CudaDriverSymbol *cudaDriverSymbols(size_t &count) {
  count = sizeof(kSymbols) / sizeof(kSymbols[0]);
  return kSymbols;
}

StatusOr<CudaDriver> bindCudaDriver(const std::string &library) {
  std::string why;
  void *lib = openLibrary(library, why);
  if (!lib) {
    return Status::error("the CUDA driver " + library + " is not installed (" +
                         why + ")");
  }
  CudaDriver api;
  api.library = lib;
  api.libraryName = library;
  SymbolBinder bind{lib, {}};
#define TRC_BIND(member, name, optional) bind(api.member, name, optional);
  TRC_CUDA_DRIVER_SYMBOLS(TRC_BIND)
#undef TRC_BIND
  if (!bind.missing.empty()) {
    ::dlclose(lib);
    return Status::error("the CUDA driver " + library + " has no symbol " + bind.missing +
                         " (a driver for CUDA 11.4 or newer is needed)");
  }
  return api;
}

std::string cudaResultString(const CudaDriver &api, int rc) {
  const char *text = nullptr, *name = nullptr;
  if (api.GetErrorString && api.GetErrorString(rc, &text) != cudaabi::kSuccess)
    text = nullptr;
  if (api.GetErrorName && api.GetErrorName(rc, &name) != cudaabi::kSuccess)
    name = nullptr;
  if (text && name)
    return std::string(text) + " (" + name + ")";
  if (text || name)
    return text ? text : name;
  return "CUDA error " + std::to_string(rc);
}

StatusOr<const CudaDriver *> loadCudaDriver() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gLoaded)
    return &gDriver;
  if (!gLoadError.empty())
    return Status::error(gLoadError);
  StatusOr<CudaDriver> bound = bindCudaDriver(cudaabi::kDriverLibrary);
  Status s = bound.status();
  CudaDriver api;
  if (s) {
    api = *std::move(bound);
    int rc = api.Init(0);
    if (rc == cudaabi::kErrorStubLibrary)
      s = Status::error(std::string("the CUDA driver ") + cudaabi::kDriverLibrary +
                        " found is the toolkit's stub library, not a driver (no "
                        "NVIDIA driver installed?)");
    else if (rc == cudaabi::kErrorNoDevice)
      s = Status::error("no CUDA device (cuInit: " + cudaResultString(api, rc) + ")");
    else
      s = cudaCheck(api, "cuInit", rc);
  }
  if (!s) {
    gLoadError = s.message();
    return s;
  }
  gDriver = api;
  gLoaded = true;
  return &gDriver;
}

StatusOr<int> cudaDeviceCount() {
  StatusOr<const CudaDriver *> api = loadCudaDriver();
  if (!api.ok())
    return api.status();
  int n = 0;
  if (Status s = cudaCheck(**api, "cuDeviceGetCount", (*api)->DeviceGetCount(&n)); !s)
    return s;
  return n;
}

} // namespace trc::rt
