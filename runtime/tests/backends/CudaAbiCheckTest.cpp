//===- CudaAbiCheckTest.cpp - CudaAbi.h and CublasLtAbi.h against the headers ===//
//
// Built only where CMake finds the CUDA toolkit's cuda.h and cublasLt.h (the
// runtime itself never includes them). At compile time:
//   * every constant CudaAbi.h / CublasLtAbi.h spells out equals the
//     header's enumerator;
//   * every entry-point type equals the header's declaration of the symbol
//     the runtime dlsyms (cuMemAlloc_v2, cuStreamBeginCapture_v2,
//     cuGraphInstantiateWithFlags, ...) after mapping the header's types to
//     the ABI's: enums -> int, opaque handles (CUcontext, cudaStream_t,
//     cublasLtHandle_t, ...) -> void *, the two cuBLASLt structs -> the
//     reproductions, everything else unchanged (CUdeviceptr, size_t,
//     uint64_t, int64_t, pointers to them);
//   * the reproduced structs have the header's size, alignment and member
//     offsets.
// A wrong parameter, a missing _v2 or a changed enum fails the build.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CublasLtAbi.h"
#include "runtime/backends/cuda/CudaAbi.h"

#include <cublasLt.h>
#include <cuda.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <type_traits>

namespace cabi = trc::rt::cudaabi;
namespace labi = trc::rt::cublasltabi;

namespace {

// The ABI type a header type is passed as.
template <typename T> struct Abi {
  static_assert(sizeof(std::conditional_t<std::is_enum_v<T>, T, int>) == sizeof(int),
                "an enum that is not int-sized");
  using type = std::conditional_t<std::is_enum_v<T>, int, T>;
};
template <typename T> struct Abi<T *> { using type = typename Abi<T>::type *; };
template <typename T> struct Abi<const T> { using type = const typename Abi<T>::type; };
#define TRC_OPAQUE(T)                                                          \
  template <> struct Abi<T> { using type = void *; };
TRC_OPAQUE(CUcontext)
TRC_OPAQUE(CUstream)
TRC_OPAQUE(CUmodule)
TRC_OPAQUE(CUfunction)
TRC_OPAQUE(CUgraph)
TRC_OPAQUE(CUgraphExec)
TRC_OPAQUE(CUevent)
TRC_OPAQUE(cublasLtHandle_t)
TRC_OPAQUE(cublasLtMatmulDesc_t)
TRC_OPAQUE(cublasLtMatrixLayout_t)
TRC_OPAQUE(cublasLtMatmulPreference_t)
#undef TRC_OPAQUE
template <> struct Abi<cublasLtMatmulAlgo_t> { using type = labi::MatmulAlgo; };
template <> struct Abi<cublasLtMatmulHeuristicResult_t> {
  using type = labi::HeuristicResult;
};

template <typename F> struct AbiFn;
template <typename R, typename... A> struct AbiFn<R (*)(A...)> {
  using type = typename Abi<R>::type (*)(typename Abi<A>::type...);
};

#define TRC_CHECK_FN(symbol, AbiType)                                          \
  static_assert(std::is_same_v<AbiFn<decltype(&::symbol)>::type, AbiType>,     \
                #symbol " does not match " #AbiType)

// --- the driver --------------------------------------------------------------
static_assert(std::is_same_v<CUdevice, cabi::Device>);
static_assert(std::is_same_v<CUdeviceptr, cabi::DevicePtr>);
static_assert(sizeof(CUresult) == sizeof(int));

TRC_CHECK_FN(cuInit, cabi::InitFn);
TRC_CHECK_FN(cuDriverGetVersion, cabi::DriverGetVersionFn);
TRC_CHECK_FN(cuGetErrorString, cabi::GetErrorStringFn);
TRC_CHECK_FN(cuGetErrorName, cabi::GetErrorNameFn);
TRC_CHECK_FN(cuDeviceGetCount, cabi::DeviceGetCountFn);
TRC_CHECK_FN(cuDeviceGet, cabi::DeviceGetFn);
TRC_CHECK_FN(cuDeviceGetAttribute, cabi::DeviceGetAttributeFn);
TRC_CHECK_FN(cuDeviceGetName, cabi::DeviceGetNameFn);
TRC_CHECK_FN(cuDeviceTotalMem_v2, cabi::DeviceTotalMemFn);
TRC_CHECK_FN(cuDevicePrimaryCtxRetain, cabi::DevicePrimaryCtxRetainFn);
TRC_CHECK_FN(cuDevicePrimaryCtxRelease_v2, cabi::DevicePrimaryCtxReleaseFn);
TRC_CHECK_FN(cuCtxSetCurrent, cabi::CtxSetCurrentFn);
TRC_CHECK_FN(cuMemAlloc_v2, cabi::MemAllocFn);
TRC_CHECK_FN(cuMemFree_v2, cabi::MemFreeFn);
TRC_CHECK_FN(cuMemcpyHtoD_v2, cabi::MemcpyHtoDFn);
TRC_CHECK_FN(cuMemcpyDtoH_v2, cabi::MemcpyDtoHFn);
TRC_CHECK_FN(cuMemcpyDtoD_v2, cabi::MemcpyDtoDFn);
TRC_CHECK_FN(cuMemcpyHtoDAsync_v2, cabi::MemcpyHtoDAsyncFn);
TRC_CHECK_FN(cuMemcpyDtoHAsync_v2, cabi::MemcpyDtoHAsyncFn);
TRC_CHECK_FN(cuMemcpyDtoDAsync_v2, cabi::MemcpyDtoDAsyncFn);
TRC_CHECK_FN(cuMemsetD8_v2, cabi::MemsetD8Fn);
TRC_CHECK_FN(cuMemsetD8Async, cabi::MemsetD8AsyncFn);
TRC_CHECK_FN(cuMemsetD2D8Async, cabi::MemsetD2D8AsyncFn);
TRC_CHECK_FN(cuMemHostAlloc, cabi::MemHostAllocFn);
TRC_CHECK_FN(cuMemFreeHost, cabi::MemFreeHostFn);
TRC_CHECK_FN(cuEventCreate, cabi::EventCreateFn);
TRC_CHECK_FN(cuEventDestroy_v2, cabi::EventDestroyFn);
TRC_CHECK_FN(cuEventRecord, cabi::EventRecordFn);
TRC_CHECK_FN(cuStreamWaitEvent, cabi::StreamWaitEventFn);
TRC_CHECK_FN(cuStreamCreate, cabi::StreamCreateFn);
TRC_CHECK_FN(cuStreamDestroy_v2, cabi::StreamDestroyFn);
TRC_CHECK_FN(cuStreamSynchronize, cabi::StreamSynchronizeFn);
TRC_CHECK_FN(cuModuleLoadData, cabi::ModuleLoadDataFn);
TRC_CHECK_FN(cuModuleLoadDataEx, cabi::ModuleLoadDataExFn);
TRC_CHECK_FN(cuModuleUnload, cabi::ModuleUnloadFn);
TRC_CHECK_FN(cuModuleGetFunction, cabi::ModuleGetFunctionFn);
TRC_CHECK_FN(cuFuncSetAttribute, cabi::FuncSetAttributeFn);
TRC_CHECK_FN(cuLaunchKernel, cabi::LaunchKernelFn);
TRC_CHECK_FN(cuStreamBeginCapture_v2, cabi::StreamBeginCaptureFn);
TRC_CHECK_FN(cuStreamEndCapture, cabi::StreamEndCaptureFn);
TRC_CHECK_FN(cuGraphInstantiateWithFlags, cabi::GraphInstantiateFn);
TRC_CHECK_FN(cuGraphLaunch, cabi::GraphLaunchFn);
TRC_CHECK_FN(cuGraphDestroy, cabi::GraphDestroyFn);
TRC_CHECK_FN(cuGraphExecDestroy, cabi::GraphExecDestroyFn);

static_assert(cabi::kSuccess == CUDA_SUCCESS);
static_assert(cabi::kErrorDeinitialized == CUDA_ERROR_DEINITIALIZED);
static_assert(cabi::kErrorStubLibrary == CUDA_ERROR_STUB_LIBRARY);
static_assert(cabi::kErrorNoDevice == CUDA_ERROR_NO_DEVICE);
static_assert(cabi::kErrorNoBinaryForGpu == CUDA_ERROR_NO_BINARY_FOR_GPU);
static_assert(cabi::kErrorNotFound == CUDA_ERROR_NOT_FOUND);
static_assert(cabi::kErrorNotReady == CUDA_ERROR_NOT_READY);
static_assert(cabi::kErrorStreamCaptureInvalidated == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
static_assert(cabi::kAttrMultiprocessorCount == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
static_assert(cabi::kAttrPciBusId == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID);
static_assert(cabi::kAttrPciDeviceId == CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID);
static_assert(cabi::kAttrPciDomainId == CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID);
static_assert(cabi::kAttrComputeCapabilityMajor ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(cabi::kAttrComputeCapabilityMinor ==
              CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(cabi::kAttrMaxSharedMemoryPerBlockOptin ==
              CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
static_assert(cabi::kStreamNonBlocking == CU_STREAM_NON_BLOCKING);
static_assert(cabi::kEventDisableTiming == CU_EVENT_DISABLE_TIMING);
static_assert(cabi::kCaptureModeThreadLocal == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
static_assert(cabi::kFuncAttrMaxDynamicSharedSizeBytes ==
              CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
static_assert(cabi::kJitErrorLogBuffer == CU_JIT_ERROR_LOG_BUFFER);
static_assert(cabi::kJitErrorLogBufferSizeBytes == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);

// --- cuBLASLt ----------------------------------------------------------------
TRC_CHECK_FN(cublasLtCreate, labi::CreateFn);
TRC_CHECK_FN(cublasLtDestroy, labi::DestroyFn);
TRC_CHECK_FN(cublasLtGetVersion, labi::GetVersionFn);
TRC_CHECK_FN(cublasLtGetStatusString, labi::GetStatusStringFn);
TRC_CHECK_FN(cublasLtGetStatusName, labi::GetStatusNameFn);
TRC_CHECK_FN(cublasLtMatmulDescCreate, labi::MatmulDescCreateFn);
TRC_CHECK_FN(cublasLtMatmulDescDestroy, labi::MatmulDescDestroyFn);
TRC_CHECK_FN(cublasLtMatmulDescSetAttribute, labi::MatmulDescSetAttributeFn);
TRC_CHECK_FN(cublasLtMatrixLayoutCreate, labi::MatrixLayoutCreateFn);
TRC_CHECK_FN(cublasLtMatrixLayoutDestroy, labi::MatrixLayoutDestroyFn);
TRC_CHECK_FN(cublasLtMatrixLayoutSetAttribute, labi::MatrixLayoutSetAttributeFn);
TRC_CHECK_FN(cublasLtMatmulPreferenceCreate, labi::MatmulPreferenceCreateFn);
TRC_CHECK_FN(cublasLtMatmulPreferenceDestroy, labi::MatmulPreferenceDestroyFn);
TRC_CHECK_FN(cublasLtMatmulPreferenceSetAttribute, labi::MatmulPreferenceSetAttributeFn);
TRC_CHECK_FN(cublasLtMatmulAlgoGetHeuristic, labi::MatmulAlgoGetHeuristicFn);
TRC_CHECK_FN(cublasLtMatmul, labi::MatmulFn);
// cudaStream_t is the driver's CUstream.
static_assert(std::is_same_v<cudaStream_t, CUstream>);

static_assert(sizeof(labi::MatmulAlgo) == sizeof(cublasLtMatmulAlgo_t));
static_assert(alignof(labi::MatmulAlgo) == alignof(cublasLtMatmulAlgo_t));
static_assert(sizeof(labi::HeuristicResult) == sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(alignof(labi::HeuristicResult) == alignof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(labi::HeuristicResult, algo) ==
              offsetof(cublasLtMatmulHeuristicResult_t, algo));
static_assert(offsetof(labi::HeuristicResult, workspaceSize) ==
              offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(labi::HeuristicResult, state) ==
              offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(offsetof(labi::HeuristicResult, wavesCount) ==
              offsetof(cublasLtMatmulHeuristicResult_t, wavesCount));
static_assert(offsetof(labi::HeuristicResult, reserved) ==
              offsetof(cublasLtMatmulHeuristicResult_t, reserved));

static_assert(labi::kStatusSuccess == CUBLAS_STATUS_SUCCESS);
static_assert(labi::kStatusNotSupported == CUBLAS_STATUS_NOT_SUPPORTED);
static_assert(labi::kR32F == CUDA_R_32F && labi::kR64F == CUDA_R_64F);
static_assert(labi::kR16F == CUDA_R_16F && labi::kR16BF == CUDA_R_16BF);
static_assert(labi::kCompute32F == CUBLAS_COMPUTE_32F);
static_assert(labi::kCompute32FFastTF32 == CUBLAS_COMPUTE_32F_FAST_TF32);
static_assert(labi::kCompute64F == CUBLAS_COMPUTE_64F);
static_assert(labi::kOpN == CUBLAS_OP_N && labi::kOpT == CUBLAS_OP_T);
static_assert(labi::kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA);
static_assert(labi::kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(labi::kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
static_assert(labi::kLayoutStridedBatchOffset == CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(labi::kPrefMaxWorkspaceBytes == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
static_assert(labi::kPrefMinAlignmentABytes == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES);
static_assert(labi::kPrefMinAlignmentBBytes == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES);
static_assert(labi::kPrefMinAlignmentCBytes == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES);
static_assert(labi::kPrefMinAlignmentDBytes == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);

} // namespace

TEST(CudaAbi, MatchesHeaders) { SUCCEED() << "checked at compile time"; }
