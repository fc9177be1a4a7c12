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

/// The driver's NVML reads the GPU CudaBackend runs on; exits 0 when it
/// does, 1 saying what failed.
[[noreturn]] static void readTheBackendsGpu() {
  auto fail = [](const std::string &why) {
    std::fprintf(stderr, "%s\n", why.c_str());
    std::exit(1);
  };
  StatusOr<std::unique_ptr<CudaBackend>> backend = CudaBackend::create();
  if (!backend.ok())
    fail(std::string(backend.status().message()));
  std::string bus = (*backend)->pciBusId();
  if (bus.size() != 16u) // "00000000:3B:00.0"
    fail("the backend's PCI bus id is '" + bus + "'");
  StatusOr<std::unique_ptr<NvmlDevice>> gpu = NvmlDevice::open(bus);
  if (!gpu.ok())
    fail(std::string(gpu.status().message()));
  StatusOr<GpuSample> sample = (*gpu)->sample();
  if (!sample.ok())
    fail(std::string(sample.status().message()));
  if (sample->utilisationPercent < 0 || sample->utilisationPercent > 100)
    fail("utilisation " + std::to_string(sample->utilisationPercent) + "%");
  if (sample->memoryUsedMb <= 0) // the backend's context holds some
    fail("no memory in use");
  std::fprintf(stderr, "[ NVML     ] %s: %.0f%% busy, %.0f MiB in use\n", bus.c_str(),
               sample->utilisationPercent, sample->memoryUsedMb);
  std::exit(0);
}

TEST(Nvml, ReadsTheGpuTheCudaBackendRunsOn) {
  REQUIRE_CUDA_DEVICE();
  // The fake NVML has the driver's soname (libnvidia-ml.so.1), and a loaded
  // library answers every later dlopen of its soname: the fake tests above
  // leave it resident (NVML is never unloaded). So this runs in a fresh
  // process of this test alone ("threadsafe" death tests re-execute the
  // binary), which loads the driver's NVML.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(readTheBackendsGpu(), ::testing::ExitedWithCode(0), "NVML .* busy");
}
