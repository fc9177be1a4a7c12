//===- CudaAbi.h - the parts of the CUDA driver's C ABI the runtime uses ----===//
//
// The CUDA backend (CudaDriver.h) loads the driver, libcuda.so.1, at run time
// and is built without cuda.h, so it spells out what it needs: handles are
// opaque pointers, CUdeviceptr is a 64-bit integer, CUresult and every other
// enum is passed as int (their C ABI). Each entry point is a function-pointer
// type named after the symbol the backend looks up (the `_v2` symbol where
// cuda.h maps the plain name to one). When the CUDA toolkit's headers are
// found at build time, runtime/tests/backends/CudaAbiCheckTest.cpp checks every value
// and every function type here against cuda.h at compile time.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CUDAABI_H
#define TRC_RUNTIME_CUDAABI_H

#include <cstddef>

namespace trc::rt::cudaabi {

constexpr const char *kDriverLibrary = "libcuda.so.1";

// Handles (CUcontext, CUstream, CUmodule, CUfunction, CUgraph, CUgraphExec).
using Context = void *;
using Stream = void *;
using Module = void *;
using Function = void *;
using Graph = void *;
using GraphExec = void *;
using Event = void *;                      // CUevent
using Device = int;                        // CUdevice
using DevicePtr = unsigned long long;      // CUdeviceptr (CUdeviceptr_v2)

// CUresult
constexpr int kSuccess = 0;
constexpr int kErrorDeinitialized = 4;
constexpr int kErrorStubLibrary = 34;
constexpr int kErrorNoDevice = 100;
constexpr int kErrorNoBinaryForGpu = 209;
constexpr int kErrorNotFound = 500;
constexpr int kErrorNotReady = 600;
constexpr int kErrorStreamCaptureInvalidated = 901;

// CUdevice_attribute
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrPciBusId = 33;
constexpr int kAttrPciDeviceId = 34;
constexpr int kAttrPciDomainId = 50;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kAttrMaxSharedMemoryPerBlockOptin = 97;

// CUstream_flags
constexpr unsigned kStreamNonBlocking = 1;
// CUevent_flags
constexpr unsigned kEventDisableTiming = 2;
// CUstreamCaptureMode
constexpr int kCaptureModeThreadLocal = 1;
// CUfunction_attribute
constexpr int kFuncAttrMaxDynamicSharedSizeBytes = 8;
// CUjit_option
constexpr int kJitErrorLogBuffer = 5;
constexpr int kJitErrorLogBufferSizeBytes = 6;

// Entry points, as dlsym'd (symbol name in the comment).
using InitFn = int (*)(unsigned);                                  // cuInit
using DriverGetVersionFn = int (*)(int *);                         // cuDriverGetVersion
using GetErrorStringFn = int (*)(int, const char **);              // cuGetErrorString
using GetErrorNameFn = int (*)(int, const char **);                // cuGetErrorName
using DeviceGetCountFn = int (*)(int *);                           // cuDeviceGetCount
using DeviceGetFn = int (*)(Device *, int);                        // cuDeviceGet
using DeviceGetAttributeFn = int (*)(int *, int, Device);          // cuDeviceGetAttribute
using DeviceGetNameFn = int (*)(char *, int, Device);              // cuDeviceGetName
using DeviceTotalMemFn = int (*)(size_t *, Device);                // cuDeviceTotalMem_v2
using DevicePrimaryCtxRetainFn = int (*)(Context *, Device);       // cuDevicePrimaryCtxRetain
using DevicePrimaryCtxReleaseFn = int (*)(Device);                 // cuDevicePrimaryCtxRelease_v2
using CtxSetCurrentFn = int (*)(Context);                          // cuCtxSetCurrent
using MemAllocFn = int (*)(DevicePtr *, size_t);                   // cuMemAlloc_v2
using MemFreeFn = int (*)(DevicePtr);                              // cuMemFree_v2
using MemcpyHtoDFn = int (*)(DevicePtr, const void *, size_t);     // cuMemcpyHtoD_v2
using MemcpyDtoHFn = int (*)(void *, DevicePtr, size_t);           // cuMemcpyDtoH_v2
using MemcpyDtoDFn = int (*)(DevicePtr, DevicePtr, size_t);        // cuMemcpyDtoD_v2
using MemcpyHtoDAsyncFn = int (*)(DevicePtr, const void *, size_t, Stream); // cuMemcpyHtoDAsync_v2
using MemcpyDtoHAsyncFn = int (*)(void *, DevicePtr, size_t, Stream);       // cuMemcpyDtoHAsync_v2
using MemcpyDtoDAsyncFn = int (*)(DevicePtr, DevicePtr, size_t, Stream);    // cuMemcpyDtoDAsync_v2
using MemsetD8Fn = int (*)(DevicePtr, unsigned char, size_t);               // cuMemsetD8_v2
using MemsetD8AsyncFn = int (*)(DevicePtr, unsigned char, size_t, Stream);  // cuMemsetD8Async
using MemsetD2D8AsyncFn = int (*)(DevicePtr, size_t, unsigned char, size_t, size_t,
                                  Stream);                         // cuMemsetD2D8Async
using MemHostAllocFn = int (*)(void **, size_t, unsigned);         // cuMemHostAlloc
using MemFreeHostFn = int (*)(void *);                             // cuMemFreeHost
using EventCreateFn = int (*)(Event *, unsigned);                  // cuEventCreate
using EventDestroyFn = int (*)(Event);                             // cuEventDestroy_v2
using EventRecordFn = int (*)(Event, Stream);                      // cuEventRecord
using StreamWaitEventFn = int (*)(Stream, Event, unsigned);        // cuStreamWaitEvent
using StreamCreateFn = int (*)(Stream *, unsigned);                // cuStreamCreate
using StreamDestroyFn = int (*)(Stream);                           // cuStreamDestroy_v2
using StreamSynchronizeFn = int (*)(Stream);                       // cuStreamSynchronize
using ModuleLoadDataFn = int (*)(Module *, const void *);          // cuModuleLoadData
using ModuleLoadDataExFn = int (*)(Module *, const void *, unsigned, int *,
                                   void **);                       // cuModuleLoadDataEx
using ModuleUnloadFn = int (*)(Module);                            // cuModuleUnload
using ModuleGetFunctionFn = int (*)(Function *, Module, const char *); // cuModuleGetFunction
using FuncSetAttributeFn = int (*)(Function, int, int);            // cuFuncSetAttribute
using LaunchKernelFn = int (*)(Function, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, unsigned, Stream, void **,
                               void **);                           // cuLaunchKernel
using StreamBeginCaptureFn = int (*)(Stream, int);                 // cuStreamBeginCapture_v2
using StreamEndCaptureFn = int (*)(Stream, Graph *);               // cuStreamEndCapture
using GraphInstantiateFn = int (*)(GraphExec *, Graph, unsigned long long); // cuGraphInstantiateWithFlags
using GraphLaunchFn = int (*)(GraphExec, Stream);                  // cuGraphLaunch
using GraphDestroyFn = int (*)(Graph);                             // cuGraphDestroy
using GraphExecDestroyFn = int (*)(GraphExec);                     // cuGraphExecDestroy

} // namespace trc::rt::cudaabi

#endif // TRC_RUNTIME_CUDAABI_H
