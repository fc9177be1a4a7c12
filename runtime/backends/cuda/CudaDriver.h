//===- CudaDriver.h - the CUDA driver API, loaded at run time ---------------===//
//
// CudaDriver is a table of the driver entry points the CUDA backend uses
// (CudaAbi.h), looked up with dlsym in libcuda.so.1, taking the `_v2`
// symbol where cuda.h maps the plain name to one (cuMemAlloc_v2,
// cuMemcpyHtoD_v2, cuStreamBeginCapture_v2, ...). Nothing links the driver
// and no CUDA header is needed to build: where the driver is missing the
// runtime still builds and runs on the CPU.
//
//   bindCudaDriver(library)       dlopens `library` and looks every symbol
//                                 up (no call is made); the message names
//                                 the library and the first missing symbol.
//   loadCudaDriver()              the process's driver: binds libcuda.so.1
//                                 once and calls cuInit(0). Errors say which
//                                 of "not installed" (dlopen failed), "a
//                                 stub" (the toolkit's stubs/libcuda.so
//                                 found instead of a driver), "no CUDA
//                                 device" or another cuInit failure.
//   cudaDeviceCount()             loadCudaDriver + cuDeviceGetCount.
//   cudaCheck(api, "cuMemAlloc", rc)  success, or "cuMemAlloc: out of memory
//                                 (CUDA_ERROR_OUT_OF_MEMORY)".
//
// The graph entry points (capture, instantiate, launch, destroy) are
// optional: a driver without them (older than CUDA 11.4) leaves them null
// and the backend runs every step without graphs.
// Preconditions: none; every function may be called from any thread.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CUDADRIVER_H
#define TRC_RUNTIME_CUDADRIVER_H

#include "runtime/backends/cuda/CudaAbi.h"
#include "runtime/support/Status.h"

#include <string>

namespace trc::rt {

struct CudaDriver {
  void *library = nullptr; // the dlopen handle (never closed)
  std::string libraryName;
  cudaabi::InitFn Init = nullptr;
  cudaabi::DriverGetVersionFn DriverGetVersion = nullptr;
  cudaabi::GetErrorStringFn GetErrorString = nullptr;
  cudaabi::GetErrorNameFn GetErrorName = nullptr;
  cudaabi::DeviceGetCountFn DeviceGetCount = nullptr;
  cudaabi::DeviceGetFn DeviceGet = nullptr;
  cudaabi::DeviceGetAttributeFn DeviceGetAttribute = nullptr;
  cudaabi::DeviceGetNameFn DeviceGetName = nullptr;
  cudaabi::DeviceTotalMemFn DeviceTotalMem = nullptr;
  cudaabi::DevicePrimaryCtxRetainFn DevicePrimaryCtxRetain = nullptr;
  cudaabi::DevicePrimaryCtxReleaseFn DevicePrimaryCtxRelease = nullptr;
  cudaabi::CtxSetCurrentFn CtxSetCurrent = nullptr;
  cudaabi::MemAllocFn MemAlloc = nullptr;
  cudaabi::MemFreeFn MemFree = nullptr;
  cudaabi::MemcpyHtoDFn MemcpyHtoD = nullptr;
  cudaabi::MemcpyDtoHFn MemcpyDtoH = nullptr;
  cudaabi::MemcpyDtoDFn MemcpyDtoD = nullptr;
  cudaabi::MemcpyHtoDAsyncFn MemcpyHtoDAsync = nullptr;
  cudaabi::MemcpyDtoHAsyncFn MemcpyDtoHAsync = nullptr;
  cudaabi::MemcpyDtoDAsyncFn MemcpyDtoDAsync = nullptr;
  cudaabi::MemsetD8Fn MemsetD8 = nullptr;
  cudaabi::MemsetD8AsyncFn MemsetD8Async = nullptr;
  cudaabi::MemsetD2D8AsyncFn MemsetD2D8Async = nullptr;
  cudaabi::MemHostAllocFn MemHostAlloc = nullptr;
  cudaabi::MemFreeHostFn MemFreeHost = nullptr;
  cudaabi::EventCreateFn EventCreate = nullptr;
  cudaabi::EventDestroyFn EventDestroy = nullptr;
  cudaabi::EventRecordFn EventRecord = nullptr;
  cudaabi::StreamWaitEventFn StreamWaitEvent = nullptr;
  cudaabi::StreamCreateFn StreamCreate = nullptr;
  cudaabi::StreamDestroyFn StreamDestroy = nullptr;
  cudaabi::StreamSynchronizeFn StreamSynchronize = nullptr;
  cudaabi::ModuleLoadDataFn ModuleLoadData = nullptr;
  cudaabi::ModuleLoadDataExFn ModuleLoadDataEx = nullptr;
  cudaabi::ModuleUnloadFn ModuleUnload = nullptr;
  cudaabi::ModuleGetFunctionFn ModuleGetFunction = nullptr;
  cudaabi::FuncSetAttributeFn FuncSetAttribute = nullptr;
  cudaabi::LaunchKernelFn LaunchKernel = nullptr;
  // Optional (null on drivers without them).
  cudaabi::StreamBeginCaptureFn StreamBeginCapture = nullptr;
  cudaabi::StreamEndCaptureFn StreamEndCapture = nullptr;
  cudaabi::GraphInstantiateFn GraphInstantiate = nullptr;
  cudaabi::GraphLaunchFn GraphLaunch = nullptr;
  cudaabi::GraphDestroyFn GraphDestroy = nullptr;
  cudaabi::GraphExecDestroyFn GraphExecDestroy = nullptr;

  bool hasGraphs() const {
    return StreamBeginCapture && StreamEndCapture && GraphInstantiate && GraphLaunch &&
           GraphDestroy && GraphExecDestroy;
  }
};

// The symbol names bindCudaDriver looks up, required ones first; `optional`
// tells which (for tests that check a library exports them).
struct CudaDriverSymbol {
  const char *name;
  bool optional;
};
const CudaDriverSymbol *cudaDriverSymbols(size_t &count);

/// The entry points of the driver library `library` (see above).
StatusOr<CudaDriver> bindCudaDriver(const std::string &library);
/// The process's driver, bound and initialized once (see above).
StatusOr<const CudaDriver *> loadCudaDriver();
/// The number of CUDA devices this process sees.
StatusOr<int> cudaDeviceCount();

// "<cuGetErrorString text> (<cuGetErrorName>)", or "CUDA error N" when the
// driver knows no name for it.
std::string cudaResultString(const CudaDriver &api, int rc);
inline Status cudaCheck(const CudaDriver &api, const char *call, int rc) {
  if (rc == cudaabi::kSuccess)
    return Status::success();
  return Status::error(std::string(call) + ": " + cudaResultString(api, rc));
}

} // namespace trc::rt

#endif // TRC_RUNTIME_CUDADRIVER_H
