//===- TensorSplitTest.cpp - full tensors to tensor-rank parts and back -----===//
//
// Checks runtime/support/TensorSplit.h against an independent index
// formula (element by element), for blocks 1 and 3 and degrees 1, 2 and 4
// on every dim, the round trip through the parts, and the bad arguments.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/TensorSplit.h"

#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace trc::rt;
using trc::rt::test::errorOf;
using ::testing::HasSubstr;

namespace {

HostTensor iota(const std::vector<int64_t> &shape) {
  HostTensor t;
  EXPECT_TRUE(t.allocate(DType::F32, shape));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.as<float>()[i] = float(i);
  return t;
}

// The full tensor's flat index of part element (outer o, row j, inner k):
// row j is chunk row j % c of block j / c, c = N / (blocks * degree), the
// block's chunk t (degree-1-t in a mirrored split's odd blocks).
int64_t fullIndex(const std::vector<int64_t> &full, const TensorSplit &s, int64_t t,
                  int64_t partFlat) {
  int64_t inner = 1;
  for (size_t i = size_t(s.dim) + 1; i < full.size(); ++i)
    inner *= full[i];
  int64_t n = full[size_t(s.dim)], local = n / s.degree, c = n / (s.blocks * s.degree);
  int64_t o = partFlat / (local * inner), j = partFlat / inner % local, k = partFlat % inner;
  int64_t block = j / c, chunk = s.mirrored && block % 2 ? s.degree - 1 - t : t;
  int64_t row = block * (n / s.blocks) + chunk * c + j % c;
  return (o * n + row) * inner + k;
}

TEST(TensorSplit, PartsFollowTheBlockAndChunkLayout) {
  const std::vector<int64_t> shape = {2, 12, 3};
  HostTensor full = iota(shape);
  for (int64_t dim : {0, 1, 2})
    for (auto [blocks, mirrored] :
         std::initializer_list<std::pair<int64_t, bool>>{{1, false}, {3, false}, {2, true}})
      for (int64_t degree : {1, 2, 4}) {
        TensorSplit s{dim, blocks, degree, mirrored};
        if (!checkSplit(shape, s))
          continue; // e.g. 2 rows are not 3 blocks
        std::vector<HostTensor> parts;
        for (int64_t t = 0; t < degree; ++t) {
          TRC_ASSERT_OK_AND_ASSIGN(HostTensor part, splitPart(full, s, t));
          std::vector<int64_t> expected = shape;
          expected[size_t(dim)] /= degree;
          ASSERT_EQ(part.shape, expected);
          for (int64_t e = 0; e < part.numElements(); ++e)
            ASSERT_EQ(part.as<float>()[e], float(fullIndex(shape, s, t, e)))
                << "dim " << dim << " blocks " << blocks << " degree " << degree << " rank " << t
                << " element " << e;
          parts.push_back(std::move(part));
        }
        TRC_ASSERT_OK_AND_ASSIGN(HostTensor back, assembleSplit(parts, shape, s));
        ASSERT_EQ(back.shape, shape);
        for (int64_t e = 0; e < back.numElements(); ++e)
          ASSERT_EQ(back.as<float>()[e], float(e));
      }
}

// GPT-2's fused QKV weight [hidden, 3*hidden] split on its columns: rank 0
// of 2 holds the first half of q's, k's and v's columns.
TEST(TensorSplit, FusedQkvColumns) {
  HostTensor full = iota({1, 12});
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor r0, splitPart(full, {1, 3, 2}, 0));
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor r1, splitPart(full, {1, 3, 2}, 1));
  std::vector<float> a(r0.as<float>(), r0.as<float>() + 6), b(r1.as<float>(), r1.as<float>() + 6);
  EXPECT_EQ(a, (std::vector<float>{0, 1, 4, 5, 8, 9}));
  EXPECT_EQ(b, (std::vector<float>{2, 3, 6, 7, 10, 11}));
}

// Context parallelism's head-tail layout: 8 positions over 2 ranks in
// chunks of 2; rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2.
TEST(TensorSplit, MirroredHeadTail) {
  HostTensor full = iota({1, 8});
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor r0, splitPart(full, {1, 2, 2, true}, 0));
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor r1, splitPart(full, {1, 2, 2, true}, 1));
  std::vector<float> a(r0.as<float>(), r0.as<float>() + 4), b(r1.as<float>(), r1.as<float>() + 4);
  EXPECT_EQ(a, (std::vector<float>{0, 1, 6, 7}));
  EXPECT_EQ(b, (std::vector<float>{2, 3, 4, 5}));
  EXPECT_THAT(errorOf(splitPart(full, {1, 1, 2, true}, 0)),
              HasSubstr("a mirrored split needs an even number of blocks, got 1"));
}

TEST(TensorSplit, RunsCoverThePartOnce) {
  std::vector<int64_t> seen(16, 0);
  forEachSplitRun({4, 4}, {0, 1, 2}, 1, [&](int64_t fullFirst, int64_t partFirst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(fullFirst + i, 8 + partFirst + i);
      ++seen[size_t(fullFirst + i)];
    }
  });
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}));
}

TEST(TensorSplit, RefusesBadArguments) {
  HostTensor full = iota({4, 6});
  EXPECT_THAT(errorOf(splitPart(full, {2, 1, 2}, 0)), HasSubstr("split dim 2 is not a dim of [4, 6]"));
  EXPECT_THAT(errorOf(splitPart(full, {-1, 1, 2}, 0)), HasSubstr("split dim -1"));
  EXPECT_THAT(errorOf(splitPart(full, {1, 1, 0}, 0)), HasSubstr("must be at least 1"));
  EXPECT_THAT(errorOf(splitPart(full, {1, 0, 2}, 0)), HasSubstr("must be at least 1"));
  EXPECT_THAT(errorOf(splitPart(full, {0, 3, 2}, 0)),
              HasSubstr("dim 0 of [4, 6] (4) is not 3 block(s) of 2 equal chunks"));
  EXPECT_THAT(errorOf(splitPart(full, {1, 1, 4}, 0)), HasSubstr("is not 1 block(s) of 4"));
  EXPECT_THAT(errorOf(splitPart(full, {1, 1, 2}, 2)),
              HasSubstr("tensor rank 2 has no part of a split over 2 ranks"));
  EXPECT_THAT(errorOf(splitPart(full, {1, 1, 2}, -1)), HasSubstr("tensor rank -1"));
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor part, splitPart(full, {1, 1, 2}, 0));
  std::vector<HostTensor> one;
  one.push_back(std::move(part));
  EXPECT_THAT(errorOf(assembleSplit(one, {4, 6}, {1, 1, 2})),
              HasSubstr("a split over 2 ranks needs 2 parts, got 1"));
  HostTensor wrong;
  ASSERT_TRUE(wrong.allocate(DType::F32, {4, 2}));
  one.push_back(std::move(wrong));
  EXPECT_THAT(errorOf(assembleSplit(one, {4, 6}, {1, 1, 2})),
              HasSubstr("part 1 is f32 [4, 2], expected f32 [4, 3]"));
}

} // namespace
