//===- SessionTest.cpp - running a real artifact ----------------------------===//
//
// The test artifact runs through Session on the CPU backend: params come
// from weights.bin, the arena holds the matmul temporary, both outputs are
// right (y = x * W + b through trc_rt_matmul_f32, s = x + in/two), inputs
// can be rebound and rerun. Binding errors: unknown input, wrong shape,
// wrong dtype, missing inputs, unknown output, outputs before a run.
// Sharded and tensor-parallel split params load this process's part.
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Session.h"
#include "runtime/artifact/Evaluation.h"

#include "runtime/backends/cpu/CpuBackend.h"

#include "StatusTesting.h"
#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace trc::rt;
using namespace trc::rt::test;

namespace {

class SessionTest : public ::testing::Test {
protected:
  void SetUp() override {
    writeTestArtifact(dir.path());
    TRC_ASSERT_OK_AND_ASSIGN(artifact, Artifact::load(dir.path(), "cpu"));
    TRC_ASSERT_OK_AND_ASSIGN(session, Session::create(*artifact, cpu));
  }

  static HostTensor tensor(DType dt, std::vector<int64_t> shape,
                           float start = 0) {
    HostTensor t;
    EXPECT_TRUE(t.allocate(dt, std::move(shape)));
    if (dt == DType::F32)
      for (int64_t i = 0; i < t.numElements(); ++i)
        t.as<float>()[i] = start + float(i);
    return t;
  }

  void checkOutputs(float xStart, float twoStart) {
    TRC_ASSERT_OK_AND_ASSIGN(HostTensor y, session->getOutput("y"));
    TRC_ASSERT_OK_AND_ASSIGN(HostTensor s, session->getOutput("out/sum"));
    EXPECT_EQ(y.dtype, DType::F32);
    EXPECT_EQ(y.shape, (std::vector<int64_t>{4, 2}));
    EXPECT_EQ(s.shape, (std::vector<int64_t>{4, 3}));
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 2; ++j) {
        float want = kB[j];
        for (int p = 0; p < 3; ++p)
          want += (xStart + float(i * 3 + p)) * kW[p * 2 + j];
        EXPECT_FLOAT_EQ(y.as<float>()[i * 2 + j], want) << i << "," << j;
      }
    }
    for (int i = 0; i < 12; ++i)
      EXPECT_FLOAT_EQ(s.as<float>()[i], xStart + twoStart + 2.0f * float(i));
  }

  TempDir dir;
  CpuBackend cpu;
  std::unique_ptr<Artifact> artifact;
  std::unique_ptr<Session> session;
};

} // namespace

TEST_F(SessionTest, RunsTheProgram) {
  ASSERT_TRUE(session->setInput("x", tensor(DType::F32, {4, 3}, 1)));
  ASSERT_TRUE(session->setInput("in/two", tensor(DType::F32, {4, 3}, 100)));
  Status s = session->run();
  ASSERT_TRUE(s) << s.message();
  checkOutputs(1, 100);
  // Rebinding one input and running again.
  ASSERT_TRUE(session->setInput("x", tensor(DType::F32, {4, 3}, -7)));
  ASSERT_TRUE(session->run());
  checkOutputs(-7, 100);
}

TEST_F(SessionTest, TwoSessionsOnOneArtifact) {
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> other, Session::create(*artifact, cpu));
  ASSERT_TRUE(other->setInput("x", tensor(DType::F32, {4, 3}, 0)));
  ASSERT_TRUE(other->setInput("in/two", tensor(DType::F32, {4, 3}, 0)));
  ASSERT_TRUE(other->run());
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor y, other->getOutput("y"));
  EXPECT_FLOAT_EQ(y.as<float>()[0], kB[0] + 0 * kW[0] + 1 * kW[2] + 2 * kW[4]);
}

TEST_F(SessionTest, RejectsUnknownInputs) {
  Status s = session->setInput("z", tensor(DType::F32, {4, 3}));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "unknown input 'z' (the artifact's inputs: 'x', 'in/two')");
  s = session->setInput("y", tensor(DType::F32, {4, 2}));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "unknown input 'y' (the artifact's inputs: 'x', 'in/two')");
  s = session->setInput("a b\n", tensor(DType::F32, {4, 3}));
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), StartsWith("unknown input 'a%20b%0A'"))
      << s.message();
}

TEST_F(SessionTest, RejectsWrongShapesAndDTypes) {
  Status s = session->setInput("x", tensor(DType::F32, {3, 4}));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "input 'x' expects f32 [4, 3], got f32 [3, 4]");
  s = session->setInput("x", tensor(DType::F64, {4, 3}));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "input 'x' expects f32 [4, 3], got f64 [4, 3]");
  s = session->setInput("x", tensor(DType::F32, {12}));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "input 'x' expects f32 [4, 3], got f32 [12]");
  s = session->setInput("x", tensor(DType::F32, {}));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "input 'x' expects f32 [4, 3], got f32 []");
}

TEST_F(SessionTest, RejectsMissingInputs) {
  Status s = session->run();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "missing inputs 'x' (expects f32 [4, 3]), 'in/two' "
                         "(expects f32 [4, 3])");
  ASSERT_TRUE(session->setInput("x", tensor(DType::F32, {4, 3})));
  s = session->run();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "missing input 'in/two' (expects f32 [4, 3])");
}

TEST_F(SessionTest, OutputsNeedARunAndAKnownName) {
  Status s = session->getOutput("y").status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "output 'y' is not available: the program has not run");
  s = session->getOutput("x").status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "unknown output 'x' (the artifact's outputs: 'y', 'out/sum')");
}

// A sharded param (manifest `shard` record) loads this rank's chunk of the
// full tensor in weights.bin; chunks past the end are zero padding.
TEST(SessionShards, EachRankLoadsItsChunk) {
  TempDir dir;
  std::string error;
  ASSERT_TRUE(writeTestArtifactWithW(dir.path(),
                                     "slot 1 param W f32 1 2 0 trainable\nshard 1 4 2 3 2\n", error))
      << error;
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Artifact> artifact,
                           Artifact::load(dir.path(), "cpu"));
  CpuBackend cpu;
  const float expected[4][2] = {{1, 2}, {3, 4}, {5, 6}, {0, 0}};
  for (int rank = 0; rank < 4; ++rank) {
    TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                             Session::create(*artifact, cpu, rank));
    TRC_ASSERT_OK_AND_ASSIGN(HostTensor w, session->getParam("W"));
    EXPECT_EQ(w.shape, (std::vector<int64_t>{2}));
    EXPECT_FLOAT_EQ(w.as<float>()[0], expected[rank][0]) << rank;
    EXPECT_FLOAT_EQ(w.as<float>()[1], expected[rank][1]) << rank;
  }
  Status s = Session::create(*artifact, cpu, 4).status();
  ASSERT_FALSE(s);
  EXPECT_THAT(
      s.message(),
      HasSubstr("sharded over 4 ranks; rank 4 of its group has no shard"))
      << s.message();
}

namespace {

// The test artifact with W's slot line replaced by `records`.
std::unique_ptr<Artifact> artifactWithW(const TempDir &dir, const std::string &records) {
  std::string error;
  if (!writeTestArtifactWithW(dir.path(), records, error)) {
    ADD_FAILURE() << error;
    return nullptr;
  }
  StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::load(dir.path(), "cpu");
  EXPECT_TRUE(artifact.ok()) << artifact.status().message();
  return artifact.ok() ? *std::move(artifact) : nullptr;
}

std::vector<float> valuesOf(const HostTensor &t) {
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numElements());
}

} // namespace

// A split param (manifest `split`) loads its tensor rank's part of the
// logical tensor in weights.bin: W's bytes {1..6} read as [1, 6] in 3
// blocks (a fused QKV row) over 2 tensor ranks.
TEST(SessionSplits, EachTensorRankLoadsItsPart) {
  TempDir dir;
  auto artifact = artifactWithW(dir, "slot 1 param W f32 2 1 3 0 trainable\nsplit 1 1 3 2 2 1 6\n");
  ASSERT_TRUE(artifact);
  CpuBackend cpu;
  const std::vector<float> expected[2] = {{1, 3, 5}, {2, 4, 6}};
  for (int t = 0; t < 2; ++t) {
    TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, Session::create(*artifact, cpu, 0, t));
    TRC_ASSERT_OK_AND_ASSIGN(HostTensor w, session->getParam("W"));
    EXPECT_EQ(w.shape, (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(valuesOf(w), expected[t]) << "tensor rank " << t;
    // The unsplit param is whole on every tensor rank.
    TRC_ASSERT_OK_AND_ASSIGN(HostTensor b, session->getParam("b"));
    EXPECT_EQ(valuesOf(b), (std::vector<float>{kB[0], kB[1]}));
  }
  Status s = Session::create(*artifact, cpu, 0, 2).status();
  EXPECT_THAT(s.message(), HasSubstr("param 'W': split over 2 tensor ranks; tensor rank 2 has no "
                                     "part"));
}

// A column split ([3, 2] on dim 1), then ZeRO-sharded: the shard record's
// full shape is the part [3, 1], each of 2 shard ranks holds 2 elements of
// it (zero past its end).
TEST(SessionSplits, ShardsOfAPart) {
  TempDir dir;
  auto artifact = artifactWithW(
      dir, "slot 1 param W f32 1 2 0 trainable\nsplit 1 1 1 2 2 3 2\nshard 1 2 2 3 1\n");
  ASSERT_TRUE(artifact);
  CpuBackend cpu;
  // parts: t=0 {1, 3, 5}, t=1 {2, 4, 6}.
  const std::vector<float> expected[2][2] = {{{1, 3}, {5, 0}}, {{2, 4}, {6, 0}}};
  for (int t = 0; t < 2; ++t)
    for (int shard = 0; shard < 2; ++shard) {
      TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                               Session::create(*artifact, cpu, shard, t));
      TRC_ASSERT_OK_AND_ASSIGN(HostTensor w, session->getParam("W"));
      EXPECT_EQ(valuesOf(w), expected[t][shard]) << "tensor rank " << t << " shard " << shard;
    }
}

// A single process evaluating a tensor-parallel artifact would hold one
// part of each split param and no tensor group: refused, naming one.
TEST(SessionSplits, EvaluationRefusesTensorParallelArtifacts) {
  TempDir dir;
  auto artifact = artifactWithW(dir, "slot 1 param W f32 2 1 3 0 trainable\nsplit 1 1 3 2 2 1 6\n");
  ASSERT_TRUE(artifact);
  CpuBackend cpu;
  Status s = evaluateArtifact(dir.path(), cpu, {});
  EXPECT_THAT(s.message(), HasSubstr(": param 'W' is split over 2 tensor ranks (a step compiled "
                                     "for tensor parallelism)"));
}
