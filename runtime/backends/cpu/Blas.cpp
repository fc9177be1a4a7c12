//===- Blas.cpp - the matmul entry points programs call ---------------------===//
//
// trc_rt_matmul_f32/f64 over cblas_sgemm/cblas_dgemm, one call per batch
// (bf16/f16 operands are widened to f32 first; f32 runs trc's own AVX-512
// kernel, PackedGemm.h, where the host has AVX-512 and OpenBLAS's kernels
// do not use it: see preferPackedGemm)
// (OpenBLAS 0.3.21 has no strided-batch gemm), with a reference loop for
// what cblas cannot take and for builds without OpenBLAS (see Blas.h).
// Large products are split into (batch, row block) tasks on the runtime's
// sleeping thread pool, each a single-threaded BLAS call: OpenBLAS's own
// threads yield-spin between calls and starve the program's OpenMP loops.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/Blas.h"
#include "runtime/backends/cpu/PackedGemm.h"

#include "runtime/support/HalfFloat.h"
#include "runtime/support/ThreadPool.h"

#include <algorithm>
#include <climits>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#ifdef TRC_HAVE_CBLAS
#include <cblas.h>
#endif

namespace {

template <typename T>
void referenceGemm(int64_t m, int64_t n, int64_t k, const T *a, int64_t lda,
                   bool transA, const T *b, int64_t ldb, bool transB, T *c,
                   int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T *crow = c + i * ldc;
    for (int64_t j = 0; j < n; ++j)
      crow[j] = T(0);
    for (int64_t p = 0; p < k; ++p) {
      T av = transA ? a[p * lda + i] : a[i * lda + p];
      if (!transB) {
        const T *brow = b + p * ldb;
        for (int64_t j = 0; j < n; ++j)
          crow[j] += av * brow[j];
      } else {
        for (int64_t j = 0; j < n; ++j)
          crow[j] += av * b[j * ldb + p];
      }
    }
  }
}

// Whether cblas (32-bit int) can take these sizes: everything fits in int and
// each leading dimension is at least the stored row length (and >= 1).
bool cblasCanTake(int64_t m, int64_t n, int64_t k, int64_t lda, bool transA,
                  int64_t ldb, bool transB, int64_t ldc) {
  auto fits = [](int64_t v) { return v >= 0 && v <= INT_MAX; };
  if (!fits(m) || !fits(n) || !fits(k) || !fits(lda) || !fits(ldb) ||
      !fits(ldc))
    return false;
  int64_t aCols = transA ? m : k;
  int64_t bCols = transB ? k : n;
  return lda >= (aCols > 1 ? aCols : 1) && ldb >= (bCols > 1 ? bCols : 1) &&
         ldc >= (n > 1 ? n : 1);
}

#ifdef TRC_HAVE_CBLAS
// The pool provides the parallelism: OpenBLAS itself runs on one thread.
struct SingleThreadedOpenBlas {
  SingleThreadedOpenBlas() { openblas_set_num_threads(1); }
} singleThreadedOpenBlas;

void gemm(int m, int n, int k, const float *a, int lda, bool transA,
          const float *b, int ldb, bool transB, float *c, int ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb,
              0.0f, c, ldc);
}
void gemm(int m, int n, int k, const double *a, int lda, bool transA,
          const double *b, int ldb, bool transB, double *c, int ldc) {
  cblas_dgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b, ldb,
              0.0, c, ldc);
}
#endif

/// f32 products on trc's packed AVX-512 kernel (PackedGemm.h) when the host
/// has AVX-512F and OpenBLAS's kernels do not use it: its core type pinned
/// to an AVX2 one (OPENBLAS_CORETYPE=Haswell) or older. OpenBLAS's own
/// AVX-512 kernels (SkylakeX, Cooperlake, SapphireRapids) measured 5%
/// faster than trc's on the bench model, so they keep the products.
/// TRC_CPU_GEMM=packed or =openblas decides instead.
/// The one reader of TRC_CPU_GEMM (checked by checkCpuGemmVariable at the
/// start): "packed", "openblas", or null when unset.
const char *cpuGemmChoice() { return std::getenv("TRC_CPU_GEMM"); }

bool preferPackedGemm() {
  static const bool prefer = [] {
    const char *choice = cpuGemmChoice();
    if (!trc::rt::packedSgemmSupported() || (choice && std::strcmp(choice, "openblas") == 0))
      return false;
#ifdef TRC_HAVE_CBLAS
    if (choice && std::strcmp(choice, "packed") == 0)
      return true;
    std::string core = openblas_get_corename();
    for (char &c : core)
      c = char(std::tolower(static_cast<unsigned char>(c)));
    for (const char *avx512 : {"skylakex", "cooperlake", "sapphirerapids"})
      if (core == avx512)
        return false;
#endif
    return true;
  }();
  return prefer;
}

template <typename T>
void batchedMatmul(int64_t batch, int64_t m, int64_t n, int64_t k, const T *a,
                   int64_t lda, int64_t strideA, int32_t transA, const T *b,
                   int64_t ldb, int64_t strideB, int32_t transB, T *c,
                   int64_t ldc, int64_t strideC) {
  if (batch <= 0 || m <= 0 || n <= 0 || k < 0)
    return;
  bool tA = transA != 0, tB = transB != 0;
  // Rows [r0, r1) of batch i: A's rows (or columns when transposed) and C's rows.
  auto block = [&](int64_t i, int64_t r0, int64_t r1) {
    const T *ai = a + i * strideA + (tA ? r0 : r0 * lda);
    const T *bi = b + i * strideB;
    T *ci = c + i * strideC + r0 * ldc;
    int64_t rows = r1 - r0;
    if (k == 0) {
      for (int64_t r = 0; r < rows; ++r)
        std::memset(ci + r * ldc, 0, size_t(n) * sizeof(T));
      return;
    }
    if constexpr (std::is_same_v<T, float>)
      if (preferPackedGemm()) {
        trc::rt::packedSgemm(rows, n, k, ai, lda, tA, bi, ldb, tB, ci, ldc);
        return;
      }
#ifdef TRC_HAVE_CBLAS
    if (cblasCanTake(rows, n, k, lda, tA, ldb, tB, ldc)) {
      gemm(int(rows), int(n), int(k), ai, int(lda), tA, bi, int(ldb), tB, ci,
           int(ldc));
      return;
    }
#endif
    referenceGemm(rows, n, k, ai, lda, tA, bi, ldb, tB, ci, ldc);
  };
  // Small products are not worth waking the pool.
  int threads = trc::rt::threadCount();
  double work = double(batch) * double(m) * double(n) * double(k);
  int64_t blocksPerBatch = 1;
  if (threads > 1 && work >= 1 << 18 && batch < threads)
    blocksPerBatch = std::min<int64_t>(m, (threads + batch - 1) / batch);
  if (threads == 1 || work < 1 << 18) {
    for (int64_t i = 0; i < batch; ++i)
      block(i, 0, m);
    return;
  }
  int64_t rowsPerBlock = (m + blocksPerBatch - 1) / blocksPerBatch;
  trc::rt::parallelFor(batch * blocksPerBatch, [&](int64_t task) {
    int64_t i = task / blocksPerBatch, r0 = (task % blocksPerBatch) * rowsPerBlock;
    if (r0 < m)
      block(i, r0, std::min(m, r0 + rowsPerBlock));
  });
}

} // namespace

extern "C" void trc_rt_matmul_f32(int64_t batch, int64_t m, int64_t n,
                                  int64_t k, const float *a, int64_t lda,
                                  int64_t strideA, int32_t transA,
                                  const float *b, int64_t ldb, int64_t strideB,
                                  int32_t transB, float *c, int64_t ldc,
                                  int64_t strideC) {
  batchedMatmul(batch, m, n, k, a, lda, strideA, transA, b, ldb, strideB,
                transB, c, ldc, strideC);
}

extern "C" void trc_rt_matmul_f64(int64_t batch, int64_t m, int64_t n,
                                  int64_t k, const double *a, int64_t lda,
                                  int64_t strideA, int32_t transA,
                                  const double *b, int64_t ldb, int64_t strideB,
                                  int32_t transB, double *c, int64_t ldc,
                                  int64_t strideC) {
  batchedMatmul(batch, m, n, k, a, lda, strideA, transA, b, ldb, strideB,
                transB, c, ldc, strideC);
}

namespace {

/// Widens one stored operand (batch x rows x cols, leading dimension ld,
/// batch stride) to dense f32 (ld = cols), in parallel over rows.
std::vector<float> widen(const uint16_t *src, int64_t batch, int64_t rows, int64_t cols,
                         int64_t ld, int64_t stride, float (*toFloat)(uint16_t)) {
  std::vector<float> out(static_cast<size_t>(batch * rows * cols));
  trc::rt::parallelFor(batch * rows, [&](int64_t task) {
    int64_t i = task / rows, r = task % rows;
    const uint16_t *row = src + i * stride + r * ld;
    float *dst = out.data() + (i * rows + r) * cols;
    for (int64_t c = 0; c < cols; ++c)
      dst[c] = toFloat(row[c]);
  });
  return out;
}

/// C (f32) = op(A) * op(B) with 16-bit float A and B: both are widened to f32
/// once, then multiplied by the f32 path (f32 accumulation, as cuBLAS does).
void widenedMatmul(int64_t batch, int64_t m, int64_t n, int64_t k, const uint16_t *a,
                   int64_t lda, int64_t strideA, int32_t transA, const uint16_t *b,
                   int64_t ldb, int64_t strideB, int32_t transB, float *c, int64_t ldc,
                   int64_t strideC, float (*toFloat)(uint16_t)) {
  if (batch <= 0 || m <= 0 || n <= 0 || k <= 0)
    return trc_rt_matmul_f32(batch, m, n, k, nullptr, 0, 0, transA, nullptr, 0, 0, transB,
                             c, ldc, strideC);
  int64_t aRows = transA ? k : m, aCols = transA ? m : k;
  int64_t bRows = transB ? n : k, bCols = transB ? k : n;
  // A batch stride of 0 broadcasts one matrix over the batch: widen it once.
  int64_t aBatch = strideA ? batch : 1, bBatch = strideB ? batch : 1;
  std::vector<float> wa = widen(a, aBatch, aRows, aCols, lda, strideA, toFloat);
  std::vector<float> wb = widen(b, bBatch, bRows, bCols, ldb, strideB, toFloat);
  trc_rt_matmul_f32(batch, m, n, k, wa.data(), aCols, strideA ? aRows * aCols : 0, transA,
                    wb.data(), bCols, strideB ? bRows * bCols : 0, transB, c, ldc, strideC);
}

} // namespace

extern "C" void trc_rt_matmul_bf16(int64_t batch, int64_t m, int64_t n, int64_t k,
                                   const uint16_t *a, int64_t lda, int64_t strideA,
                                   int32_t transA, const uint16_t *b, int64_t ldb,
                                   int64_t strideB, int32_t transB, float *c, int64_t ldc,
                                   int64_t strideC) {
  widenedMatmul(batch, m, n, k, a, lda, strideA, transA, b, ldb, strideB, transB, c, ldc,
                strideC, trc::rt::bf16ToFloat);
}

extern "C" void trc_rt_matmul_f16(int64_t batch, int64_t m, int64_t n, int64_t k,
                                  const uint16_t *a, int64_t lda, int64_t strideA,
                                  int32_t transA, const uint16_t *b, int64_t ldb,
                                  int64_t strideB, int32_t transB, float *c, int64_t ldc,
                                  int64_t strideC) {
  widenedMatmul(batch, m, n, k, a, lda, strideA, transA, b, ldb, strideB, transB, c, ldc,
                strideC, trc::rt::f16ToFloat);
}

extern "C" void trc_rt_matmul_bf16_bf16(int64_t batch, int64_t m, int64_t n, int64_t k,
                                        const uint16_t *a, int64_t lda, int64_t strideA,
                                        int32_t transA, const uint16_t *b, int64_t ldb,
                                        int64_t strideB, int32_t transB, uint16_t *c,
                                        int64_t ldc, int64_t strideC) {
  if (batch <= 0 || m <= 0 || n <= 0)
    return;
  // The f32 product, dense, then each row rounded into C.
  std::vector<float> wide(static_cast<size_t>(batch * m * n));
  widenedMatmul(batch, m, n, k, a, lda, strideA, transA, b, ldb, strideB, transB,
                wide.data(), n, m * n, trc::rt::bf16ToFloat);
  trc::rt::parallelFor(batch * m, [&](int64_t task) {
    int64_t i = task / m, r = task % m;
    const float *src = wide.data() + (i * m + r) * n;
    uint16_t *dst = c + i * strideC + r * ldc;
    for (int64_t col = 0; col < n; ++col)
      dst[col] = trc::rt::floatToBf16(src[col]);
  });
}

namespace trc::rt {

const void *const *runtimeExports() {
  static const void *const table[] = {
      reinterpret_cast<const void *>(&trc_rt_matmul_f32),
      reinterpret_cast<const void *>(&trc_rt_matmul_f64),
      reinterpret_cast<const void *>(&trc_rt_matmul_bf16),
      reinterpret_cast<const void *>(&trc_rt_matmul_f16),
      reinterpret_cast<const void *>(&trc_rt_matmul_bf16_bf16),
      nullptr,
  };
  return table;
}

Status checkCpuGemmVariable() {
  const char *choice = cpuGemmChoice();
  if (choice && std::strcmp(choice, "packed") != 0 && std::strcmp(choice, "openblas") != 0)
    return Status::error(std::string("TRC_CPU_GEMM='") + choice +
                         "' is neither packed nor openblas");
  return Status::success();
}

} // namespace trc::rt
