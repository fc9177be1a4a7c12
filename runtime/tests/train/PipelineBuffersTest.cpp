//===- PipelineBuffersTest.cpp - a pipeline rank's per-microbatch buffers -===//
//
// PipelineBuffers on the CPU backend: a microbatch keeps its buffer until
// released and a released one is lent again; an offloaded stash comes back
// with its bytes whether or not it was prefetched, also when every copy is
// held back (TRC_OFFLOAD_COPY_DELAY_US: a read that did not wait would see
// stale memory), and when it is wanted back before its offload settled;
// device and host stash bytes and their peaks follow the moves; offloading
// what is not lent is an error naming the slot.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/PipelineBuffers.h"
#include "runtime/backends/cpu/CpuBackend.h"

#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

using ::testing::HasSubstr;
using namespace trc::rt;

namespace {

constexpr uint64_t kBytes = 4096;

void fill(void *p, float from) {
  auto *f = static_cast<float *>(p);
  std::iota(f, f + kBytes / 4, from);
}

bool holds(const void *p, float from) {
  std::vector<float> want(kBytes / 4);
  std::iota(want.begin(), want.end(), from);
  return std::memcmp(p, want.data(), kBytes) == 0;
}

} // namespace

TEST(PipelineBuffers, LendsPerMicrobatchAndReusesReleasedBuffers) {
  CpuBackend backend;
  PipelineBuffers buffers(backend);
  StatusOr<void *> a = buffers.buffer("stash:0", 0, kBytes);
  StatusOr<void *> b = buffers.buffer("stash:0", 1, kBytes);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  StatusOr<void *> again = buffers.buffer("stash:0", 0, kBytes);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *a);
  buffers.release("stash:0", 0);
  StatusOr<void *> reused = buffers.buffer("stash:0", 2, kBytes);
  ASSERT_TRUE(reused.ok());
  EXPECT_EQ(*reused, *a);
  // Send and receive buffers are not stashed activations.
  ASSERT_TRUE(buffers.buffer("send:t0", 0, kBytes).ok());
  EXPECT_EQ(buffers.peakDeviceStashBytes(), 2 * kBytes);
  EXPECT_EQ(buffers.peakHostStashBytes(), 0u);
}

TEST(PipelineBuffers, OffloadedStashComesBackWhole) {
  // Every copy held back 20 ms: reading before a wait would see zeros.
  ASSERT_EQ(setenv("TRC_OFFLOAD_COPY_DELAY_US", "20000", 1), 0);
  CpuBackend backend;
  PipelineBuffers buffers(backend);
  for (int mb = 0; mb < 3; ++mb) {
    StatusOr<void *> p = buffers.buffer("stash:0", mb, kBytes);
    ASSERT_TRUE(p.ok());
    fill(*p, float(100 * mb));
  }
  ASSERT_TRUE(buffers.offload("stash:0", 0));
  ASSERT_TRUE(buffers.offload("stash:0", 1));
  EXPECT_TRUE(buffers.onHost("stash:0", 0));
  ASSERT_TRUE(buffers.settleOffloads());
  // Their device buffers went back to the pool: a new microbatch reuses one
  // and overwrites it.
  StatusOr<void *> other = buffers.buffer("stash:0", 3, kBytes);
  ASSERT_TRUE(other.ok());
  fill(*other, -1.0f);
  EXPECT_EQ(buffers.peakDeviceStashBytes(), 3 * kBytes);
  EXPECT_EQ(buffers.peakHostStashBytes(), 2 * kBytes);
  // Microbatch 0 prefetched, microbatch 1 fetched on demand: both whole.
  ASSERT_TRUE(buffers.prefetch("stash:0", 0));
  StatusOr<void *> zero = buffers.buffer("stash:0", 0, kBytes);
  StatusOr<void *> one = buffers.buffer("stash:0", 1, kBytes);
  ASSERT_TRUE(zero.ok() && one.ok());
  EXPECT_TRUE(holds(*zero, 0.0f));
  EXPECT_TRUE(holds(*one, 100.0f));
  EXPECT_FALSE(buffers.onHost("stash:0", 0));
  EXPECT_FALSE(buffers.onHost("stash:0", 1));
  // Wanted back before its offload settled: the device copy stays.
  ASSERT_TRUE(buffers.offload("stash:0", 2));
  StatusOr<void *> two = buffers.buffer("stash:0", 2, kBytes);
  ASSERT_TRUE(two.ok());
  EXPECT_TRUE(holds(*two, 200.0f));
  EXPECT_FALSE(buffers.onHost("stash:0", 2));
  ASSERT_TRUE(buffers.settleOffloads());
  StatusOr<void *> still = buffers.buffer("stash:0", 2, kBytes);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(*still, *two);
  unsetenv("TRC_OFFLOAD_COPY_DELAY_US");
}

TEST(PipelineBuffers, OffloadingWhatIsNotLentIsAnError) {
  CpuBackend backend;
  PipelineBuffers buffers(backend);
  Status s = buffers.offload("stash:7", 0);
  EXPECT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("'stash:7' of microbatch 0"));
}
