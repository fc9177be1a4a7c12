//===- BackendTest.cpp - device buffers and createBackend's device names ---===//
//
// 64-byte alignment of CPU-device buffers (zero-byte ones included), and the
// device names createBackend takes.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/backends/cuda/CudaBackend.h"

#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

using ::testing::HasSubstr;
using namespace trc::rt;

TEST(Backend, CpuAllocationsAreAlignedAndNonNull) {
  CpuBackend cpu;
  EXPECT_STREQ(cpu.target(), "cpu");
  DeviceBuffer empty, some;
  ASSERT_TRUE(empty.allocate(cpu, 0));
  ASSERT_TRUE(some.allocate(cpu, 100));
  EXPECT_NE(empty.get(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(some.get()) % 64, 0u);
  const char msg[] = "hello";
  char back[6] = {};
  ASSERT_TRUE(cpu.copyToDevice(some.get(), msg, 6));
  ASSERT_TRUE(cpu.copyToHost(back, some.get(), 6));
  EXPECT_STREQ(back, "hello");
  EXPECT_FALSE(cpu.allocate(SIZE_MAX / 2).ok());
}

TEST(Backend, DeviceNames) {
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> b, createBackend("cpu"));
  EXPECT_STREQ(b->target(), "cpu");
  // "auto" is the GPU where one is present, else the CPU; "cuda" without
  // one says what is missing (CudaDriverTest.cpp, CudaBackendTest.cpp).
  std::string why;
  bool gpu = cudaDevicePresent(why);
  TRC_ASSERT_OK_AND_ASSIGN(b, createBackend("auto"));
  EXPECT_STREQ(b->target(), gpu ? "cuda" : "cpu");
  Status s = createBackend("cuda").status();
  EXPECT_EQ(bool(s), gpu) << s.message();
  if (!gpu)
    EXPECT_THAT(s.message(), HasSubstr("--device cuda: " + why)) << s.message();
  s = createBackend("tpu").status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "unknown device 'tpu' (expected cpu, cuda or auto)");
}
