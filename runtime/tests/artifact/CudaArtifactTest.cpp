//===- CudaArtifactTest.cpp - loading `target cuda` artifacts (no GPU) ------===//
//
// A cuda artifact (TestCudaProgram.c as its host program, the PTX of
// TestCudaArtifact.h as its kernels) loads without a GPU: the kernel files
// are read and their sizes and hashes checked, the kernel table and images
// are registered under the entry point for the CUDA backend while the
// Artifact lives. Broken kernel files are reported with the file and the
// problem; a CPU runtime refuses the artifact; a single-file artifact
// (bundle version 2) carries the kernel files. The host program's imports (trc_rt_cuda_launch,
// trc_rt_cublaslt_matmul_f32) resolve against this executable.
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Artifact.h"
#include "runtime/formats/Bundle.h"
#include "runtime/backends/cuda/CudaBackend.h"
#include "runtime/backends/cuda/CudaProgram.h"

#include "StatusTesting.h"
#include "TestCudaArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace trc::rt;
using namespace trc::rt::test;

namespace {

std::string loadError(const std::string &dir, const std::string &target = "cuda") {
  return errorOf(Artifact::load(dir, target));
}

} // namespace

TEST(CudaArtifact, LoadsAndRegistersItsKernels) {
  TempDir dir;
  writeTestCudaArtifact(dir.path());
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Artifact> a, Artifact::load(dir.path(), "cuda"));
  ASSERT_NE(a->cudaProgram(), nullptr);
  const CudaProgram &p = *a->cudaProgram();
  EXPECT_EQ(p.kernels, (std::vector<std::string>{"trc_test_axpy", "trc_test_bias"}));
  ASSERT_EQ(p.images.size(), 1u);
  EXPECT_TRUE(p.images[0].ptx);
  EXPECT_EQ(p.images[0].chip, "sm_50");
  EXPECT_EQ(p.images[0].major, 5);
  EXPECT_EQ(p.images[0].file, dir.file("kernels.sm_50.ptx"));
  EXPECT_EQ(p.images[0].bytes, std::string(kTestPtx));
  EXPECT_EQ(p.numSlots, 6u);
  EXPECT_EQ(p.origin, dir.path());
  EXPECT_EQ(findCudaProgram(a->entry()), a->cudaProgram());
  EntryFn entry = a->entry();
  uint64_t id = p.id;
  a.reset();
  EXPECT_FALSE(isCudaProgramRegistered(id));
  EXPECT_EQ(findCudaProgram(entry), nullptr);
}

TEST(CudaArtifact, EveryKernelFileIsChecked) {
  TempDir dir;
  CudaArtifactOptions opt;
  std::string cubin80(3000, '\x7f'), cubin90(4000, '\x42');
  opt.extraFiles = {{"cubin sm_80", {"kernels.sm_80.cubin", cubin80}},
                    {"cubin sm_90", {"kernels.sm_90.cubin", cubin90}}};
  writeTestCudaArtifact(dir.path(), opt);
  {
    TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Artifact> a, Artifact::load(dir.path(), "cuda"));
    ASSERT_EQ(a->cudaProgram()->images.size(), 3u);
    EXPECT_EQ(a->cudaProgram()->images[1].bytes, cubin80);
    EXPECT_FALSE(a->cudaProgram()->images[2].ptx);
    EXPECT_EQ(a->cudaProgram()->images[2].major, 9);
  }
  std::string path = dir.file("kernels.sm_90.cubin");
  // One flipped byte.
  std::string flipped = cubin90;
  flipped[1234] ^= 1;
  writeFile(path, flipped);
  EXPECT_THAT(loadError(dir.path()), HasSubstr(path + ": checksum mismatch: xxh3 is "));
  // Truncated, grown.
  writeFile(path, cubin90.substr(0, 100));
  EXPECT_THAT(
      loadError(dir.path()),
      HasSubstr(path + ": size is 100 bytes, the manifest says 4000 (truncated or corrupt"));
  writeFile(path, cubin90 + "x");
  EXPECT_THAT(loadError(dir.path()), HasSubstr(path + ": size is 4001 bytes"));
  // Missing, or not a file.
  std::filesystem::remove(path);
  EXPECT_THAT(loadError(dir.path()), HasSubstr(path + ": cannot open: No such file or directory"));
  std::filesystem::create_directory(path);
  EXPECT_THAT(loadError(dir.path()), HasSubstr(path + ": not a regular file"));
  std::filesystem::remove(path);
  writeFile(path, cubin90);
  EXPECT_EQ(loadError(dir.path()), "");
  // The PTX too.
  std::string ptx = dir.file("kernels.sm_50.ptx");
  writeFile(ptx, std::string(kTestPtx) + "\n");
  EXPECT_THAT(loadError(dir.path()), HasSubstr(ptx + ": size is "));

  // A manifest written before XXH3 (bare hex, FNV-1a 64) loads, and its
  // kernel files are still checked.
  opt.checksums = ChecksumKind::Fnv1a64;
  writeTestCudaArtifact(dir.path(), opt);
  EXPECT_EQ(loadError(dir.path()), "");
  writeFile(path, flipped);
  EXPECT_THAT(loadError(dir.path()), HasSubstr(path + ": checksum mismatch: fnv1a64 is "));
}

TEST(CudaArtifact, ManifestErrorsNameTheFileAndLine) {
  TempDir dir;
  CudaArtifactOptions opt;
  opt.kernels = {"trc_test_axpy", "bad.name"};
  writeTestCudaArtifact(dir.path(), opt);
  EXPECT_THAT(loadError(dir.path()),
              HasSubstr(dir.file("manifest.trc") + ": line 9: kernel name: 'bad.name' is not a "
                                                   "kernel symbol"));
}

TEST(CudaArtifact, TargetsMustMatch) {
  TempDir dir;
  writeTestCudaArtifact(dir.path());
  EXPECT_EQ(loadError(dir.path(), "cpu"),
            "artifact " + dir.path() + " was built for target cuda, not cpu");
  TempDir cpu;
  writeTestArtifact(cpu.path());
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Artifact> a, Artifact::load(cpu.path(), "cpu"));
  EXPECT_EQ(a->cudaProgram(), nullptr) << "a CPU artifact has no kernels";
}

TEST(CudaArtifact, NoKernelsStillRegistersTheProgram) {
  // A step of library calls only: no kernel files, an empty kernel table.
  TempDir dir;
  CudaArtifactOptions opt;
  opt.withPtx = false;
  opt.kernels.clear();
  writeTestCudaArtifact(dir.path(), opt);
  std::string error;
  ASSERT_TRUE(compileTestProgramFor(dir.path(), error, TRC_TEST_CUDA_PROGRAM_SOURCE)) << error;
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Artifact> a, Artifact::load(dir.path(), "cuda"));
  ASSERT_NE(a->cudaProgram(), nullptr);
  EXPECT_TRUE(a->cudaProgram()->kernels.empty());
  EXPECT_TRUE(a->cudaProgram()->images.empty());
  EXPECT_EQ(findCudaProgram(a->entry()), a->cudaProgram());
}

TEST(CudaArtifact, SingleFileArtifactsCarryTheirKernels) {
  TempDir dir;
  TempDir out;
  CudaArtifactOptions opt;
  std::string cubin90(4000, '\x42');
  opt.extraFiles = {{"cubin sm_90", {"kernels.sm_90.cubin", cubin90}}};
  writeTestCudaArtifact(dir.path(), opt);
  std::string bundle = out.file("art.trc");
  ASSERT_TRUE(packBundle(dir.path(), bundle));
  std::string bytes = readFile(bundle);
  EXPECT_THAT(bytes, StartsWith("trc-bundle 2\nmanifest.trc ")) << bytes.substr(0, 200);
  {
    TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Artifact> a, Artifact::load(bundle, "cuda"));
    ASSERT_NE(a->cudaProgram(), nullptr);
    const CudaProgram &p = *a->cudaProgram();
    EXPECT_EQ(p.kernels, (std::vector<std::string>{"trc_test_axpy", "trc_test_bias"}));
    ASSERT_EQ(p.images.size(), 2u);
    EXPECT_EQ(p.images[0].bytes, std::string(kTestPtx));
    EXPECT_EQ(p.images[1].bytes, cubin90);
    EXPECT_EQ(p.origin, bundle);
    TRC_ASSERT_OK_AND_ASSIGN(std::string manifest, readBundleManifest(bundle));
    EXPECT_THAT(manifest, HasSubstr("target cuda"));
  }
  // Without kernel files: a version 1 bundle (three members), which loads.
  TempDir plain;
  CudaArtifactOptions noKernels;
  noKernels.withPtx = false;
  noKernels.kernels.clear();
  writeTestCudaArtifact(plain.path(), noKernels);
  std::string error;
  ASSERT_TRUE(compileTestProgramFor(plain.path(), error, TRC_TEST_CUDA_PROGRAM_SOURCE)) << error;
  std::string plainBundle = out.file("plain.trc");
  ASSERT_TRUE(packBundle(plain.path(), plainBundle));
  EXPECT_THAT(readFile(plainBundle), StartsWith("trc-bundle 1\n"));
  EXPECT_EQ(loadError(plainBundle), "");
  // A version 1 bundle holds three members; extra members are kernel files.
  std::string v1 = out.file("v1.trc");
  writeFile(v1, "trc-bundle 1" + bytes.substr(12));
  EXPECT_EQ(loadError(v1), v1 + ": not a trc artifact bundle: unexpected member "
                                "'kernels.sm_50.ptx' (a version 1 bundle has three members)");
  std::string escape = out.file("escape.trc");
  std::string renamed = bytes;
  renamed.replace(renamed.find("kernels.sm_90.cubin"), 19, "../kernels_90.cubin");
  writeFile(escape, renamed);
  EXPECT_EQ(loadError(escape),
            escape + ": not a trc artifact bundle: unexpected member '../kernels_90.cubin'");
}

TEST(CudaArtifact, TheExportTableListsTheCudaEntries) {
  const void *const *table = cudaExports();
  int count = 0;
  while (table[count])
    ++count;
  EXPECT_EQ(count, 6);
  EXPECT_EQ(table[0], reinterpret_cast<const void *>(&trc_rt_cuda_launch));
  EXPECT_EQ(table[1], reinterpret_cast<const void *>(&trc_rt_cublaslt_matmul_f32));
  EXPECT_EQ(table[5], reinterpret_cast<const void *>(&trc_rt_cublaslt_matmul_bf16_bf16));
}
