//===- PackedGemm.cpp - trc's own AVX-512 single-precision GEMM -----------===//
//
// See PackedGemm.h. Loop order (BLIS's): column blocks of B (NC), K blocks
// (KC: B's block packed once, reused by every row block), row blocks of A
// (MC: packed once, reused by every column panel), then 14 x 32 tiles.
// Only the functions marked AVX512 use AVX-512 instructions; the library
// itself stays built for the baseline x86-64.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/PackedGemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TRC_PACKED_GEMM 1
#include <immintrin.h>
#define AVX512 __attribute__((target("avx512f")))
#endif

namespace trc::rt {

#ifdef TRC_PACKED_GEMM
namespace {

constexpr int64_t MR = 14, NR = 32; // the microkernel's tile
constexpr int64_t KC = 256;         // a B panel (KC x NR, 32 KiB) stays in L1
constexpr int64_t MC = 14 * 12;     // rows of A (read in place) per pass over a B block
constexpr int64_t NC = 1024;        // a B block (KC x NC, 1 MiB) in L2/L3

/// A buffer aligned for zmm loads, reused by the calling thread.
struct PackBuffer {
  float *data = nullptr;
  int64_t size = 0;
  ~PackBuffer() { std::free(data); }
  float *reserve(int64_t floats) {
    if (floats > size) {
      std::free(data);
      data = static_cast<float *>(std::aligned_alloc(64, size_t(floats) * sizeof(float)));
      size = data ? floats : 0;
    }
    return data;
  }
};

/// Elements [x0, x0 + count) x [k0, k0 + kc) of an operand into panels of
/// `width` x-indices: panel j holds kc groups of `width` values (zeros past
/// count). Element (x, p) is src[p * ld + x] when `xContiguous`, else
/// src[x * ld + p]. op(A)'s rows and op(B)'s columns are the x of each.
void packPanels(const float *src, int64_t ld, bool xContiguous, int64_t x0, int64_t count,
                int64_t k0, int64_t kc, int64_t width, float *out) {
  for (int64_t j0 = 0; j0 < count; j0 += width) {
    int64_t valid = std::min(width, count - j0);
    float *panel = out + j0 * kc;
    if (xContiguous) {
      for (int64_t p = 0; p < kc; ++p) {
        float *dst = panel + p * width;
        std::memcpy(dst, src + (k0 + p) * ld + x0 + j0, size_t(valid) * sizeof(float));
        std::fill(dst + valid, dst + width, 0.0f);
      }
      continue;
    }
    // Walk each stored line (contiguous in k).
    for (int64_t j = 0; j < valid; ++j) {
      const float *line = src + (x0 + j0 + j) * ld + k0;
      for (int64_t p = 0; p < kc; ++p)
        panel[p * width + j] = line[p];
    }
    for (int64_t p = 0; p < kc; ++p)
      std::fill(panel + p * width + valid, panel + (p + 1) * width, 0.0f);
  }
}

/// Rows [row, row + mc) x columns [col, col + kc) of op(A), panels of MR rows.
void packA(const float *a, int64_t lda, bool transA, int64_t row, int64_t mc, int64_t col,
           int64_t kc, float *out) {
  packPanels(a, lda, /*xContiguous=*/transA, row, mc, col, kc, MR, out);
}

/// Rows [row, row + kc) x columns [col, col + nc) of op(B), panels of NR columns.
void packB(const float *b, int64_t ldb, bool transB, int64_t row, int64_t kc, int64_t col,
           int64_t nc, float *out) {
  packPanels(b, ldb, /*xContiguous=*/!transB, col, nc, row, kc, NR, out);
}

/// One MR x NR tile: acc = Apanel * Bpanel over kc; C = acc (or C += acc
/// when accumulate), only the first rows x cols written.
AVX512 void microkernel(int64_t kc, const float *ap, int64_t rowStride, int64_t colStride,
                        const float *bp, float *c, int64_t ldc, bool accumulate, int64_t rows,
                        int64_t cols) {
  __m512 acc[MR][2];
#pragma GCC unroll 14
  for (int i = 0; i < MR; ++i)
    acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
#pragma GCC unroll 14
    for (int i = 0; i < MR; ++i) {
      __m512 av = _mm512_set1_ps(ap[i * rowStride]);
      acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);
    }
    ap += colStride;
    bp += NR;
  }
  if (rows == MR && cols == NR) {
#pragma GCC unroll 14
    for (int i = 0; i < MR; ++i) {
      float *ci = c + i * ldc;
      if (accumulate) {
        acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(ci));
        acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(ci + 16));
      }
      _mm512_storeu_ps(ci, acc[i][0]);
      _mm512_storeu_ps(ci + 16, acc[i][1]);
    }
    return;
  }
  // An edge tile: through memory, masked to the valid columns.
  __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1);
  __mmask16 m1 = cols <= 16 ? __mmask16(0) : __mmask16((1u << (cols - 16)) - 1);
  if (cols >= NR)
    m1 = __mmask16(0xFFFF);
  for (int i = 0; i < MR; ++i) {
    if (i >= rows)
      break;
    float *ci = c + i * ldc;
    __m512 v0 = acc[i][0], v1 = acc[i][1];
    if (accumulate) {
      v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, ci));
      v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, ci + 16));
    }
    _mm512_mask_storeu_ps(ci, m0, v0);
    _mm512_mask_storeu_ps(ci + 16, m1, v1);
  }
}

AVX512 void packedSgemmAvx512(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                              bool transA, const float *b, int64_t ldb, bool transB, float *c,
                              int64_t ldc) {
  thread_local PackBuffer aBuffer, bBuffer;
  float *ap = aBuffer.reserve(MR * KC), *bp = bBuffer.reserve(KC * ((NC + NR - 1) / NR * NR));
  if (!ap || !bp)
    throw std::bad_alloc();
  for (int64_t jc = 0; jc < n; jc += NC) {
    int64_t nc = std::min(NC, n - jc);
    for (int64_t pc = 0; pc < k; pc += KC) {
      int64_t kc = std::min(KC, k - pc);
      packB(b, ldb, transB, pc, kc, jc, nc, bp);
      for (int64_t ic = 0; ic < m; ic += MC) {
        int64_t mc = std::min(MC, m - ic);
        // A is read where it lies (a tile's 14 rows at a time, each element
        // broadcast); only a last tile of fewer rows is copied, zero-padded.
        const float *ablock = transA ? a + pc * lda + ic : a + ic * lda + pc;
        int64_t rs = transA ? 1 : lda, cs = transA ? lda : 1;
        int64_t fullRows = mc / MR * MR;
        if (fullRows < mc)
          packA(a, lda, transA, ic + fullRows, mc - fullRows, pc, kc, ap);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          int64_t cols = std::min(NR, nc - jr);
          for (int64_t ir = 0; ir < fullRows; ir += MR)
            microkernel(kc, ablock + ir * rs, rs, cs, bp + jr * kc,
                        c + (ic + ir) * ldc + jc + jr, ldc, pc > 0, MR, cols);
          if (fullRows < mc)
            microkernel(kc, ap, 1, MR, bp + jr * kc, c + (ic + fullRows) * ldc + jc + jr, ldc,
                        pc > 0, mc - fullRows, cols);
        }
      }
    }
  }
}

} // namespace

bool packedSgemmSupported() {
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return supported;
}

void packedSgemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, bool transA,
                 const float *b, int64_t ldb, bool transB, float *c, int64_t ldc) {
  packedSgemmAvx512(m, n, k, a, lda, transA, b, ldb, transB, c, ldc);
}

#else // not x86-64 with GCC or Clang: never enabled

bool packedSgemmSupported() { return false; }
void packedSgemm(int64_t, int64_t, int64_t, const float *, int64_t, bool, const float *,
                 int64_t, bool, float *, int64_t) {
  std::abort();
}

#endif

} // namespace trc::rt
