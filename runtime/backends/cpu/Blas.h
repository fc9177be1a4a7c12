//===- Blas.h - the matmul entry points programs call -----------------------===//
//
// The C functions of ARTIFACT.md "Functions the program calls": batched,
// row-major C[b] = op(A[b]) * op(B[b]) (op = transpose when the flag is
// non-zero; A[b] starts at a + b*strideA elements; C is overwritten, not
// accumulated). Implemented with OpenBLAS's cblas_?gemm per batch when the
// build found OpenBLAS, else with a plain loop. Sizes that cblas cannot take
// (over INT_MAX, or leading dimensions smaller than a row) use the loop too.
// Preconditions: the buffers hold what the sizes and strides describe;
// m, n, k, batch >= 0 (a negative size is a no-op).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_BLAS_H
#define TRC_RUNTIME_BLAS_H

#include "runtime/support/Status.h"

#include <cstdint>

extern "C" {
void trc_rt_matmul_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                       const float *a, int64_t lda, int64_t strideA,
                       int32_t transA, const float *b, int64_t ldb,
                       int64_t strideB, int32_t transB, float *c, int64_t ldc,
                       int64_t strideC);
void trc_rt_matmul_f64(int64_t batch, int64_t m, int64_t n, int64_t k,
                       const double *a, int64_t lda, int64_t strideA,
                       int32_t transA, const double *b, int64_t ldb,
                       int64_t strideB, int32_t transB, double *c, int64_t ldc,
                       int64_t strideC);
// 16-bit float operands (bf16 or IEEE f16 bits), f32 result and accumulation.
void trc_rt_matmul_bf16(int64_t batch, int64_t m, int64_t n, int64_t k,
                        const uint16_t *a, int64_t lda, int64_t strideA,
                        int32_t transA, const uint16_t *b, int64_t ldb,
                        int64_t strideB, int32_t transB, float *c, int64_t ldc,
                        int64_t strideC);
void trc_rt_matmul_f16(int64_t batch, int64_t m, int64_t n, int64_t k,
                       const uint16_t *a, int64_t lda, int64_t strideA,
                       int32_t transA, const uint16_t *b, int64_t ldb,
                       int64_t strideB, int32_t transB, float *c, int64_t ldc,
                       int64_t strideC);
// bf16 operands and result, f32 accumulation: the f32 product rounded once
// to bf16 (nearest even), as cuBLASLt's bf16-output products compute.
void trc_rt_matmul_bf16_bf16(int64_t batch, int64_t m, int64_t n, int64_t k,
                             const uint16_t *a, int64_t lda, int64_t strideA,
                             int32_t transA, const uint16_t *b, int64_t ldb,
                             int64_t strideB, int32_t transB, uint16_t *c, int64_t ldc,
                             int64_t strideC);
}

namespace trc::rt {
// A null-terminated table of the addresses of every trc_rt_* function; using
// it forces the linker to keep them in an executable (see CpuBackend).
const void *const *runtimeExports();

// TRC_CPU_GEMM unset, "packed" or "openblas"; anything else is an error
// naming the variable and its value (checked at a tool's start).
Status checkCpuGemmVariable();
} // namespace trc::rt

#endif // TRC_RUNTIME_BLAS_H
