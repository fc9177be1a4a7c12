//===- OffloadTest.cpp - the copy engines and the trc_rt_offload_* entries ==//
//
// ThreadCopyEngine (the CPU backend's): copies run on its worker, in start
// order, beside the caller, and wait() returns only once its copy is done
// (a held-back copy has not touched its destination before); a copy number
// cannot start twice before its wait. The entries (Offload.h) inside an
// OffloadScope move a buffer to the host arena and back; a host offset past
// the arena, a wait of a copy never started or with other buffers, a call
// outside a scope and a copy never waited for are errors that later calls
// respect and takeOffloadError() reports once. The CUDA engine's order of
// driver calls is in CudaOffloadTest (CudaBackendTest.cpp's fixture runs it
// against the fake driver in CI).
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/CopyEngine.h"
#include "runtime/backends/Offload.h"
#include "runtime/backends/cpu/CpuBackend.h"

#include "trc/Abi/OffloadAbi.h"
#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <vector>

using ::testing::HasSubstr;
using namespace trc::rt;
using namespace trc::rt::test;

namespace {
int64_t address(const void *p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); }

std::vector<float> iota(size_t n, float from) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), from);
  return v;
}
} // namespace

TEST(ThreadCopyEngine, CopiesBesideTheCallerAndWaitsForEach) {
  ThreadCopyEngine engine(std::chrono::milliseconds(100));
  std::vector<float> a = iota(1024, 1), b = iota(1024, 5000), toA(1024, 0), toB(1024, 0);
  auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(engine.start(0, CopyDirection::ToHost, toA.data(), a.data(), 4096));
  ASSERT_TRUE(engine.start(1, CopyDirection::ToHost, toB.data(), b.data(), 4096));
  // Held back: nothing copied yet, and start() did not block.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(90));
  EXPECT_EQ(toA[0], 0.0f);
  ASSERT_TRUE(engine.wait(0));
  EXPECT_EQ(toA, a);
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(100));
  ASSERT_TRUE(engine.wait(1));
  EXPECT_EQ(toB, b);
  EXPECT_EQ(engine.copiesDone(), 2u);
  // A number can be used again after its wait.
  ASSERT_TRUE(engine.start(0, CopyDirection::ToDevice, a.data(), b.data(), 4096));
  ASSERT_TRUE(engine.drain());
  EXPECT_EQ(a, b);
}

TEST(ThreadCopyEngine, ACopyStartsOnceBeforeItsWait) {
  ThreadCopyEngine engine(std::chrono::milliseconds(50));
  std::vector<float> a(16, 1), b(16, 0);
  ASSERT_TRUE(engine.start(3, CopyDirection::ToHost, b.data(), a.data(), 64));
  Status again = engine.start(3, CopyDirection::ToHost, b.data(), a.data(), 64);
  ASSERT_FALSE(again);
  EXPECT_THAT(again.message(), HasSubstr("copy 3 started again before its wait"));
  ASSERT_TRUE(engine.wait(3));
}

TEST(Offload, EntriesMoveABufferToTheHostArenaAndBack) {
  CpuBackend backend;
  TRC_ASSERT_OK_AND_ASSIGN(CopyEngine * engine, backend.copyEngine());
  HostBuffer host;
  ASSERT_TRUE(host.allocate(backend, 1024));
  std::vector<float> x = iota(64, 1), back(64, 0);
  {
    OffloadScope scope(*engine, host.get(), 1024);
    trc_rt_offload_start(0, trc::abi::kOffloadToHost, 256, address(x.data()), 512);
    trc_rt_offload_wait(0, address(x.data()), 512);
    std::fill(x.begin(), x.end(), -1.0f); // the device buffer is free now
    trc_rt_offload_start(1, trc::abi::kOffloadToDevice, 256, address(back.data()), 512);
    trc_rt_offload_wait(1, address(back.data()), 512);
  }
  ASSERT_TRUE(takeOffloadError());
  EXPECT_EQ(back, iota(64, 1));
  const float *inArena = reinterpret_cast<const float *>(static_cast<char *>(host.get()) + 512);
  EXPECT_EQ(inArena[63], 64.0f);
}

TEST(Offload, BadCallsAreReportedOnceAndStopLaterCopies) {
  CpuBackend backend;
  TRC_ASSERT_OK_AND_ASSIGN(CopyEngine * engine, backend.copyEngine());
  HostBuffer host;
  ASSERT_TRUE(host.allocate(backend, 256));
  std::vector<float> x(64, 1), y(64, 0);
  auto failure = [&](const std::function<void()> &calls) {
    {
      OffloadScope scope(*engine, host.get(), 256);
      calls();
    }
    Status s = takeOffloadError();
    EXPECT_TRUE(takeOffloadError()) << "reported twice";
    return s.ok() ? std::string() : s.message();
  };
  EXPECT_THAT(failure([&] {
                trc_rt_offload_start(0, trc::abi::kOffloadToHost, 256, address(x.data()), 64);
              }),
              HasSubstr("copy 0 of 256 bytes at offset 64 lies outside the host arena (256 "
                        "bytes)"));
  EXPECT_THAT(failure([&] { trc_rt_offload_wait(2, address(x.data()), 0); }),
              HasSubstr("trc_rt_offload_wait: copy 2 was not started"));
  EXPECT_THAT(failure([&] {
                trc_rt_offload_start(0, trc::abi::kOffloadToHost, 256, address(x.data()), 0);
                trc_rt_offload_wait(0, address(y.data()), 0);
              }),
              HasSubstr("copy 0 is waited for with other buffers than it started with"));
  EXPECT_THAT(failure([&] {
                trc_rt_offload_start(0, trc::abi::kOffloadToHost, 256, address(x.data()), 0);
              }),
              HasSubstr("trc_rt_offload_start: copy 0 was never waited for"));
  EXPECT_THAT(failure([&] {
                trc_rt_offload_start(0, 7, 256, address(x.data()), 0);
                // Later calls do nothing: no second error.
                trc_rt_offload_wait(5, address(x.data()), 0);
              }),
              HasSubstr("bad copy number, direction or size"));
  // Outside a scope.
  trc_rt_offload_start(0, trc::abi::kOffloadToHost, 4, address(x.data()), 0);
  Status outside = takeOffloadError();
  ASSERT_FALSE(outside);
  EXPECT_THAT(outside.message(), HasSubstr("called outside a run with a host arena"));
}
