//===- CublasLtAbi.h - the parts of cuBLASLt's C ABI the runtime uses -------===//
//
// CublasLt.cpp loads libcublasLt.so.13 (else .so.12) at run time and is built
// without cublasLt.h, so it spells out what it needs: handles and descriptors
// are opaque pointers, cublasStatus_t / cudaDataType / cublasComputeType_t /
// every attribute enum are passed as int (their C ABI), cudaStream_t is the
// driver's CUstream. The two structs passed by pointer (the algorithm and the
// heuristic result) are reproduced with their exact layout. Where the CUDA
// toolkit's headers are found at build time, runtime/tests/
// CudaAbiCheckTest.cpp checks every value, both layouts and every function
// type here against cublasLt.h at compile time.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CUBLASLTABI_H
#define TRC_RUNTIME_CUBLASLTABI_H

#include <cstddef>
#include <cstdint>

namespace trc::rt::cublasltabi {

// Tried in order.
constexpr const char *kLibraries[] = {"libcublasLt.so.13", "libcublasLt.so.12"};

using Handle = void *;           // cublasLtHandle_t
using MatmulDesc = void *;       // cublasLtMatmulDesc_t
using MatrixLayout = void *;     // cublasLtMatrixLayout_t
using MatmulPreference = void *; // cublasLtMatmulPreference_t
using Stream = void *;           // cudaStream_t (= CUstream)

struct MatmulAlgo { // cublasLtMatmulAlgo_t
  uint64_t data[8];
};
struct HeuristicResult { // cublasLtMatmulHeuristicResult_t
  MatmulAlgo algo;
  size_t workspaceSize;
  int state; // cublasStatus_t
  float wavesCount;
  int reserved[4];
};

// cublasStatus_t
constexpr int kStatusSuccess = 0;
constexpr int kStatusNotSupported = 15;
// cudaDataType
constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14;
// cublasComputeType_t
constexpr int kCompute32F = 68, kCompute32FFastTF32 = 77, kCompute64F = 70;
// cublasOperation_t
constexpr int kOpN = 0, kOpT = 1;
// cublasLtMatmulDescAttributes_t
constexpr int kDescTransA = 3, kDescTransB = 4;
// cublasLtMatrixLayoutAttribute_t
constexpr int kLayoutBatchCount = 5, kLayoutStridedBatchOffset = 6;
// cublasLtMatmulPreferenceAttributes_t
constexpr int kPrefMaxWorkspaceBytes = 1;
constexpr int kPrefMinAlignmentABytes = 5, kPrefMinAlignmentBBytes = 6,
              kPrefMinAlignmentCBytes = 7, kPrefMinAlignmentDBytes = 8;

// Entry points (symbol = "cublasLt" + the name before Fn).
using CreateFn = int (*)(Handle *);
using DestroyFn = int (*)(Handle);
using GetVersionFn = size_t (*)();
using GetStatusStringFn = const char *(*)(int);
using GetStatusNameFn = const char *(*)(int);
using MatmulDescCreateFn = int (*)(MatmulDesc *, int, int);
using MatmulDescDestroyFn = int (*)(MatmulDesc);
using MatmulDescSetAttributeFn = int (*)(MatmulDesc, int, const void *, size_t);
using MatrixLayoutCreateFn = int (*)(MatrixLayout *, int, uint64_t, uint64_t, int64_t);
using MatrixLayoutDestroyFn = int (*)(MatrixLayout);
using MatrixLayoutSetAttributeFn = int (*)(MatrixLayout, int, const void *, size_t);
using MatmulPreferenceCreateFn = int (*)(MatmulPreference *);
using MatmulPreferenceDestroyFn = int (*)(MatmulPreference);
using MatmulPreferenceSetAttributeFn = int (*)(MatmulPreference, int, const void *,
                                               size_t);
using MatmulAlgoGetHeuristicFn = int (*)(Handle, MatmulDesc, MatrixLayout, MatrixLayout,
                                         MatrixLayout, MatrixLayout, MatmulPreference, int,
                                         HeuristicResult *, int *);
using MatmulFn = int (*)(Handle, MatmulDesc, const void *, const void *, MatrixLayout,
                         const void *, MatrixLayout, const void *, const void *,
                         MatrixLayout, void *, MatrixLayout, const MatmulAlgo *, void *,
                         size_t, Stream);

} // namespace trc::rt::cublasltabi

#endif // TRC_RUNTIME_CUBLASLTABI_H
