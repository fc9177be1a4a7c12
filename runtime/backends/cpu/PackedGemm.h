//===- PackedGemm.h - trc's own AVX-512 single-precision GEMM ---*- C++ -*-===//
//
// C = op(A) * op(B), row-major f32, on one thread: B packed into panels of
// 32 columns, A into panels of 14 rows, a 14 x 32 register-blocked AVX-512
// microkernel (28 zmm accumulators), K in blocks of 256. Chosen at run time
// by cpuid (like onnxruntime's MLAS or oneDNN), independently of the
// OpenBLAS build's kernel choice (OPENBLAS_CORETYPE), which on hosts with
// AVX-512 may be pinned to AVX2 kernels at half the throughput.
//
// Each element of C is summed over k in order, one fused multiply-add per
// term (deterministic; rounding differs from OpenBLAS's in the last bits).
// Blas.cpp decides when to use it (preferPackedGemm: TRC_CPU_GEMM, and
// whether OpenBLAS runs AVX-512 kernels of its own). Preconditions: m, n, k >= 1; the buffers hold what the
// sizes and leading dimensions describe; C does not overlap A or B.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_BACKENDS_CPU_PACKEDGEMM_H
#define TRC_RUNTIME_BACKENDS_CPU_PACKEDGEMM_H

#include <cstdint>

namespace trc::rt {

/// True when this host has AVX-512F (decided once per process).
bool packedSgemmSupported();

/// C[m x n] = op(A) op(B); op(A) is m x k (A stored k x m when transA),
/// op(B) is k x n (B stored n x k when transB). Overwrites C.
void packedSgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, bool transA,
                 const float *b, int64_t ldb, bool transB, float *c, int64_t ldc);

} // namespace trc::rt

#endif // TRC_RUNTIME_BACKENDS_CPU_PACKEDGEMM_H
