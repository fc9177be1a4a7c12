//===- BlasTest.cpp - trc_rt_matmul_f32/f64 against a naive loop ------------===//
//
// Every transpose combination, batched with strides (including a broadcast
// operand of stride 0), padded leading dimensions (padding in C untouched),
// k == 0 (C zeroed) and empty sizes, for f32 and f64 (and bf16/f16 operands
// into f32), against a double-
// precision triple loop written straight from ARTIFACT.md's definition.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/Blas.h"
#include "runtime/backends/cpu/PackedGemm.h"
#include "runtime/support/HalfFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

struct Case {
  int64_t batch, m, n, k;
  bool transA, transB;
  int64_t padA, padB, padC; // extra leading-dimension elements
  bool broadcastB;          // strideB = 0
};

template <typename T>
void matmul(int64_t batch, int64_t m, int64_t n, int64_t k, const T *a,
            int64_t lda, int64_t sa, int32_t ta, const T *b, int64_t ldb,
            int64_t sb, int32_t tb, T *c, int64_t ldc, int64_t sc);
template <>
void matmul<float>(int64_t batch, int64_t m, int64_t n, int64_t k,
                   const float *a, int64_t lda, int64_t sa, int32_t ta,
                   const float *b, int64_t ldb, int64_t sb, int32_t tb,
                   float *c, int64_t ldc, int64_t sc) {
  trc_rt_matmul_f32(batch, m, n, k, a, lda, sa, ta, b, ldb, sb, tb, c, ldc, sc);
}
template <>
void matmul<double>(int64_t batch, int64_t m, int64_t n, int64_t k,
                    const double *a, int64_t lda, int64_t sa, int32_t ta,
                    const double *b, int64_t ldb, int64_t sb, int32_t tb,
                    double *c, int64_t ldc, int64_t sc) {
  trc_rt_matmul_f64(batch, m, n, k, a, lda, sa, ta, b, ldb, sb, tb, c, ldc, sc);
}

/// Stored shapes (A is m x k, k x m when transposed; B is k x n, n x k),
/// leading dimensions with the case's padding, and batch strides with gaps
/// (B's 0 when it is broadcast).
struct Layouts {
  int64_t aRows, aCols, bRows, bCols, lda, ldb, ldc, strideA, strideB, strideC;
};
Layouts layoutsOf(const Case &cs) {
  Layouts l;
  l.aRows = cs.transA ? cs.k : cs.m, l.aCols = cs.transA ? cs.m : cs.k;
  l.bRows = cs.transB ? cs.n : cs.k, l.bCols = cs.transB ? cs.k : cs.n;
  l.lda = l.aCols + cs.padA, l.ldb = l.bCols + cs.padB, l.ldc = cs.n + cs.padC;
  l.strideA = l.aRows * l.lda + 3, l.strideB = cs.broadcastB ? 0 : l.bRows * l.ldb + 5;
  l.strideC = cs.m * l.ldc + 1;
  return l;
}

template <typename T> void check(const Case &cs, double tolerance) {
  SCOPED_TRACE(::testing::Message()
               << "batch=" << cs.batch << " m=" << cs.m << " n=" << cs.n
               << " k=" << cs.k << " transA=" << cs.transA
               << " transB=" << cs.transB << " pads=" << cs.padA << ","
               << cs.padB << "," << cs.padC << " broadcastB=" << cs.broadcastB);
  auto [aRows, aCols, bRows, bCols, lda, ldb, ldc, strideA, strideB, strideC] = layoutsOf(cs);
  std::mt19937 rng(unsigned(cs.m * 131 + cs.n * 17 + cs.k));
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<T> a(size_t(std::max<int64_t>(1, cs.batch * strideA)));
  std::vector<T> b(size_t(std::max<int64_t>(1, cs.broadcastB ? bRows * ldb
                                                             : cs.batch * strideB)));
  for (T &v : a)
    v = T(dist(rng));
  for (T &v : b)
    v = T(dist(rng));
  const T sentinel = T(12345);
  std::vector<T> c(size_t(std::max<int64_t>(1, cs.batch * strideC)), sentinel);

  matmul<T>(cs.batch, cs.m, cs.n, cs.k, a.data(), lda, strideA, cs.transA,
            b.data(), ldb, strideB, cs.transB, c.data(), ldc, strideC);

  for (int64_t bi = 0; bi < cs.batch; ++bi) {
    for (int64_t i = 0; i < cs.m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        T got = c[size_t(bi * strideC + i * ldc + j)];
        if (j >= cs.n) {
          ASSERT_EQ(got, sentinel) << "padding of C was written";
          continue;
        }
        double want = 0;
        for (int64_t p = 0; p < cs.k; ++p) {
          double av = cs.transA ? a[size_t(bi * strideA + p * lda + i)]
                                : a[size_t(bi * strideA + i * lda + p)];
          double bv = cs.transB ? b[size_t(bi * strideB + j * ldb + p)]
                                : b[size_t(bi * strideB + p * ldb + j)];
          want += av * bv;
        }
        ASSERT_NEAR(double(got), want, tolerance * (1 + std::sqrt(double(cs.k))))
            << "at batch " << bi << " row " << i << " col " << j;
      }
    }
  }
}

/// 16-bit operands (bf16 or f16 bits) into f32 C: against the same loop
/// over the widened operand values.
void check16(const Case &cs, bool bf16) {
  using trc::rt::bf16ToFloat;
  using trc::rt::f16ToFloat;
  SCOPED_TRACE(::testing::Message()
               << (bf16 ? "bf16" : "f16") << " batch=" << cs.batch << " m=" << cs.m
               << " n=" << cs.n << " k=" << cs.k << " transA=" << cs.transA
               << " transB=" << cs.transB << " broadcastB=" << cs.broadcastB);
  auto [aRows, aCols, bRows, bCols, lda, ldb, ldc, strideA, strideB, strideC] = layoutsOf(cs);
  std::mt19937 rng(unsigned(cs.m * 7 + cs.n * 3 + cs.k));
  std::uniform_real_distribution<float> dist(-1, 1);
  auto narrow = [&](float v) {
    return bf16 ? trc::rt::floatToBf16(v) : trc::rt::floatToF16(v);
  };
  auto widen = [&](uint16_t v) { return double(bf16 ? bf16ToFloat(v) : f16ToFloat(v)); };
  std::vector<uint16_t> a(size_t(std::max<int64_t>(1, cs.batch * strideA)));
  std::vector<uint16_t> b(
      size_t(std::max<int64_t>(1, cs.broadcastB ? bRows * ldb : cs.batch * strideB)));
  for (uint16_t &v : a)
    v = narrow(dist(rng));
  for (uint16_t &v : b)
    v = narrow(dist(rng));
  std::vector<float> c(size_t(std::max<int64_t>(1, cs.batch * strideC)), 12345.0f);
  (bf16 ? trc_rt_matmul_bf16 : trc_rt_matmul_f16)(
      cs.batch, cs.m, cs.n, cs.k, a.data(), lda, strideA, cs.transA, b.data(), ldb, strideB,
      cs.transB, c.data(), ldc, strideC);
  for (int64_t bi = 0; bi < cs.batch; ++bi)
    for (int64_t i = 0; i < cs.m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        float got = c[size_t(bi * strideC + i * ldc + j)];
        if (j >= cs.n) {
          ASSERT_EQ(got, 12345.0f) << "padding of C was written";
          continue;
        }
        double want = 0;
        for (int64_t p = 0; p < cs.k; ++p)
          want += widen(cs.transA ? a[size_t(bi * strideA + p * lda + i)]
                                  : a[size_t(bi * strideA + i * lda + p)]) *
                  widen(cs.transB ? b[size_t(bi * strideB + j * ldb + p)]
                                  : b[size_t(bi * strideB + p * ldb + j)]);
        ASSERT_NEAR(double(got), want, 1e-5 * (1 + std::sqrt(double(cs.k))))
            << "at batch " << bi << " row " << i << " col " << j;
      }
}

std::vector<Case> cases() {
  std::vector<Case> all;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      all.push_back({1, 3, 4, 5, ta, tb, 0, 0, 0, false});
      all.push_back({1, 1, 1, 1, ta, tb, 0, 0, 0, false});
      all.push_back({1, 37, 29, 64, ta, tb, 0, 0, 0, false});
      all.push_back({4, 7, 9, 11, ta, tb, 0, 0, 0, false});
      all.push_back({3, 5, 6, 4, ta, tb, 2, 3, 4, false});
      all.push_back({5, 8, 3, 6, ta, tb, 1, 0, 2, true});
      all.push_back({2, 4, 5, 0, ta, tb, 0, 0, 1, false}); // k == 0
      // Large enough (>= 2^18 multiply-adds) to be split into row blocks
      // on the thread pool: one batch (odd rows), and batches with padding.
      all.push_back({1, 97, 70, 45, ta, tb, 0, 0, 0, false});
      all.push_back({3, 41, 66, 40, ta, tb, 2, 1, 3, true});
      // Past the packed kernel's blocks (K 256, N 1024, rows 168) with
      // edge tiles in every direction (PackedGemm.h).
      all.push_back({1, 185, 1060, 520, ta, tb, 1, 2, 3, false});
    }
  return all;
}

} // namespace

TEST(Blas, MatmulF32MatchesNaiveLoop) {
  for (const Case &cs : cases())
    check<float>(cs, 1e-5);
}

TEST(Blas, MatmulF64MatchesNaiveLoop) {
  for (const Case &cs : cases())
    check<double>(cs, 1e-12);
}

TEST(Blas, MatmulBf16AndF16AccumulateInF32) {
  for (const Case &cs : cases()) {
    check16(cs, true);
    check16(cs, false);
  }
}

// bf16 operands into a bf16 C: the f32 product (trc_rt_matmul_bf16) rounded
// once, element for element; C's padding and batch gaps untouched.
TEST(Blas, MatmulBf16IntoBf16RoundsTheF32Product) {
  for (const Case &cs : cases()) {
    SCOPED_TRACE(::testing::Message() << "batch=" << cs.batch << " m=" << cs.m << " n=" << cs.n
                                      << " k=" << cs.k << " transA=" << cs.transA
                                      << " transB=" << cs.transB);
    auto [aRows, aCols, bRows, bCols, lda, ldb, ldc, strideA, strideB, strideC] = layoutsOf(cs);
    std::mt19937 rng(unsigned(cs.m * 5 + cs.n * 11 + cs.k));
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<uint16_t> a(size_t(std::max<int64_t>(1, cs.batch * strideA)));
    std::vector<uint16_t> b(
        size_t(std::max<int64_t>(1, cs.broadcastB ? bRows * ldb : cs.batch * strideB)));
    for (uint16_t &v : a)
      v = trc::rt::floatToBf16(dist(rng));
    for (uint16_t &v : b)
      v = trc::rt::floatToBf16(dist(rng));
    size_t sizeC = size_t(std::max<int64_t>(1, cs.batch * strideC));
    std::vector<float> wide(sizeC, 0.0f);
    std::vector<uint16_t> narrow(sizeC, 0x4242);
    trc_rt_matmul_bf16(cs.batch, cs.m, cs.n, cs.k, a.data(), lda, strideA, cs.transA, b.data(),
                       ldb, strideB, cs.transB, wide.data(), ldc, strideC);
    trc_rt_matmul_bf16_bf16(cs.batch, cs.m, cs.n, cs.k, a.data(), lda, strideA, cs.transA,
                            b.data(), ldb, strideB, cs.transB, narrow.data(), ldc, strideC);
    for (int64_t bi = 0; bi < cs.batch; ++bi)
      for (int64_t i = 0; i < cs.m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          size_t at = size_t(bi * strideC + i * ldc + j);
          if (j >= cs.n) {
            ASSERT_EQ(narrow[at], 0x4242) << "padding of C was written";
            continue;
          }
          // One rounding of (nearly) the same f32 sum: equal, or one bf16
          // step apart where the two f32 sums straddle a rounding boundary.
          float want = trc::rt::bf16ToFloat(trc::rt::floatToBf16(wide[at]));
          float got = trc::rt::bf16ToFloat(narrow[at]);
          ASSERT_NEAR(got, want, std::fabs(want) / 128 + 1e-30)
              << "at batch " << bi << " row " << i << " col " << j;
        }
  }
}

TEST(Blas, PackedKernelMatchesOpenBlasPathWithinRounding) {
  if (!trc::rt::packedSgemmSupported())
    GTEST_SKIP() << "this host has no AVX-512F: the packed kernel does not run here";
  // Tiles of every size 1..14 rows and 1..32 columns, k across a block edge.
  for (int64_t m : {1, 13, 14, 15, 29})
    for (int64_t n : {1, 17, 32, 33})
      for (int64_t k : {1, 255, 257}) {
        std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n), 7.0f);
        std::mt19937 rng(unsigned(m * 1000 + n * 10 + k));
        std::uniform_real_distribution<float> dist(-1, 1);
        for (float &v : a)
          v = dist(rng);
        for (float &v : b)
          v = dist(rng);
        trc::rt::packedSgemm(m, n, k, a.data(), k, false, b.data(), n, false, c.data(), n);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double want = 0;
            for (int64_t p = 0; p < k; ++p)
              want += double(a[size_t(i * k + p)]) * b[size_t(p * n + j)];
            ASSERT_NEAR(c[size_t(i * n + j)], want, 1e-5 * (1 + std::sqrt(double(k))))
                << m << "x" << n << "x" << k << " at " << i << "," << j;
          }
      }
}

TEST(Blas, EmptySizesTouchNothing) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4}, c[4] = {9, 9, 9, 9};
  trc_rt_matmul_f32(0, 2, 2, 2, a, 2, 4, 0, b, 2, 4, 0, c, 2, 4);
  trc_rt_matmul_f32(1, 0, 2, 2, a, 2, 4, 0, b, 2, 4, 0, c, 2, 4);
  trc_rt_matmul_f32(1, 2, 0, 2, a, 2, 4, 0, b, 2, 4, 0, c, 2, 4);
  trc_rt_matmul_f32(1, -1, 2, 2, a, 2, 4, 0, b, 2, 4, 0, c, 2, 4);
  for (float v : c)
    EXPECT_EQ(v, 9.0f);
}

TEST(Blas, ExportTableListsTheEntryPoints) {
  const void *const *table = trc::rt::runtimeExports();
  EXPECT_EQ(table[0], reinterpret_cast<const void *>(&trc_rt_matmul_f32));
  EXPECT_EQ(table[1], reinterpret_cast<const void *>(&trc_rt_matmul_f64));
  EXPECT_EQ(table[2], reinterpret_cast<const void *>(&trc_rt_matmul_bf16));
  EXPECT_EQ(table[3], reinterpret_cast<const void *>(&trc_rt_matmul_f16));
  EXPECT_EQ(table[4], reinterpret_cast<const void *>(&trc_rt_matmul_bf16_bf16));
  EXPECT_EQ(table[5], nullptr);
}
