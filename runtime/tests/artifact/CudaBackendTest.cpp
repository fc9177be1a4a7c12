//===- CudaBackendTest.cpp - the CUDA backend on a real GPU -----------------===//
//
// Every test here needs a CUDA driver and device. Where there is none (CI,
// the build machine) each test is skipped with the reason ("no CUDA device:
// the CUDA driver libcuda.so.1 is not installed (...)"); with
// TRC_REQUIRE_GPU=1 in the environment (the GPU bundle's run.sh) a missing GPU fails
// them instead, so a GPU machine can never pass by skipping. CI also runs
// them against a CPU stand-in for the driver and cuBLASLt (FakeCuda.h; the
// ctest trc-artifact-tests-fake-cuda), which checks the backend's host side,
// not the GPU's results.
//
// Covered: device memory (sizes, alignment, zero fill, host <-> device and
// device <-> device copies); the hand-written PTX kernels of
// TestCudaArtifact.h loaded through the JIT and, where ptxas is found, as a
// cubin for the device's own chip, launched through trc_rt_cuda_launch
// (kernel table indexing, launch errors, images that do not fit the
// device); trc_rt_cublaslt_matmul_{f32,f64,bf16,f16} on strided-batched,
// transposed, padded, broadcast and empty cases against the CPU
// trc_rt_matmul_* on the same data (relative 1e-4 for f32, 1e-2 for 16-bit
// inputs); CUDA graph capture and replay (same results as plain runs, new
// input data seen by replays, new pointers recaptured, TRC_CUDA_GRAPHS=0);
// the cuda test artifact end to end through Artifact, Session and
// createBackend("cuda"/"auto"); offloading's copy engine (page-locked host
// arena, a copy stream ordered by events, in plain runs, captures and
// replays; against the fake driver, the order of those calls).
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Artifact.h"
#include "runtime/backends/Offload.h"
#include "runtime/backends/cpu/Blas.h"
#include "runtime/backends/cuda/CudaBackend.h"
#include "runtime/support/HalfFloat.h"
#include "runtime/artifact/Session.h"
#include "runtime/comm/Collectives.h"

#include "ScopedEnvironment.h"
#include "StatusTesting.h"
#include "TestCudaArtifact.h"
#include "trc/Abi/CollectiveAbi.h"
#include "trc/Abi/OffloadAbi.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <dlfcn.h>
#include <random>
#include <regex>
#include <sys/wait.h>

using ::testing::HasSubstr;
using namespace trc::rt;
using namespace trc::rt::test;

namespace {

class CudaTest : public ::testing::Test {
protected:
  void SetUp() override {
    REQUIRE_CUDA_DEVICE();
    TRC_ASSERT_OK_AND_ASSIGN(backend, CudaBackend::create());
    static bool described = false;
    if (!described) {
      described = true;
      std::printf("[ CUDA     ] %s\n", backend->describe().c_str());
    }
  }
  // Device buffer holding `values`.
  template <typename T> DeviceBuffer upload(const std::vector<T> &values) {
    DeviceBuffer buf;
    Status s = buf.allocate(*backend, values.size() * sizeof(T));
    EXPECT_TRUE(s) << s.message();
    s = backend->copyToDevice(buf.get(), values.data(), values.size() * sizeof(T));
    EXPECT_TRUE(s) << s.message();
    return buf;
  }
  template <typename T> std::vector<T> download(const DeviceBuffer &buf, size_t count) {
    std::vector<T> out(count);
    Status s = backend->copyToHost(out.data(), buf.get(), count * sizeof(T));
    EXPECT_TRUE(s) << s.message();
    return out;
  }
  std::unique_ptr<CudaBackend> backend;
};

// The step a test runs: backend.run takes a plain function pointer.
std::function<void(void **, void *)> gStep;
void stepEntry(void **slots, void *arena) { gStep(slots, arena); }
// Entries for registered programs (one per program, so the registry never
// mixes them up).
void programEntryA(void **slots, void *arena) { gStep(slots, arena); }
void programEntryB(void **slots, void *arena) { gStep(slots, arena); }

// Registers a program for `entry` for the life of the object.
struct RegisteredProgram {
  RegisteredProgram(EntryFn entry, std::shared_ptr<CudaProgram> p) : entry(entry), program(p) {
    registerCudaProgram(entry, p);
  }
  ~RegisteredProgram() { unregisterCudaProgram(entry, program->id); }
  EntryFn entry;
  std::shared_ptr<CudaProgram> program;
};

std::shared_ptr<CudaProgram> ptxProgram(size_t numSlots) {
  auto p = std::make_shared<CudaProgram>();
  p->id = newCudaProgramId();
  p->origin = "test program";
  p->kernels = {kTestKernelNames[0], kTestKernelNames[1]};
  CudaImage ptx;
  ptx.ptx = true;
  ptx.chip = "sm_50";
  ptx.major = 5;
  ptx.minor = 0;
  ptx.file = "kernels.sm_50.ptx";
  ptx.bytes = kTestPtx;
  p->images.push_back(ptx);
  p->numSlots = numSlots;
  return p;
}

// z = a * x + y with kernel 0 (n elements), as the program would launch it.
void launchAxpy(void *x, void *y, void *z, float a, uint32_t n) {
  void *params[5] = {&x, &y, &z, &a, &n};
  trc_rt_cuda_launch(0, (n + 127) / 128, 1, 1, 128, 1, 1, 0, params, 5);
}

std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

} // namespace

// --- memory -------------------------------------------------------------------

TEST_F(CudaTest, DescribesTheDevice) {
  EXPECT_EQ(std::string(backend->target()), "cuda");
  EXPECT_GE(backend->computeMajor(), 5);
  EXPECT_FALSE(backend->deviceName().empty());
  EXPECT_NE(backend->stream(), nullptr);
  EXPECT_THAT(backend->describe(), HasSubstr("sm_" + std::to_string(backend->computeMajor())));
}

TEST_F(CudaTest, AllocationsAreAlignedAndZeroFilled) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(1000),
                       size_t(1) << 20, (size_t(1) << 20) + 3}) {
    StatusOr<void *> allocated = backend->allocate(bytes);
    ASSERT_TRUE(allocated.ok()) << bytes << ": " << allocated.status().message();
    void *p = *allocated;
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    // Zero-filled up to the 64-byte rounding.
    size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
    std::vector<unsigned char> back(rounded, 0xff);
    Status s = backend->copyToHost(back.data(), p, rounded);
    ASSERT_TRUE(s) << s.message();
    EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](unsigned char c) { return c == 0; }))
        << bytes;
    backend->deallocate(p);
  }
}

TEST_F(CudaTest, CopiesRoundTrip) {
  std::vector<uint32_t> values(100003);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = uint32_t(i * 2654435761u);
  DeviceBuffer a = upload(values);
  EXPECT_EQ(download<uint32_t>(a, values.size()), values);
  DeviceBuffer b;
  ASSERT_TRUE(b.allocate(*backend, values.size() * 4));
  ASSERT_TRUE(backend->copyOnDevice(b.get(), a.get(), values.size() * 4));
  EXPECT_EQ(download<uint32_t>(b, values.size()), values);
  // A part, at an offset, and zero bytes.
  std::vector<uint32_t> part(10, 7);
  ASSERT_TRUE(backend->copyToDevice(static_cast<char *>(b.get()) + 40, part.data(), 40));
  std::vector<uint32_t> back = download<uint32_t>(b, 30);
  for (int i = 0; i < 30; ++i)
    EXPECT_EQ(back[size_t(i)], i >= 10 && i < 20 ? 7u : values[size_t(i)]) << i;
  EXPECT_TRUE(backend->copyToDevice(b.get(), nullptr, 0));
  EXPECT_TRUE(backend->copyToHost(nullptr, b.get(), 0));
  EXPECT_TRUE(backend->copyOnDevice(b.get(), a.get(), 0));
}

TEST_F(CudaTest, AnAbsurdAllocationIsAnError) {
  Status s = backend->allocate(size_t(1) << 60).status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("cannot allocate")) << s.message();
  EXPECT_THAT(s.message(), HasSubstr("cuMemAlloc")) << s.message();
  // The backend still works.
  DeviceBuffer ok;
  EXPECT_TRUE(ok.allocate(*backend, 256));
}

// --- kernels ------------------------------------------------------------------

TEST_F(CudaTest, PtxKernelRunsThroughTrcRtCudaLaunch) {
  const uint32_t n = 1000;
  std::vector<float> x = randomFloats(n, 1), y = randomFloats(n, 2);
  DeviceBuffer dx = upload(x), dy = upload(y), dz;
  ASSERT_TRUE(dz.allocate(*backend, n * 4));
  RegisteredProgram reg(&programEntryA, ptxProgram(3));
  gStep = [&](void **slots, void *) { launchAxpy(slots[0], slots[1], slots[2], 2.5f, n); };
  void *slots[3] = {dx.get(), dy.get(), dz.get()};
  Status s = backend->run(&programEntryA, slots, nullptr);
  ASSERT_TRUE(s) << s.message();
  const CudaImage *image = backend->loadedImage(*reg.program);
  ASSERT_NE(image, nullptr);
  EXPECT_TRUE(image->ptx);
  std::vector<float> z = download<float>(dz, n);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(z[i], std::fma(2.5f, x[i], y[i])) << i;
}

TEST_F(CudaTest, KernelTableIndexesTheRightKernel) {
  // Kernel 1: y[i] = t[i] + b[i % cols].
  const uint32_t rows = 37, cols = 5, n = rows * cols;
  std::vector<float> t = randomFloats(n, 3), b = randomFloats(cols, 4);
  DeviceBuffer dt = upload(t), db = upload(b), dy;
  ASSERT_TRUE(dy.allocate(*backend, n * 4));
  RegisteredProgram reg(&programEntryA, ptxProgram(3));
  gStep = [&](void **slots, void *) {
    void *tp = slots[0], *bp = slots[1], *yp = slots[2];
    uint32_t c = cols, count = n;
    void *params[5] = {&tp, &bp, &yp, &c, &count};
    trc_rt_cuda_launch(1, 2, 1, 1, 128, 1, 1, 0, params, 5);
  };
  void *slots[3] = {dt.get(), db.get(), dy.get()};
  ASSERT_TRUE(backend->run(&programEntryA, slots, nullptr));
  std::vector<float> y = download<float>(dy, n);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(y[i], t[i] + b[i % cols]) << i;
}

TEST_F(CudaTest, CubinForTheDeviceChip) {
#ifndef TRC_TEST_PTXAS
  GTEST_SKIP() << "ptxas was not found at build time";
#else
  // Assemble the test PTX for this device with the toolkit's ptxas.
  TempDir dir;
  std::string chip = "sm_" + std::to_string(backend->computeMajor()) +
                     std::to_string(backend->computeMinor());
  writeFile(dir.file("k.ptx"), kTestPtx);
  std::string command = std::string(TRC_TEST_PTXAS) + " -arch=" + chip + " -o " +
                        dir.file("k.cubin") + " " + dir.file("k.ptx") + " 2>&1";
  int rc = std::system(command.c_str());
  if (rc != 0)
    GTEST_SKIP() << command << " failed (status " << rc << "): this ptxas cannot target "
                 << chip;
  auto program = ptxProgram(3);
  CudaImage cubin;
  cubin.chip = chip;
  cubin.major = backend->computeMajor();
  cubin.minor = backend->computeMinor();
  cubin.file = "k.cubin";
  cubin.bytes = readFile(dir.file("k.cubin"));
  program->images.push_back(cubin);
  RegisteredProgram reg(&programEntryA, program);
  const uint32_t n = 300;
  std::vector<float> x = randomFloats(n, 5), y = randomFloats(n, 6);
  DeviceBuffer dx = upload(x), dy = upload(y), dz;
  ASSERT_TRUE(dz.allocate(*backend, n * 4));
  gStep = [&](void **slots, void *) { launchAxpy(slots[0], slots[1], slots[2], -1.5f, n); };
  void *slots[3] = {dx.get(), dy.get(), dz.get()};
  Status s = backend->run(&programEntryA, slots, nullptr);
  ASSERT_TRUE(s) << s.message();
  const CudaImage *image = backend->loadedImage(*program);
  ASSERT_NE(image, nullptr);
  EXPECT_FALSE(image->ptx) << "the cubin of the device's chip is preferred over PTX";
  std::vector<float> z = download<float>(dz, n);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(z[i], std::fma(-1.5f, x[i], y[i])) << i;

  // TRC_CUDA_PREFER_PTX=1 takes the PTX instead.
  ScopedEnvironment env;
  env.set("TRC_CUDA_PREFER_PTX", "1");
  std::unique_ptr<CudaBackend> jit;
  TRC_ASSERT_OK_AND_ASSIGN(jit, CudaBackend::create());
  ASSERT_TRUE(jit->run(&programEntryA, slots, nullptr));
  ASSERT_NE(jit->loadedImage(*program), nullptr);
  EXPECT_TRUE(jit->loadedImage(*program)->ptx);
#endif
}

TEST_F(CudaTest, ImagesThatDoNotFitTheDeviceAreErrors) {
  auto program = std::make_shared<CudaProgram>();
  program->id = newCudaProgramId();
  program->origin = "ART";
  program->kernels = {"trc_test_axpy"};
  CudaImage future;
  future.chip = "sm_" + std::to_string(backend->computeMajor() + 1) + "0";
  future.major = backend->computeMajor() + 1;
  future.file = "kernels.future.cubin";
  future.bytes = "not a cubin";
  program->images.push_back(future);
  RegisteredProgram reg(&programEntryA, program);
  gStep = [](void **, void *) {};
  Status s = backend->run(&programEntryA, nullptr, nullptr);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("ART: the artifact's kernels were not compiled for this GPU"))
      << s.message();
}

TEST_F(CudaTest, CorruptImagesAndMissingKernelsAreErrors) {
  // A cubin of the device's chip that is not one.
  auto garbage = std::make_shared<CudaProgram>();
  garbage->id = newCudaProgramId();
  garbage->origin = "ART";
  garbage->kernels = {"trc_test_axpy"};
  CudaImage bad;
  bad.chip = "sm_" + std::to_string(backend->computeMajor()) + "0";
  bad.major = backend->computeMajor();
  bad.file = "ART/kernels.bad.cubin";
  bad.bytes = std::string(4096, 'x');
  garbage->images.push_back(bad);
  {
    RegisteredProgram reg(&programEntryA, garbage);
    gStep = [](void **, void *) {};
    Status s = backend->run(&programEntryA, nullptr, nullptr);
    ASSERT_FALSE(s);
    EXPECT_THAT(s.message(), HasSubstr("cannot load ART/kernels.bad.cubin")) << s.message();
    EXPECT_THAT(s.message(), HasSubstr("cuModuleLoadData: ")) << s.message();
  }
  // PTX that does not compile: the JIT's log is in the message.
  auto broken = ptxProgram(0);
  broken->images[0].bytes = ".version 7.0\n.target sm_50\n.address_size 64\nthis is not ptx\n";
  {
    RegisteredProgram reg(&programEntryB, broken);
    Status s = backend->run(&programEntryB, nullptr, nullptr);
    ASSERT_FALSE(s);
    EXPECT_THAT(s.message(), HasSubstr("cuModuleLoadDataEx: ")) << s.message();
  }
  // A kernel the manifest names but the module lacks.
  auto missing = ptxProgram(0);
  missing->kernels.push_back("no_such_kernel");
  {
    RegisteredProgram reg(&programEntryB, missing);
    Status s = backend->run(&programEntryB, nullptr, nullptr);
    ASSERT_FALSE(s);
    EXPECT_THAT(s.message(), HasSubstr("kernel 2 'no_such_kernel' of the manifest is not in "
                                       "kernels.sm_50.ptx"))
        << s.message();
  }
}

TEST_F(CudaTest, LaunchErrorsAreReportedByTheRun) {
  RegisteredProgram reg(&programEntryA, ptxProgram(0));
  auto runWith = [&](std::function<void()> body) {
    gStep = [&](void **, void *) { body(); };
    return backend->run(&programEntryA, nullptr, nullptr);
  };
  DeviceBuffer buf;
  ASSERT_TRUE(buf.allocate(*backend, 1024));
  void *p = buf.get();
  float a = 1;
  uint32_t n = 16;
  void *params[5] = {&p, &p, &p, &a, &n};
  Status s = runWith([&] { trc_rt_cuda_launch(7, 1, 1, 1, 32, 1, 1, 0, params, 5); });
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("trc_rt_cuda_launch: kernel 7: no such kernel (the artifact has 2)"))
      << s.message();
  s = runWith([&] { trc_rt_cuda_launch(0, 0, 1, 1, 32, 1, 1, 0, params, 5); });
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("kernel 0 (trc_test_axpy): bad launch shape, grid (0, 1, 1)"))
      << s.message();
  // The driver refuses 4096 threads per block: its message names the call.
  s = runWith([&] { trc_rt_cuda_launch(0, 1, 1, 1, 4096, 1, 1, 0, params, 5); });
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("cuLaunchKernel: ")) << s.message();
  // Only the first error of a run is reported; later launches are skipped.
  s = runWith([&] {
    trc_rt_cuda_launch(-1, 1, 1, 1, 32, 1, 1, 0, params, 5);
    trc_rt_cuda_launch(9, 1, 1, 1, 32, 1, 1, 0, params, 5);
  });
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("kernel -1")) << s.message();
  // The next run is clean.
  s = runWith([&] { trc_rt_cuda_launch(0, 1, 1, 1, 32, 1, 1, 0, params, 5); });
  EXPECT_TRUE(s) << s.message();
  // An entry without a registered program has no kernels.
  gStep = [&](void **, void *) { trc_rt_cuda_launch(0, 1, 1, 1, 32, 1, 1, 0, params, 5); };
  s = backend->run(&stepEntry, nullptr, nullptr);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("the running program has no kernels")) << s.message();
}

TEST_F(CudaTest, EntriesCalledOutsideARunAreReportedByTheNext) {
  trc_rt_cuda_launch(0, 1, 1, 1, 1, 1, 1, 0, nullptr, 0);
  gStep = [](void **, void *) {};
  Status s = backend->run(&stepEntry, nullptr, nullptr);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("trc_rt_cuda_launch: kernel 0 (called outside a run of the CUDA "
                        "backend)"))
      << s.message();
  EXPECT_TRUE(backend->run(&stepEntry, nullptr, nullptr));
}

// --- cuBLASLt -----------------------------------------------------------------

namespace {

struct MatmulCase {
  int64_t batch, m, n, k;
  bool transA, transB;
  int64_t padA = 0, padB = 0, padC = 0; // extra elements per row
  int64_t gapA = 0, gapB = 0, gapC = 0; // extra elements between batches
  bool broadcastB = false;              // strideB = 0
};

std::string describe(const MatmulCase &c) {
  char text[160];
  std::snprintf(text, sizeof text,
                "batch %lld m %lld n %lld k %lld transA %d transB %d pads %lld/%lld/%lld "
                "gaps %lld/%lld/%lld%s",
                (long long)c.batch, (long long)c.m, (long long)c.n, (long long)c.k, c.transA,
                c.transB, (long long)c.padA, (long long)c.padB, (long long)c.padC,
                (long long)c.gapA, (long long)c.gapB, (long long)c.gapC,
                c.broadcastB ? " broadcast B" : "");
  return text;
}

std::vector<MatmulCase> matmulCases() {
  std::vector<MatmulCase> cases;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      cases.push_back({1, 16, 24, 32, ta, tb});
      cases.push_back({3, 17, 33, 29, ta, tb, 3, 5, 1, 7, 2, 9});
      cases.push_back({4, 64, 48, 80, ta, tb, 0, 0, 0, 0, 0, 0, true});
      cases.push_back({2, 1, 7, 5, ta, tb, 1, 0, 2, 0, 3, 0});
    }
  cases.push_back({2, 5, 6, 0, false, false, 1, 1, 2, 0, 0, 3}); // k == 0: C = 0
  cases.push_back({5, 128, 96, 256, false, true});
  return cases;
}

// Runs one case through trc_rt_cublaslt_matmul_<T> on the backend and
// through trc_rt_matmul_<T> on the host; returns max |gpu - cpu| / max |cpu|.
template <typename In, typename Out, typename Gpu, typename Cpu>
double compareMatmul(CudaBackend &backend, const MatmulCase &c, Gpu gpu, Cpu cpu,
                     In (*fromFloat)(float), std::string &error,
                     double (*valueOf)(Out) = nullptr) {
  int64_t aRows = c.transA ? c.k : c.m, aCols = c.transA ? c.m : c.k;
  int64_t bRows = c.transB ? c.n : c.k, bCols = c.transB ? c.k : c.n;
  int64_t lda = aCols + c.padA, ldb = bCols + c.padB, ldc = c.n + c.padC;
  int64_t strideA = aRows * lda + c.gapA, strideB = c.broadcastB ? 0 : bRows * ldb + c.gapB;
  int64_t strideC = c.m * ldc + c.gapC;
  size_t sizeA = size_t(c.batch * strideA), sizeB = size_t(c.broadcastB ? bRows * ldb
                                                                         : c.batch * strideB);
  size_t sizeC = size_t(c.batch * strideC);
  std::vector<float> fa = randomFloats(sizeA, 11), fb = randomFloats(std::max<size_t>(sizeB, 1), 12);
  std::vector<In> a(sizeA), b(fb.size());
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = fromFloat(fa[i]);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = fromFloat(fb[i]);
  // C starts as garbage: both must overwrite it (pads and gaps keep theirs).
  std::vector<Out> want(sizeC, Out(42)), got(sizeC, Out(42));
  cpu(c.batch, c.m, c.n, c.k, a.data(), lda, strideA, c.transA, b.data(), ldb, strideB,
      c.transB, want.data(), ldc, strideC);

  DeviceBuffer da, db, dc;
  Status s = da.allocate(backend, a.size() * sizeof(In));
  if (s) s = db.allocate(backend, b.size() * sizeof(In));
  if (s) s = dc.allocate(backend, got.size() * sizeof(Out));
  if (s) s = backend.copyToDevice(da.get(), a.data(), a.size() * sizeof(In));
  if (s) s = backend.copyToDevice(db.get(), b.data(), b.size() * sizeof(In));
  if (s) s = backend.copyToDevice(dc.get(), got.data(), got.size() * sizeof(Out));
  if (s) {
    gStep = [&](void **, void *) {
      gpu(c.batch, c.m, c.n, c.k, static_cast<const In *>(da.get()), lda, strideA, c.transA,
          static_cast<const In *>(db.get()), ldb, strideB, c.transB,
          static_cast<Out *>(dc.get()), ldc, strideC);
    };
    s = backend.run(&stepEntry, nullptr, nullptr);
  }
  if (s) s = backend.copyToHost(got.data(), dc.get(), got.size() * sizeof(Out));
  if (!s) {
    error = s.message();
    return INFINITY;
  }
  double maxDiff = 0, maxRef = 0;
  for (size_t i = 0; i < sizeC; ++i) {
    double g = valueOf ? valueOf(got[i]) : double(got[i]);
    double w = valueOf ? valueOf(want[i]) : double(want[i]);
    maxDiff = std::max(maxDiff, std::fabs(g - w));
    maxRef = std::max(maxRef, std::fabs(w));
  }
  return maxDiff / std::max(maxRef, 1e-30);
}

float identity(float x) { return x; }
double widen(float x) { return x; }

} // namespace

TEST_F(CudaTest, CublasLtF32MatchesTheCpu) {
  ScopedEnvironment env;
  env.unset("TRC_ALLOW_TF32");
  TRC_ASSERT_OK_AND_ASSIGN(backend, CudaBackend::create()); // reads TRC_ALLOW_TF32 on first matmul
  for (const MatmulCase &c : matmulCases()) {
    std::string error;
    double rel = compareMatmul<float, float>(*backend, c, &trc_rt_cublaslt_matmul_f32,
                                             &trc_rt_matmul_f32, &identity, error);
    EXPECT_LE(rel, 1e-4) << describe(c) << (error.empty() ? "" : ": " + error);
  }
}

TEST_F(CudaTest, CublasLtF64MatchesTheCpu) {
  for (const MatmulCase &c : matmulCases()) {
    std::string error;
    double rel = compareMatmul<double, double>(*backend, c, &trc_rt_cublaslt_matmul_f64,
                                               &trc_rt_matmul_f64, &widen, error);
    EXPECT_LE(rel, 1e-10) << describe(c) << (error.empty() ? "" : ": " + error);
  }
}

TEST_F(CudaTest, CublasLtBf16AndF16AccumulateInF32) {
  for (const MatmulCase &c : matmulCases()) {
    std::string error;
    double rel = compareMatmul<uint16_t, float>(*backend, c, &trc_rt_cublaslt_matmul_bf16,
                                                &trc_rt_matmul_bf16, &floatToBf16, error);
    EXPECT_LE(rel, 1e-2) << "bf16 " << describe(c) << (error.empty() ? "" : ": " + error);
    error.clear();
    rel = compareMatmul<uint16_t, float>(*backend, c, &trc_rt_cublaslt_matmul_f16,
                                         &trc_rt_matmul_f16, &floatToF16, error);
    EXPECT_LE(rel, 1e-2) << "f16 " << describe(c) << (error.empty() ? "" : ": " + error);
  }
}

static double bf16Value(uint16_t h) { return trc::rt::bf16ToFloat(h); }

// bf16 results (f32 accumulation, one rounding): cuBLASLt's C and D in
// bf16 against the CPU's trc_rt_matmul_bf16_bf16, within a bf16 step.
TEST_F(CudaTest, CublasLtBf16ResultsRoundTheF32Product) {
  for (const MatmulCase &c : matmulCases()) {
    std::string error;
    double rel = compareMatmul<uint16_t, uint16_t>(*backend, c,
                                                   &trc_rt_cublaslt_matmul_bf16_bf16,
                                                   &trc_rt_matmul_bf16_bf16, &floatToBf16,
                                                   error, &bf16Value);
    EXPECT_LE(rel, 1e-2) << describe(c) << (error.empty() ? "" : ": " + error);
  }
}

TEST_F(CudaTest, CublasLtTf32IsOptIn) {
  // With TRC_ALLOW_TF32=1 f32 products may round inputs to TF32 (10-bit
  // mantissa): still close, within 1e-2.
  ScopedEnvironment env;
  env.set("TRC_ALLOW_TF32", "1");
  TRC_ASSERT_OK_AND_ASSIGN(backend, CudaBackend::create());
  MatmulCase c{2, 64, 64, 128, false, true};
  std::string error;
  double rel = compareMatmul<float, float>(*backend, c, &trc_rt_cublaslt_matmul_f32,
                                           &trc_rt_matmul_f32, &identity, error);
  EXPECT_LE(rel, 1e-2) << error;
}

TEST_F(CudaTest, CublasLtRefusesOverlappingRows) {
  DeviceBuffer buf;
  ASSERT_TRUE(buf.allocate(*backend, 4096));
  float *p = static_cast<float *>(buf.get());
  gStep = [&](void **, void *) {
    // lda 2 < k 4 with 3 rows: rows overlap, which cuBLASLt cannot express.
    trc_rt_cublaslt_matmul_f32(1, 3, 4, 4, p, 2, 0, 0, p, 4, 0, 0, p + 512, 4, 0);
  };
  Status s = backend->run(&stepEntry, nullptr, nullptr);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("trc_rt_cublaslt_matmul_f32: f32 matmul (batch 1, m 3, n 4, k 4"))
      << s.message();
  EXPECT_THAT(s.message(), HasSubstr("leading dimension of A (2)")) << s.message();
}

// --- CUDA graphs ----------------------------------------------------------------

namespace {
// A step of the shape a compiled program has: a matmul and two kernels,
// temporaries in the arena. Slots: 0 x [m,k], 1 w [k,n], 2 bias [n],
// 3 out [m,n]: t = x w (arena), u = t + bias (arena), out = u + t.
constexpr uint32_t kM = 64, kK = 48, kN = 32;
void graphStep(void **slots, void *arena) {
  float *t = static_cast<float *>(arena);
  float *u = t + kM * kN;
  trc_rt_cublaslt_matmul_f32(1, kM, kN, kK, static_cast<const float *>(slots[0]), kK, 0, 0,
                             static_cast<const float *>(slots[1]), kN, 0, 0, t, kN, 0);
  void *tp = t, *bp = slots[2], *up = u;
  uint32_t cols = kN, n = kM * kN;
  void *bias[5] = {&tp, &bp, &up, &cols, &n};
  trc_rt_cuda_launch(1, (n + 255) / 256, 1, 1, 256, 1, 1, 0, bias, 5);
  launchAxpy(u, t, slots[3], 1.0f, n);
}
std::vector<float> graphStepOnCpu(const std::vector<float> &x, const std::vector<float> &w,
                                  const std::vector<float> &bias) {
  std::vector<float> t(kM * kN), out(kM * kN);
  trc_rt_matmul_f32(1, kM, kN, kK, x.data(), kK, 0, 0, w.data(), kN, 0, 0, t.data(), kN, 0);
  for (uint32_t i = 0; i < kM * kN; ++i)
    out[i] = (t[i] + bias[i % kN]) + t[i];
  return out;
}
double maxRelDiff(const std::vector<float> &a, const std::vector<float> &b) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    ref = std::max(ref, std::fabs(double(b[i])));
  }
  return diff / std::max(ref, 1e-30);
}
} // namespace

TEST_F(CudaTest, GraphReplayMatchesPlainRuns) {
  ScopedEnvironment env;
  env.unset("TRC_CUDA_GRAPHS");
  TRC_ASSERT_OK_AND_ASSIGN(backend, CudaBackend::create());
  ASSERT_TRUE(backend->graphsEnabled()) << backend->graphNote();
  RegisteredProgram reg(&programEntryA, ptxProgram(4));
  gStep = graphStep;
  std::vector<float> x = randomFloats(kM * kK, 21), w = randomFloats(kK * kN, 22),
                     bias = randomFloats(kN, 23);
  DeviceBuffer dx = upload(x), dw = upload(w), db = upload(bias), dout, arena;
  ASSERT_TRUE(dout.allocate(*backend, kM * kN * 4));
  ASSERT_TRUE(arena.allocate(*backend, 2 * kM * kN * 4));
  void *slots[4] = {dx.get(), dw.get(), db.get(), dout.get()};

  // Run 1 is plain, run 2 captures and launches the graph, run 3 replays.
  std::vector<std::vector<float>> results;
  for (int run = 0; run < 3; ++run) {
    ASSERT_TRUE(backend->copyToDevice(dout.get(), std::vector<float>(kM * kN, -7).data(),
                                      kM * kN * 4));
    Status s = backend->run(&programEntryA, slots, arena.get());
    ASSERT_TRUE(s) << "run " << run << ": " << s.message();
    results.push_back(download<float>(dout, kM * kN));
  }
  EXPECT_EQ(backend->graphCaptures(), 1u) << backend->graphNote();
  EXPECT_EQ(backend->graphReplays(), 2u) << backend->graphNote();
  EXPECT_EQ(results[1], results[0]) << "the captured run differs from the plain run";
  EXPECT_EQ(results[2], results[0]) << "the replay differs from the plain run";
  EXPECT_LE(maxRelDiff(results[0], graphStepOnCpu(x, w, bias)), 1e-4);

  // Replays read the buffers' current contents.
  std::vector<float> x2 = randomFloats(kM * kK, 24);
  ASSERT_TRUE(backend->copyToDevice(dx.get(), x2.data(), x2.size() * 4));
  ASSERT_TRUE(backend->run(&programEntryA, slots, arena.get()));
  EXPECT_EQ(backend->graphReplays(), 3u);
  std::vector<float> replayed = download<float>(dout, kM * kN);
  EXPECT_LE(maxRelDiff(replayed, graphStepOnCpu(x2, w, bias)), 1e-4);

  // New pointers: a plain run, then a new capture.
  DeviceBuffer dout2;
  ASSERT_TRUE(dout2.allocate(*backend, kM * kN * 4));
  slots[3] = dout2.get();
  ASSERT_TRUE(backend->run(&programEntryA, slots, arena.get()));
  EXPECT_EQ(backend->graphReplays(), 3u) << "a replay with stale pointers";
  EXPECT_EQ(download<float>(dout2, kM * kN), replayed);
  ASSERT_TRUE(backend->run(&programEntryA, slots, arena.get()));
  EXPECT_EQ(backend->graphCaptures(), 2u);
  EXPECT_EQ(download<float>(dout2, kM * kN), replayed);

  // The same results with graphs off.
  env.set("TRC_CUDA_GRAPHS", "0");
  std::unique_ptr<CudaBackend> plain;
  TRC_ASSERT_OK_AND_ASSIGN(plain, CudaBackend::create());
  EXPECT_FALSE(plain->graphsEnabled());
  EXPECT_THAT(plain->graphNote(), HasSubstr("TRC_CUDA_GRAPHS=0"));
  for (int run = 0; run < 3; ++run)
    ASSERT_TRUE(plain->run(&programEntryA, slots, arena.get()));
  EXPECT_EQ(plain->graphCaptures(), 0u);
  EXPECT_EQ(plain->graphReplays(), 0u);
  std::vector<float> fromPlain(kM * kN);
  ASSERT_TRUE(plain->copyToHost(fromPlain.data(), dout2.get(), kM * kN * 4));
  EXPECT_EQ(fromPlain, replayed);
}

// --- offloading's copy engine ----------------------------------------------

namespace {
// The fake driver's trace of its event and copy calls (FakeCudaDriver.cpp),
// or null on a real driver.
using TraceFn = const char *(*)();
using ClearFn = void (*)();
void *fakeDriver() { return ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); }

void offloadStep(void **slots, void *) {
  auto at = [](void *p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); };
  // slots[0] -> host arena offset 0 -> slots[1], 1 KiB.
  trc_rt_offload_start(0, trc::abi::kOffloadToHost, 1024, at(slots[0]), 0);
  trc_rt_offload_wait(0, at(slots[0]), 0);
  trc_rt_offload_start(1, trc::abi::kOffloadToDevice, 1024, at(slots[1]), 0);
  trc_rt_offload_wait(1, at(slots[1]), 0);
}
} // namespace

// Copies run on a copy stream of their own: each start records an event on
// the step's stream that the copy stream waits for, copies, and records an
// event the step's stream waits for at the wait; the host arena is
// page-locked. Plain runs, a captured graph and its replays move the data
// alike (the capture forks into the copy stream and joins back).
TEST_F(CudaTest, OffloadCopiesRunOnACopyStreamOrderedByEvents) {
  ScopedEnvironment env;
  env.unset("TRC_CUDA_GRAPHS");
  TRC_ASSERT_OK_AND_ASSIGN(backend, CudaBackend::create());
  HostBuffer host;
  ASSERT_TRUE(host.allocate(*backend, 4096));
  TRC_ASSERT_OK_AND_ASSIGN(CopyEngine * engine, backend->copyEngine());
  RegisteredProgram reg(&programEntryB, ptxProgram(2));
  gStep = offloadStep;
  DeviceBuffer x, y;
  ASSERT_TRUE(x.allocate(*backend, 1024));
  ASSERT_TRUE(y.allocate(*backend, 1024));
  void *slots[2] = {x.get(), y.get()};
  void *fake = fakeDriver();
  auto trace = fake ? reinterpret_cast<TraceFn>(::dlsym(fake, "trc_fake_cuda_trace")) : nullptr;
  auto clear = fake ? reinterpret_cast<ClearFn>(::dlsym(fake, "trc_fake_cuda_trace_clear"))
                    : nullptr;
  std::string firstRun;
  for (int run = 0; run < 4; ++run) {
    std::vector<float> values = randomFloats(256, uint32_t(40 + run));
    ASSERT_TRUE(backend->copyToDevice(x.get(), values.data(), 1024));
    if (clear)
      clear();
    {
      OffloadScope scope(*engine, host.get(), 4096);
      Status s = backend->run(&programEntryB, slots, nullptr);
      ASSERT_TRUE(s) << "run " << run << ": " << s.message();
    }
    Status copies = takeOffloadError();
    ASSERT_TRUE(copies) << copies.message();
    if (trace && run == 0)
      firstRun = trace();
    EXPECT_EQ(download<float>(y, 256), values) << "run " << run;
  }
  EXPECT_EQ(backend->graphCaptures(), 1u) << backend->graphNote();
  EXPECT_EQ(backend->graphReplays(), 3u) << backend->graphNote();
  if (!trace)
    return;
  // e: events, c: the step's stream, k: the copy stream.
  std::regex order(
      "record e([0-9]+) on s([0-9]+)\n"
      "s([0-9]+) waits e\\1\n"
      "s\\3 dtoh 1024\n"
      "record e([0-9]+) on s\\3\n"
      "s\\2 waits e\\4\n"
      "record e([0-9]+) on s\\2\n"
      "s\\3 waits e\\5\n"
      "s\\3 htod 1024\n"
      "record e([0-9]+) on s\\3\n"
      "s\\2 waits e\\6\n");
  EXPECT_TRUE(std::regex_match(firstRun, order)) << firstRun;
}

// Started collectives (trc-collectives-to-runtime-call{overlap}) over NCCL
// (the one-rank fake, FakeNccl.cpp): the communicator's stream waits for the
// step's stream's work so far, the all-reduce is enqueued there, and only
// the finish, after the kernel launched in between (the rest of a
// backward), makes the step's stream wait; the host waits for neither.
TEST_F(CudaTest, StartedCollectivesOverlapOnTheCommunicatorsStream) {
  void *fake = fakeDriver();
  auto trace = fake ? reinterpret_cast<TraceFn>(::dlsym(fake, "trc_fake_cuda_trace")) : nullptr;
  auto clear = fake ? reinterpret_cast<ClearFn>(::dlsym(fake, "trc_fake_cuda_trace_clear"))
                    : nullptr;
  if (!trace || !clear)
    GTEST_SKIP() << "needs the fake driver's trace and the one-rank fake NCCL";
  ScopedEnvironment env;
  env.set("TRC_NCCL_LIBRARY", TRC_TEST_FAKE_NCCL);
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Communicator> nccl, createCommunicator("nccl"));
  setCollectiveGroups(nccl.get(), nullptr, nullptr, nullptr);
  setCollectiveBackend(backend.get());
  RegisteredProgram reg(&programEntryB, ptxProgram(4));
  const uint32_t n = 256;
  gStep = [&](void **slots, void *) {
    auto at = [](void *p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); };
    trc_rt_all_reduce_start(trc::abi::kGroupWorld, trc::abi::kF32, trc::abi::kReduceSum, n,
                            at(slots[0]), at(slots[1]), 3);
    launchAxpy(slots[2], slots[2], slots[3], 2.0f, n);
    trc_rt_collective_finish(3, at(slots[0]), at(slots[1]));
  };
  std::vector<float> gradients = randomFloats(n, 7), other = randomFloats(n, 8);
  DeviceBuffer g = upload(gradients), sum = upload(std::vector<float>(n, 0.0f));
  DeviceBuffer w = upload(other), z = upload(std::vector<float>(n, 0.0f));
  void *slots[4] = {g.get(), sum.get(), w.get(), z.get()};
  clear();
  Status s = backend->run(&programEntryB, slots, nullptr);
  std::string order = trace();
  Status collective = takeCollectiveError();
  setCollectiveBackend(nullptr); // first: the communicator forgets the stream
  setCollectiveGroups(nullptr, nullptr, nullptr, nullptr);
  ASSERT_TRUE(s) << s.message();
  ASSERT_TRUE(collective) << collective.message();
  EXPECT_EQ(download<float>(sum, n), gradients); // one rank's sum
  std::vector<float> expected(n);
  for (uint32_t i = 0; i < n; ++i)
    expected[i] = 2.0f * other[i] + other[i];
  EXPECT_EQ(download<float>(z, n), expected);
  // c: the step's stream, k: the communicator's.
  std::regex overlap("(?:[^\n]*\n)*?"
                     "record e([0-9]+) on s([0-9]+)\n"
                     "s([0-9]+) waits e\\1\n"
                     "nccl allReduce on s\\3\n"
                     "record e([0-9]+) on s\\3\n"
                     "launch trc_test_axpy on s\\2\n"
                     "s\\2 waits e\\4\n(?:[^\n]*\n)*");
  EXPECT_TRUE(std::regex_match(order, overlap)) << order;
}

// A step that starts a copy and never waits for it fails, naming the copy.
TEST_F(CudaTest, AnUnwaitedOffloadFailsTheStep) {
  HostBuffer host;
  ASSERT_TRUE(host.allocate(*backend, 1024));
  TRC_ASSERT_OK_AND_ASSIGN(CopyEngine * engine, backend->copyEngine());
  DeviceBuffer x;
  ASSERT_TRUE(x.allocate(*backend, 1024));
  void *slots[1] = {x.get()};
  gStep = [](void **slots, void *) {
    trc_rt_offload_start(0, trc::abi::kOffloadToHost, 1024,
                         static_cast<int64_t>(reinterpret_cast<intptr_t>(slots[0])), 0);
  };
  {
    OffloadScope scope(*engine, host.get(), 1024);
    ASSERT_TRUE(backend->run(&stepEntry, slots, nullptr));
  }
  Status s = takeOffloadError();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("copy 0 was never waited for"));
}

TEST_F(CudaTest, AStepThatCannotBeCapturedRunsPlainly) {
  // The step copies from the host itself: a capture cannot hold that (the
  // copy waits for the stream, which a capture forbids), so the second run's
  // capture fails, graphs turn off and every run is plain and right.
  ScopedEnvironment env;
  env.unset("TRC_CUDA_GRAPHS");
  TRC_ASSERT_OK_AND_ASSIGN(backend, CudaBackend::create());
  RegisteredProgram reg(&programEntryA, ptxProgram(3));
  const uint32_t n = 256;
  std::vector<float> x = randomFloats(n, 31);
  std::vector<float> y(n);
  DeviceBuffer dx = upload(x), dy, dz;
  ASSERT_TRUE(dy.allocate(*backend, n * 4));
  ASSERT_TRUE(dz.allocate(*backend, n * 4));
  float step = 0;
  gStep = [&](void **slots, void *) {
    for (uint32_t i = 0; i < n; ++i)
      y[i] = step + float(i);
    (void)backend->copyToDevice(slots[1], y.data(), n * 4);
    launchAxpy(slots[0], slots[1], slots[2], 2.0f, n);
  };
  void *slots[3] = {dx.get(), dy.get(), dz.get()};
  for (int run = 0; run < 3; ++run) {
    step = float(run * 1000);
    Status s = backend->run(&programEntryA, slots, nullptr);
    ASSERT_TRUE(s) << "run " << run << ": " << s.message();
    std::vector<float> z = download<float>(dz, n);
    for (uint32_t i = 0; i < n; ++i)
      ASSERT_EQ(z[i], std::fma(2.0f, x[i], step + float(i))) << "run " << run << ", " << i;
  }
  EXPECT_FALSE(backend->graphsEnabled());
  EXPECT_THAT(backend->graphNote(), HasSubstr("the step could not be captured"))
      << backend->graphNote();
  EXPECT_EQ(backend->graphCaptures(), 0u);
  EXPECT_EQ(backend->graphReplays(), 0u);
}

TEST_F(CudaTest, BadGraphSwitchIsAnError) {
  ScopedEnvironment env;
  env.set("TRC_CUDA_GRAPHS", "yes");
  Status s = CudaBackend::create().status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("TRC_CUDA_GRAPHS must be 0 or 1, got 'yes'")) << s.message();
  env.set("TRC_CUDA_GRAPHS", "1");
  env.set("TRC_CUDA_DEVICE", "999");
  s = CudaBackend::create().status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("TRC_CUDA_DEVICE='999' is not a device ordinal"))
      << s.message();
  env.set("TRC_CUDA_DEVICE", "0");
  EXPECT_TRUE(CudaBackend::create().ok());
}

TEST_F(CudaTest, MultiProcessRunsWaitForEachCallAndSkipGraphs) {
  ScopedEnvironment env;
  env.set("OMPI_COMM_WORLD_RANK", "0");
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  std::unique_ptr<CudaBackend> b;
  TRC_ASSERT_OK_AND_ASSIGN(b, CudaBackend::create());
  EXPECT_TRUE(b->synchronousCalls());
  EXPECT_FALSE(b->graphsEnabled());
  EXPECT_THAT(b->graphNote(), HasSubstr("multi-process")) << b->graphNote();
}

// --- end to end: Artifact + Session + createBackend ------------------------------

TEST(CudaEndToEnd, TheCudaTestArtifactRunsThroughASession) {
  REQUIRE_CUDA_DEVICE();
  TempDir dir;
  writeTestCudaArtifact(dir.path());
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend, createBackend("cuda"));
  EXPECT_EQ(std::string(backend->target()), "cuda");
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> automatic, createBackend("auto"));
  EXPECT_EQ(std::string(automatic->target()), "cuda") << "auto picks the GPU when present";

  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Artifact> artifact, Artifact::load(dir.path(), "cuda"));
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, Session::create(*artifact, *backend));

  for (int step = 0; step < 4; ++step) {
    std::vector<float> x = randomFloats(12, 100 + uint32_t(step)),
                       x2 = randomFloats(12, 200 + uint32_t(step));
    HostTensor hx, hx2;
    ASSERT_TRUE(hx.allocate(DType::F32, {4, 3}));
    ASSERT_TRUE(hx2.allocate(DType::F32, {4, 3}));
    std::memcpy(hx.data(), x.data(), 48);
    std::memcpy(hx2.data(), x2.data(), 48);
    ASSERT_TRUE(session->setInput("x", hx));
    ASSERT_TRUE(session->setInput("in/two", hx2));
    Status s = session->run();
    ASSERT_TRUE(s) << "step " << step << ": " << s.message();
    TRC_ASSERT_OK_AND_ASSIGN(HostTensor y, session->getOutput("y"));
    TRC_ASSERT_OK_AND_ASSIGN(HostTensor sum, session->getOutput("out/sum"));
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 2; ++j) {
        float want = kB[j];
        for (int p = 0; p < 3; ++p)
          want += x[size_t(i * 3 + p)] * kW[p * 2 + j];
        EXPECT_NEAR(y.as<float>()[i * 2 + j], want, 1e-5) << "step " << step;
      }
    for (int i = 0; i < 12; ++i)
      EXPECT_EQ(sum.as<float>()[i], x[size_t(i)] + x2[size_t(i)]) << "step " << step;
  }
  auto *cuda = static_cast<CudaBackend *>(backend.get());
  EXPECT_EQ(cuda->graphCaptures(), 1u) << cuda->graphNote();
  EXPECT_EQ(cuda->graphReplays(), 3u) << cuda->graphNote();
  ASSERT_NE(cuda->loadedImage(*artifact->cudaProgram()), nullptr);
}
