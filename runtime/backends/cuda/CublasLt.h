//===- CublasLt.h - matrix products on the GPU with cuBLASLt ----------------===//
//
// The work behind trc_rt_cublaslt_matmul_<t> (docs/ARTIFACT.md "Target
// cuda"): the arguments of the CPU trc_rt_matmul_<t> (Blas.h) - batched,
// row-major C[b] = op(A[b]) * op(B[b]), leading dimensions and batch strides
// in elements, C overwritten - on device pointers, enqueued on a stream.
//
// cuBLASLt is column-major; a row-major C = op(A) op(B) is computed as the
// column-major C^T = op(B)^T op(A)^T, which reads the same bytes: B's
// storage seen column-major is the first operand (transposed iff transB),
// A's the second (iff transA), C's storage is the column-major n x m
// result. Batches are one strided-batched call (BATCH_COUNT and
// STRIDED_BATCH_OFFSET on every layout; a batch stride of 0 broadcasts);
// where cuBLASLt finds no algorithm for that, one call per batch.
//
// Types: f32 (CUBLAS_COMPUTE_32F, or _FAST_TF32 when TRC_ALLOW_TF32=1 in the
// environment when the instance is made), f64 (COMPUTE_64F), bf16 and f16
// operands with an f32 result (COMPUTE_32F: f32 accumulation).
//
// A plan (descriptors, layouts, the heuristic's algorithm) is made once per
// key - type, sizes, leading dimensions, strides, transposes and the
// operands' pointer alignment (cuBLASLt assumes 256-byte-aligned buffers
// unless told otherwise; a slice of an arena is often less) - and reused.
// One workspace (32 MiB) is allocated when the instance is made. k == 0
// zero-fills C's rows byte by byte (cuMemsetD2D8Async: any element size
// and alignment), sizes <= 0 do nothing.
//
// The library: libcublasLt.so.13, else libcublasLt.so.12, loaded with dlopen
// once per process (TRC_CUBLASLT_LIBRARY overrides); bindCublasLt() binds any
// file (tests). Errors name the call and cuBLASLt's status string.
// Preconditions: the instance's CUDA context is current on the calling
// thread; one thread uses an instance at a time; no call is made while a
// stream capture is in progress until the plan for its key exists (plans
// are made on the uncaptured first run).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CUBLASLT_H
#define TRC_RUNTIME_CUBLASLT_H

#include "runtime/backends/cuda/CublasLtAbi.h"
#include "runtime/backends/cuda/CudaDriver.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

namespace trc::rt {

struct CublasLtApi {
  void *library = nullptr;
  std::string libraryName;
  cublasltabi::CreateFn Create = nullptr;
  cublasltabi::DestroyFn Destroy = nullptr;
  cublasltabi::GetVersionFn GetVersion = nullptr;
  cublasltabi::GetStatusStringFn GetStatusString = nullptr; // optional
  cublasltabi::GetStatusNameFn GetStatusName = nullptr;     // optional
  cublasltabi::MatmulDescCreateFn MatmulDescCreate = nullptr;
  cublasltabi::MatmulDescDestroyFn MatmulDescDestroy = nullptr;
  cublasltabi::MatmulDescSetAttributeFn MatmulDescSetAttribute = nullptr;
  cublasltabi::MatrixLayoutCreateFn MatrixLayoutCreate = nullptr;
  cublasltabi::MatrixLayoutDestroyFn MatrixLayoutDestroy = nullptr;
  cublasltabi::MatrixLayoutSetAttributeFn MatrixLayoutSetAttribute = nullptr;
  cublasltabi::MatmulPreferenceCreateFn MatmulPreferenceCreate = nullptr;
  cublasltabi::MatmulPreferenceDestroyFn MatmulPreferenceDestroy = nullptr;
  cublasltabi::MatmulPreferenceSetAttributeFn MatmulPreferenceSetAttribute = nullptr;
  cublasltabi::MatmulAlgoGetHeuristicFn MatmulAlgoGetHeuristic = nullptr;
  cublasltabi::MatmulFn Matmul = nullptr;
};

/// The entry points of `library`: dlopens it and looks every symbol up (no
/// call is made).
StatusOr<CublasLtApi> bindCublasLt(const std::string &library);
/// The process's cuBLASLt (TRC_CUBLASLT_LIBRARY, else .so.13, else .so.12),
/// bound once.
StatusOr<const CublasLtApi *> loadCublasLt();
// "<status string> (<status name>)" or "cuBLASLt status N".
std::string cublasLtStatusString(const CublasLtApi &api, int status);

// BF16ToBF16: bf16 operands and result, f32 accumulation (the others' result
// is f32, or f64 for F64).
enum class MatmulType { F32, F64, BF16, F16, BF16ToBF16 };
const char *matmulTypeName(MatmulType type);

struct MatmulArgs {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  const void *a = nullptr;
  int64_t lda = 0, strideA = 0;
  int32_t transA = 0;
  const void *b = nullptr;
  int64_t ldb = 0, strideB = 0;
  int32_t transB = 0;
  void *c = nullptr;
  int64_t ldc = 0, strideC = 0;
};

class CublasLt {
public:
  /// Loads the library, creates the handle and allocates the workspace on
  /// the current context.
  static StatusOr<std::unique_ptr<CublasLt>> create(const CudaDriver &driver);
  ~CublasLt();
  CublasLt(const CublasLt &) = delete;
  CublasLt &operator=(const CublasLt &) = delete;

  // Enqueues C = op(A) op(B) on `stream`.
  Status matmul(MatmulType type, const MatmulArgs &args, void *stream);

  // "cuBLASLt 130100 (libcublasLt.so.13)".
  std::string describe() const;
  size_t plans() const { return plans_.size(); }
  bool tf32() const { return tf32_; }

private:
  struct Plan;
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int>;
  CublasLt(const CudaDriver &driver, const CublasLtApi &api);
  StatusOr<std::unique_ptr<Plan>> makePlan(MatmulType type, const MatmulArgs &args,
                                           unsigned alignA, unsigned alignB, unsigned alignC);
  Status check(const char *call, int status) const;
  void destroyPlan(Plan &plan);

  const CudaDriver &driver_;
  const CublasLtApi &api_;
  cublasltabi::Handle handle_ = nullptr;
  cudaabi::DevicePtr workspace_ = 0;
  size_t workspaceBytes_ = 0;
  bool tf32_ = false;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_CUBLASLT_H
