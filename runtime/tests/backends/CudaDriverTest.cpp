//===- CudaDriverTest.cpp - loading the driver and cuBLASLt (no GPU) --------===//
//
// Without a GPU: every symbol the runtime looks up exists in the CUDA
// toolkit's driver stub (stubs/libcuda.so exports the real driver's symbol
// table) and in the toolkit's libcublasLt, where the build found them; a
// missing library or symbol is reported by name; the stub's cuInit says
// "stub library"; createBackend names what is missing for --device cuda and
// falls back to the CPU for --device auto on a machine without a GPU.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CublasLt.h"
#include "runtime/backends/cuda/CudaBackend.h"
#include "runtime/backends/cuda/CudaDriver.h"

#include "StatusTesting.h"
#include "TestFixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/stat.h>

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace trc::rt;

namespace {
bool exists(const char *path) {
  struct stat st;
  return ::stat(path, &st) == 0;
}
} // namespace

TEST(CudaDriver, EverySymbolIsInTheToolkitsDriverStub) {
#ifndef TRC_TEST_CUDA_STUB
  GTEST_SKIP() << "the CUDA toolkit's stubs/libcuda.so was not found at build time";
#else
  if (!exists(TRC_TEST_CUDA_STUB))
    GTEST_SKIP() << TRC_TEST_CUDA_STUB << " is gone";
  TRC_ASSERT_OK_AND_ASSIGN(CudaDriver api, bindCudaDriver(TRC_TEST_CUDA_STUB));
  EXPECT_TRUE(api.hasGraphs()) << "the optional graph symbols are missing";
  // Each listed symbol, required or optional, resolves.
  size_t count = 0;
  const CudaDriverSymbol *symbols = cudaDriverSymbols(count);
  EXPECT_GE(count, 38u);
  for (size_t i = 0; i < count; ++i)
    EXPECT_NE(::dlsym(api.library, symbols[i].name), nullptr) << symbols[i].name;
  // The stub answers every call with CUDA_ERROR_STUB_LIBRARY.
  EXPECT_EQ(api.Init(0), cudaabi::kErrorStubLibrary);
  EXPECT_FALSE(cudaResultString(api, cudaabi::kErrorStubLibrary).empty());
  Status check = cudaCheck(api, "cuInit", cudaabi::kErrorStubLibrary);
  ASSERT_FALSE(check);
  EXPECT_THAT(check.message(), StartsWith("cuInit: ")) << check.message();
  EXPECT_TRUE(cudaCheck(api, "cuInit", cudaabi::kSuccess));
  // Unloaded again: a loaded library with the soname libcuda.so.1 is what a
  // later dlopen("libcuda.so.1") would return, stub or not.
  ::dlclose(api.library);
#endif
}

TEST(CudaDriver, MissingLibrariesAndSymbolsAreNamed) {
  Status s = bindCudaDriver("libtrc-no-such-driver.so.1").status();
  ASSERT_FALSE(s);
  EXPECT_THAT(
      s.message(),
      HasSubstr(
          "the CUDA driver libtrc-no-such-driver.so.1 is not installed ("))
      << s.message();
  // A library without the driver's symbols.
  s = bindCudaDriver(test::fixturePath(TRC_TEST_PROGRAM)).status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("has no symbol cuInit")) << s.message();

  s = bindCublasLt("libtrc-no-such-cublasLt.so").status();
  ASSERT_FALSE(s);
  EXPECT_THAT(
      s.message(),
      HasSubstr(
          "cuBLASLt: libtrc-no-such-cublasLt.so not found or not loadable"))
      << s.message();
  s = bindCublasLt(test::fixturePath(TRC_TEST_PROGRAM)).status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("has no symbol cublasLtCreate"))
      << s.message();
}

TEST(CudaDriver, EverySymbolIsInTheToolkitsCublasLt) {
#ifndef TRC_TEST_CUBLASLT
  GTEST_SKIP() << "the CUDA toolkit's libcublasLt was not found at build time";
#else
  StatusOr<CublasLtApi> bound = bindCublasLt(TRC_TEST_CUBLASLT);
  if (!bound.ok() && !exists(TRC_TEST_CUBLASLT))
    GTEST_SKIP() << TRC_TEST_CUBLASLT << " is gone";
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  const CublasLtApi &api = *bound;
  EXPECT_NE(api.GetStatusString, nullptr);
  EXPECT_NE(api.GetStatusName, nullptr);
  // Needs no GPU: the library's own version.
  EXPECT_GE(api.GetVersion(), size_t(120000)) << "cuBLASLt 12 or newer";
  EXPECT_THAT(cublasLtStatusString(api, cublasltabi::kStatusNotSupported),
              HasSubstr("NOT_SUPPORTED"))
      << cublasLtStatusString(api, cublasltabi::kStatusNotSupported);
#endif
}

TEST(CudaDriver, CreateBackendWithoutAGpu) {
  std::string why;
  if (cudaDevicePresent(why))
    GTEST_SKIP() << "a CUDA device is present (the GPU tests cover createBackend there)";
  Status s = createBackend("cuda").status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), StartsWith("--device cuda: ")) << s.message();
  // It says what is missing: the driver, a real driver, or a device.
  EXPECT_THAT(s.message(),
              AnyOf(HasSubstr("libcuda.so.1"), HasSubstr("no CUDA device")));
  EXPECT_EQ(s.message().find("--device cuda: ", 1), std::string::npos) << "said once";
  // The same message every time (a failed load is not retried).
  Status again = createBackend("cuda").status();
  EXPECT_EQ(again.message(), s.message());
  // auto falls back to the CPU.
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend, createBackend("auto"));
  EXPECT_EQ(std::string(backend->target()), "cpu");
  TRC_ASSERT_OK_AND_ASSIGN(backend, createBackend("cpu"));
  EXPECT_EQ(std::string(backend->target()), "cpu");
  s = createBackend("gpu").status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "unknown device 'gpu' (expected cpu, cuda or auto)");
}
