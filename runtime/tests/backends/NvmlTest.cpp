//===- NvmlTest.cpp - a GPU's utilisation from NVML (no GPU) ---------------===//
//
// Against FakeNvml.cpp (TRC_NVML_LIBRARY): the device found by its PCI bus
// id, its utilisation and memory read; an unknown bus id and a library that
// is missing or is not NVML are errors naming them. On a GPU (the GPU
// bundle's run): the driver's NVML reads the device CudaBackend runs on.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/Nvml.h"

#include "runtime/backends/cuda/CudaBackend.h"

#include "StatusTesting.h"
#include "TestCudaArtifact.h"
#include "TestFixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sys/stat.h>

using ::testing::HasSubstr;
using namespace trc::rt;

namespace {
/// Sets TRC_NVML_LIBRARY for one test.
struct NvmlLibrary {
  explicit NvmlLibrary(const std::string &path) { ::setenv("TRC_NVML_LIBRARY", path.c_str(), 1); }
  ~NvmlLibrary() { ::unsetenv("TRC_NVML_LIBRARY"); }
};

/// FakeNvml.cpp's library (beside the tests, or in TRC_TEST_FIXTURES).
std::string fakeNvml() { return test::fixturePath(TRC_TEST_FAKE_NVML); }

#define REQUIRE_FAKE_NVML()                                                    \
  do {                                                                         \
    struct stat st_;                                                           \
    if (::stat(fakeNvml().c_str(), &st_) != 0)                                 \
      GTEST_SKIP() << "the tests' fake NVML is not at " << fakeNvml();         \
  } while (0)
} // namespace

TEST(Nvml, ReadsTheUtilisationOfTheGpuAtABusId) {
  REQUIRE_FAKE_NVML();
  NvmlLibrary fake(fakeNvml());
  StatusOr<std::unique_ptr<NvmlDevice>> gpu = NvmlDevice::open("00000000:3B:00.0");
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  StatusOr<GpuSample> sample = (*gpu)->sample();
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  EXPECT_EQ(sample->utilisationPercent, 87);
  EXPECT_EQ(sample->memoryUsedMb, 1536);
}

TEST(Nvml, AnUnknownBusIdIsNamed) {
  REQUIRE_FAKE_NVML();
  NvmlLibrary fake(fakeNvml());
  EXPECT_EQ(test::errorOf(NvmlDevice::open("00000000:AF:00.0")),
            "GPU 00000000:AF:00.0: nvmlDeviceGetHandleByPciBusId_v2: Not Found");
}

TEST(Nvml, AMissingOrForeignLibraryIsNamed) {
  {
    NvmlLibrary missing("/nonexistent/libnvidia-ml.so.1");
    std::string error = test::errorOf(NvmlDevice::open("00000000:3B:00.0"));
    EXPECT_THAT(error, HasSubstr("/nonexistent/libnvidia-ml.so.1 (NVML, installed with the "
                                 "NVIDIA driver; named by TRC_NVML_LIBRARY) is not loadable"));
  }
  NvmlLibrary notNvml("libz.so.1"); // loadable, but not NVML
  EXPECT_EQ(test::errorOf(NvmlDevice::open("00000000:3B:00.0")),
            "libz.so.1 has no nvmlInit_v2 (not NVML?)");
}

TEST(Nvml, ReadsTheGpuTheCudaBackendRunsOn) {
  REQUIRE_CUDA_DEVICE();
  StatusOr<std::unique_ptr<CudaBackend>> backend = CudaBackend::create();
  ASSERT_TRUE(backend.ok()) << backend.status().message();
  std::string bus = (*backend)->pciBusId();
  ASSERT_EQ(bus.size(), 16u) << bus; // "00000000:3B:00.0"
  StatusOr<std::unique_ptr<NvmlDevice>> gpu = NvmlDevice::open(bus);
  ASSERT_TRUE(gpu.ok()) << gpu.status().message();
  StatusOr<GpuSample> sample = (*gpu)->sample();
  ASSERT_TRUE(sample.ok()) << sample.status().message();
  EXPECT_GE(sample->utilisationPercent, 0);
  EXPECT_LE(sample->utilisationPercent, 100);
  EXPECT_GT(sample->memoryUsedMb, 0); // the backend's context holds some
  std::printf("[ NVML     ] %s: %.0f%% busy, %.0f MiB in use\n", bus.c_str(),
              sample->utilisationPercent, sample->memoryUsedMb);
}
