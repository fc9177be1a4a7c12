//===- InitializedParamsTest.cpp - sessions make `init` params -------------===//
//
// A Session makes a parameter the manifest gives by an `init` record
// (formats/Initializer.h): whole, sharded, split over tensor ranks, in host
// chunks, and in device memory on the CUDA backend.
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Session.h"
#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/formats/Initializer.h"
#include "runtime/support/HalfFloat.h"

#include "InitializerTesting.h"
#include "StatusTesting.h"
#include "TestCudaArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using ::testing::HasSubstr;
using namespace trc::rt;
using namespace trc::rt::test;

namespace {

// The test artifact with W ([3, 2], or a shard record) made by `init`.
std::unique_ptr<Artifact> initializedArtifact(const TempDir &dir, const std::string &slotW,
                                              const std::string &initW) {
  std::string error;
  if (!writeTestArtifactWithW(dir.path(), slotW + initW, error)) {
    ADD_FAILURE() << error;
    return nullptr;
  }
  StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::load(dir.path(), "cpu");
  EXPECT_TRUE(artifact.ok()) << artifact.status().message();
  return artifact.ok() ? *std::move(artifact) : nullptr;
}

} // namespace

TEST(Initializer, SessionMakesInitializedParams) {
  TempDir dir;
  auto artifact = initializedArtifact(dir, "slot 1 param W f32 2 3 2 - trainable\n",
                                      "init 1 normal 0.25 0.02 1234567\n");
  ASSERT_TRUE(artifact);
  CpuBackend cpu;
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, Session::create(*artifact, cpu));
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor w, session->getParam("W"));
  std::vector<float> want = fillF32(kNormal, 0, 6);
  EXPECT_EQ(std::memcmp(w.data(), want.data(), 24), 0);
  // The other param still comes from weights.bin.
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor b, session->getParam("b"));
  EXPECT_EQ(b.as<float>()[0], kB[0]);
  EXPECT_EQ(b.as<float>()[1], kB[1]);
}

// A sharded initialized param: rank r makes elements [r*c, (r+1)*c) of the
// full tensor, zero past its end, so the shards together are the unsharded
// tensor.
TEST(Initializer, EachShardMakesItsChunkOfTheFullTensor) {
  TempDir dir;
  auto artifact = initializedArtifact(dir, "slot 1 param W f32 1 2 - trainable\nshard 1 4 2 3 2\n",
                                      "init 1 uniform -0.125 0.25 99\n");
  ASSERT_TRUE(artifact);
  CpuBackend cpu;
  std::vector<float> full = fillF32(kUniform, 0, 6);
  full.resize(8, 0.0f);
  for (int rank = 0; rank < 4; ++rank) {
    TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                             Session::create(*artifact, cpu, rank));
    TRC_ASSERT_OK_AND_ASSIGN(HostTensor w, session->getParam("W"));
    EXPECT_EQ(w.as<float>()[0], full[size_t(2 * rank)]) << rank;
    EXPECT_EQ(w.as<float>()[1], full[size_t(2 * rank + 1)]) << rank;
  }
  Status s = Session::create(*artifact, cpu, 4).status();
  EXPECT_THAT(s.message(), HasSubstr("sharded over 4 ranks; rank 4 of its group has no shard"))
      << s.message();
}

// A split initialized param makes its tensor rank's part of the logical
// tensor, element by logical index, so the parts together are the unsplit
// tensor; also sharded, each shard makes its chunk of that part.
TEST(Initializer, EachTensorRankMakesItsPartOfTheLogicalTensor) {
  TempDir dir;
  auto artifact = initializedArtifact(
      dir, "slot 1 param W f32 2 3 1 - trainable\nsplit 1 1 1 2 2 3 2\n",
      "init 1 uniform -0.125 0.25 99\n");
  ASSERT_TRUE(artifact);
  CpuBackend cpu;
  std::vector<float> full = fillF32(kUniform, 0, 6); // logical [3, 2]
  for (int t = 0; t < 2; ++t) {
    TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                             Session::create(*artifact, cpu, 0, t));
    TRC_ASSERT_OK_AND_ASSIGN(HostTensor w, session->getParam("W"));
    ASSERT_EQ(w.shape, (std::vector<int64_t>{3, 1}));
    for (int row = 0; row < 3; ++row)
      EXPECT_EQ(w.as<float>()[row], full[size_t(2 * row + t)]) << "tensor rank " << t;
  }
  TempDir sharded;
  artifact = initializedArtifact(
      sharded, "slot 1 param W f32 1 2 - trainable\nsplit 1 1 1 2 2 3 2\nshard 1 2 2 3 1\n",
      "init 1 uniform -0.125 0.25 99\n");
  ASSERT_TRUE(artifact);
  for (int t = 0; t < 2; ++t)
    for (int shard = 0; shard < 2; ++shard) {
      TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                               Session::create(*artifact, cpu, shard, t));
      TRC_ASSERT_OK_AND_ASSIGN(HostTensor w, session->getParam("W"));
      // The part is rows {t, 2 + t, 4 + t} of the logical tensor.
      float part[4] = {full[size_t(t)], full[size_t(2 + t)], full[size_t(4 + t)], 0};
      EXPECT_EQ(w.as<float>()[0], part[2 * shard]) << t << " " << shard;
      EXPECT_EQ(w.as<float>()[1], part[2 * shard + 1]) << t << " " << shard;
    }
}

// A tensor larger than the session's host chunk (4 Mi elements) comes out
// the same as one fill of the whole.
TEST(Initializer, SessionChunksALargeParam) {
  TempDir dir;
  auto artifact = initializedArtifact(
      dir, "slot 1 param W f32 1 4194305 - trainable\nshard 1 2 2 4194305 2\n",
      "init 1 normal 0.25 0.02 1234567\n");
  ASSERT_TRUE(artifact);
  CpuBackend cpu;
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, Session::create(*artifact, cpu, 1));
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor w, session->getParam("W"));
  // Rank 1 of 2 holds elements [4194305, 8388610) of 8388610.
  std::vector<float> want = fillF32(kNormal, 4194305, 4194305);
  ASSERT_EQ(w.numElements(), 4194305);
  EXPECT_EQ(std::memcmp(w.data(), want.data(), want.size() * 4), 0);
}

// On the CUDA backend (a GPU, or the CPU stand-in of ctest
// trc-artifact-tests-fake-cuda) an initialized param is made on the host and
// copied to device memory: the step computes with it and reads it back.
TEST(CudaInitializer, SessionMakesParamsInDeviceMemory) {
  REQUIRE_CUDA_DEVICE();
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Backend> backend, createBackend("cuda"));
  TempDir dir;
  writeTestCudaArtifact(dir.path());
  std::string manifest = readFile(dir.file("manifest.trc"));
  std::string from = "slot 1 param W f32 2 3 2 0 trainable\n";
  size_t at = manifest.find(from);
  ASSERT_NE(at, std::string::npos);
  manifest.replace(at, from.size(),
                   "slot 1 param W f32 2 3 2 - trainable\ninit 1 normal 0.25 0.02 1234567\n");
  writeFile(dir.file("manifest.trc"), manifest);
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Artifact> artifact,
                           Artifact::load(dir.path(), "cuda"));
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                           Session::create(*artifact, *backend));
  std::vector<float> w = fillF32(kNormal, 0, 6);
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor got, session->getParam("W"));
  EXPECT_EQ(std::memcmp(got.data(), w.data(), 24), 0);
  HostTensor x, two;
  ASSERT_TRUE(x.allocate(DType::F32, {4, 3}));
  ASSERT_TRUE(two.allocate(DType::F32, {4, 3}));
  for (int i = 0; i < 12; ++i) {
    x.as<float>()[i] = float(i) - 5.5f;
    two.as<float>()[i] = 1.0f;
  }
  ASSERT_TRUE(session->setInput("x", x));
  ASSERT_TRUE(session->setInput("in/two", two));
  Status s = session->run();
  ASSERT_TRUE(s) << s.message();
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor y, session->getOutput("y"));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      float want = kB[j];
      for (int p = 0; p < 3; ++p)
        want += x.as<float>()[i * 3 + p] * w[size_t(p * 2 + j)];
      EXPECT_NEAR(y.as<float>()[i * 2 + j], want, 1e-5) << i << "," << j;
    }
}
