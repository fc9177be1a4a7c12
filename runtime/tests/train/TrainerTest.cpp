//===- TrainerTest.cpp - the training loop library without a compiler ------===//
//
// runTrainer and validateTrainerOptions (runtime/train/Trainer.h) driven
// directly, as a program embedding trc would: option checks naming the
// flag, plans the trainer cannot run refused by their key, and the
// StepCompiler seam (feeds chosen from the model's graph inputs, a compile
// failure reported once, a runtime-only trainer refusing .onnx models), and
// a saved step compiled for another tensor degree refused by the key.
// The loop itself runs in the lit end-to-end tests against PyTorch.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Trainer.h"
#include "runtime/formats/Npy.h"
#include "runtime/train/TrainerSettings.h"
#include "runtime/train/TrainingArtifact.h"

#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>

namespace {
using namespace trc::rt;
using ::testing::HasSubstr;

// A compiler that knows one model's inputs and records what it was asked.
class RecordingCompiler : public StepCompiler {
public:
  std::vector<GraphInput> inputs;
  std::map<std::string, std::vector<int64_t>> shapes;
  TrainingBuild build;
  std::string target;
  int compiles = 0;

  StatusOr<std::vector<GraphInput>> listGraphInputs(const std::string &) override {
    return inputs;
  }
  StatusOr<CompiledStep> compileTrainingStep(const std::string &,
                                             const std::map<std::string, std::vector<int64_t>> &s,
                                             const TrainingBuild &b, const std::string &t) override {
    ++compiles;
    shapes = s;
    build = b;
    target = t;
    return Status::reported(); // as a compiler that printed its diagnostics
  }
  StatusOr<std::string> compileForward(const std::string &,
                                       const std::map<std::string, std::vector<int64_t>> &,
                                       const std::string &) override {
    return Status::reported();
  }
  Status checkExportTarget(const std::string &, const std::string &) override {
    return Status::success();
  }
  StatusOr<std::map<std::string, std::string>> modelMetadata(const std::string &) override {
    return std::map<std::string, std::string>();
  }
  Status exportOnnx(const std::string &, const std::string &, const TrainedWeights &) override {
    return Status::error("not exported");
  }
};

TrainerOptions validOptions(const std::string &data) {
  TrainerOptions o;
  o.model = "model.onnx";
  o.device = "cpu";
  o.data = data;
  o.batchSize = 4;
  o.seqLen = 8;
  o.steps = 2;
  return o;
}

// A token file of the DataLoader's raw int32 form (256-int header).
std::string writeTokens(trc::rt::test::TempDir &dir) {
  std::string path = dir.file("tokens.bin");
  std::vector<int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = 1;
  header[2] = 200;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(header.data()), 256 * 4);
  std::vector<uint16_t> tokens(200);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = uint16_t(i % 50);
  out.write(reinterpret_cast<const char *>(tokens.data()), std::streamsize(tokens.size() * 2));
  return path;
}

TEST(TrainerOptionsTest, EachProblemNamesItsFlag) {
  EXPECT_TRUE(validateTrainerOptions(validOptions("d")).ok());
  auto problem = [](auto change) {
    TrainerOptions o = validOptions("d");
    change(o);
    Status s = validateTrainerOptions(o);
    EXPECT_FALSE(s.ok());
    return s.message();
  };
  EXPECT_EQ(problem([](TrainerOptions &o) { o.data.clear(); }), "training needs --data");
  EXPECT_EQ(problem([](TrainerOptions &o) { o.steps = 0; }), "training needs --steps or --epochs");
  EXPECT_EQ(problem([](TrainerOptions &o) {
              o.epochs = 2;
              o.saveArtifact = "out";
            }),
            "--epochs: --save-artifact trains nothing");
  EXPECT_EQ(problem([](TrainerOptions &o) { o.keepLast = 2; o.checkpointDir.clear(); }),
            "--keep-last needs --checkpoint-dir");
  EXPECT_THAT(problem([](TrainerOptions &o) { o.optimizer.name = "lamb"; }),
              HasSubstr("option '--optimizer' expects adamw, adam or sgd, got 'lamb'"));
  EXPECT_THAT(problem([](TrainerOptions &o) { o.lr = -1; }), HasSubstr("'--lr'"));
  EXPECT_THAT(problem([](TrainerOptions &o) { o.optimizer.weightDecay = -0.1; }),
              HasSubstr("'--weight-decay' expects a non-negative number"));
  EXPECT_THAT(problem([](TrainerOptions &o) { o.gradAccum = 3; }),
              HasSubstr("--grad-accum 3 does not divide --batch-size 4"));
  EXPECT_EQ(problem([](TrainerOptions &o) { o.ignoreIndex = 0; }),
            "--ignore-index needs --loss cross_entropy");
  EXPECT_THAT(problem([](TrainerOptions &o) { o.precision = "fp8"; }),
              HasSubstr("'--precision' expects auto, fp32, bf16 or fp16, got 'fp8'"));
  EXPECT_EQ(problem([](TrainerOptions &o) { o.initialLossScale = 1024; }),
            "--loss-scale is the initial loss scale of --precision fp16");
  EXPECT_EQ(problem([](TrainerOptions &o) { o.checkpointEvery = 5; }),
            "--checkpoint-every needs --checkpoint-dir");
  EXPECT_EQ(problem([](TrainerOptions &o) { o.resume = true; }), "--resume needs --checkpoint-dir");
  // Accepted silently before (issue 33).
  EXPECT_EQ(problem([](TrainerOptions &o) { o.optimizer.clipGradNorm = 0; }),
            "option '--clip-grad-norm' expects a positive norm (leave it out not to clip)");
  EXPECT_EQ(problem([](TrainerOptions &o) { o.optimizer.momentum = 0.9; }),
            "--momentum is SGD's; --optimizer adamw does not use it");
  EXPECT_EQ(problem([](TrainerOptions &o) {
              o.optimizer.name = "adam";
              o.optimizer.nesterov = true;
            }),
            "--nesterov is SGD's; --optimizer adam does not use it");
  EXPECT_EQ(problem([](TrainerOptions &o) {
              o.saveArtifact = "step";
              o.checkpointDir = "ck";
              o.resume = true;
            }),
            "--resume continues a training run; --save-artifact trains nothing");
  EXPECT_EQ(problem([](TrainerOptions &o) { o.logEvery = 0; }),
            "option '--log-every' expects a positive integer");
  EXPECT_EQ(problem([](TrainerOptions &o) { o.onNonFinite = "maybe"; }),
            "option '--on-nonfinite' expects stop or skip, got 'maybe'");
  EXPECT_EQ(problem([](TrainerOptions &o) { o.evalEvery = 5; }),
            "--eval-every needs --eval-data");
  // Token eval data (a text) for a run on token data evaluates its windows;
  // for a run on rows it is refused.
  // Evaluation alone: --eval-data without --data, no training flags;
  // --from-checkpoint only there.
  TrainerOptions alone = validOptions("");
  alone.steps = 0;
  alone.evalData = "dev.txt";
  EXPECT_TRUE(evaluatesOnly(alone));
  EXPECT_TRUE(validateTrainerOptions(alone).ok());
  alone.fromCheckpoint = "ck";
  EXPECT_TRUE(validateTrainerOptions(alone).ok());
  alone.steps = 3;
  EXPECT_EQ(validateTrainerOptions(alone).message(),
            "--steps: --eval-data without --data evaluates and trains nothing (give --data to "
            "train)");
  EXPECT_THAT(problem([](TrainerOptions &o) { o.fromCheckpoint = "ck"; }),
              HasSubstr("--from-checkpoint evaluates a checkpoint"));
  TrainerOptions tokenEval = validOptions("d");
  tokenEval.evalData = "dev.txt";
  EXPECT_TRUE(validateTrainerOptions(tokenEval).ok());
  EXPECT_THAT(problem([](TrainerOptions &o) {
                o.data = "rows.npz";
                o.seqLen = 0;
                o.evalData = "dev.txt";
              }),
              HasSubstr("--eval-data dev.txt is token data, --data rows.npz is rows"));
  // Rows carry their shapes: no --seq-len, no --feed; and no saved steps yet.
  EXPECT_THAT(problem([](TrainerOptions &o) { o.data = "rows.npz"; }),
              HasSubstr("--seq-len: the arrays of --data rows.npz give the shapes"));
  TrainerOptions rows = validOptions("rows.npz");
  rows.seqLen = 0;
  rows.evalData = "dev.npz";
  rows.evalEvery = 5;
  EXPECT_TRUE(validateTrainerOptions(rows).ok());
  rows.feeds = {"ids=inputs"};
  EXPECT_THAT(validateTrainerOptions(rows).message(), HasSubstr("--feed: --data rows.npz feeds"));
  // Saving a step needs no data and no step count.
  TrainerOptions save = validOptions("");
  save.steps = 0;
  save.saveArtifact = "out";
  EXPECT_TRUE(validateTrainerOptions(save).ok());
}

TEST(TrainerTest, RuntimeOnlyTrainerRefusesOnnxModels) {
  trc::rt::test::TempDir dir;
  TrainerOptions o = validOptions(writeTokens(dir));
  Status s = runTrainer(o, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("this runtime-only build of trc-run cannot compile"));
}

// Microbatches without pipeline stages are gradient accumulation: the step
// is compiled with accumulation buffers for batch / microbatches rows; a
// --grad-accum that says otherwise is refused naming both.
TEST(TrainerTest, MicrobatchesWithoutStagesAreGradientAccumulation) {
  trc::rt::test::TempDir dir;
  TrainerOptions o = validOptions(writeTokens(dir));
  RecordingCompiler compiler;
  compiler.inputs = {{"ids", true}, {"labels", true}};
  o.parallelConfig = R"({"microbatches": 4})";
  EXPECT_TRUE(runTrainer(o, &compiler).isReported());
  EXPECT_EQ(compiler.compiles, 1);
  EXPECT_TRUE(compiler.build.accumulate);
  EXPECT_EQ(compiler.shapes["ids"], (std::vector<int64_t>{1, 8})); // 4 rows / 4 micro-steps
  o.gradAccum = 2;
  o.givenFlags.insert("--grad-accum");
  Status s = runTrainer(o, &compiler);
  EXPECT_THAT(s.message(), HasSubstr("--grad-accum 2 contradicts --config key 'microbatches': 4"));
}

TEST(TrainerTest, AutoPartitionIsTheFrontEndsToChoose) {
  trc::rt::test::TempDir dir;
  TrainerOptions o = validOptions(writeTokens(dir));
  RecordingCompiler compiler;
  // The planner (trc-run's front end) replaces auto_partition configs; the
  // library alone says where plans are chosen.
  o.parallelConfig = R"({"auto_partition": true})";
  Status s = runTrainer(o, &compiler);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("key 'auto_partition': the planner chooses the plan"));
  EXPECT_EQ(compiler.compiles, 0);
}

// What saved steps record of the plan: the data-parallel options, then
// the tensor-parallel ones (compared on reuse, so a step compiled for
// another tensor degree is refused), then offloading's horizon.
TEST(TrainerTest, ParallelRecordNamesTheTensorDegree) {
  TrainingBuild build;
  EXPECT_EQ(describeParallelBuild(build), "");
  build.tensorParallel = TensorParallelBuild{2, false};
  EXPECT_EQ(describeParallelBuild(build), "tensor-parallel: degree=2 sequence-parallel=false");
  build.dataParallel = DataParallelBuild{};
  build.tensorParallel->sequenceParallel = true;
  EXPECT_EQ(describeParallelBuild(build), "zero-stage=0 shard-degree=1 bucket-mb=25.000000 "
                                          "tensor-parallel: degree=2 sequence-parallel=true");
}

// A runtime-only trainer given a saved step whose params are split over 2
// tensor ranks (manifest `split`) refuses it on a plan of tensor degree 1,
// before loading any part, naming the key and a split param.
TEST(TrainerTest, SavedStepOfAnotherTensorDegreeIsRefused) {
  trc::rt::test::TempDir dir;
  TrainerOptions o = validOptions(writeTokens(dir));
  std::string step = dir.file("step");
  std::filesystem::create_directory(step);
  std::string error;
  ASSERT_TRUE(trc::rt::test::writeTestArtifactWithW(
      step, "slot 1 param W f32 2 3 1 0 trainable\nsplit 1 1 1 2 2 3 2\n", error))
      << error;
  TrainingArtifactInfo info;
  info.inputs = "x";
  info.targets = "y";
  info.batch = o.batchSize;
  info.seq = o.seqLen;
  info.settings = {{"train_step", "optimizer=adamw"}, {"precision", "fp32"}, {"loss", "model"},
                   {"attention", "unfused"}, {"init_weights", "no"}};
  ASSERT_TRUE(writeTrainingInfo(step, info));
  o.model = step;
  Status s = runTrainer(o, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(),
              HasSubstr("--config: key 'tensor_parallel_degree': 1, but the training step in " +
                        step + " was compiled for tensor degree 2 (param 'W' is split over 2 "
                        "ranks)"))
      << s.message();
}

TEST(TrainerTest, RecomputationReachesTheCompilerFromTheFlagOrTheConfig) {
  trc::rt::test::TempDir dir;
  TrainerOptions o = validOptions(writeTokens(dir));
  RecordingCompiler compiler;
  compiler.inputs = {{"ids", true}, {"labels", true}};
  o.recompute = "full";
  EXPECT_TRUE(runTrainer(o, &compiler).isReported());
  EXPECT_EQ(compiler.build.recompute, "full");
  EXPECT_EQ(compiler.build.memoryLimit, 0);
  EXPECT_GT(compiler.build.deviceMemory, 0); // the CPU's physical memory
  o.recompute = "";
  o.parallelConfig = R"({"recompute": "selective"})";
  EXPECT_TRUE(runTrainer(o, &compiler).isReported());
  EXPECT_EQ(compiler.build.recompute, "selective");
  // A budget alone asks for auto.
  o.parallelConfig = "";
  o.memoryBudget = 1 << 20;
  EXPECT_TRUE(runTrainer(o, &compiler).isReported());
  EXPECT_EQ(compiler.build.recompute, "auto");
  EXPECT_EQ(compiler.build.memoryLimit, 1 << 20);
  // The flag and the config must agree; a budget needs auto.
  o.memoryBudget = 0;
  o.recompute = "full";
  o.parallelConfig = R"({"recompute": "selective"})";
  Status s = runTrainer(o, &compiler);
  EXPECT_THAT(s.message(), HasSubstr("--recompute full contradicts --config key 'recompute': selective"));
  o.parallelConfig = "";
  o.memoryBudget = 100;
  s = runTrainer(o, &compiler);
  EXPECT_THAT(s.message(), HasSubstr("--memory-budget is the arena budget of --recompute auto"));
  o.recompute = "most";
  o.memoryBudget = 0;
  s = runTrainer(o, &compiler);
  EXPECT_THAT(s.message(), HasSubstr("option '--recompute' expects none, selective, full or auto"));
}

// SageMaker's offload keys reach the compiler, and saved steps record them
// with the plan.
TEST(TrainerTest, OffloadingReachesTheCompilerFromTheConfig) {
  trc::rt::test::TempDir dir;
  TrainerOptions o = validOptions(writeTokens(dir));
  RecordingCompiler compiler;
  compiler.inputs = {{"ids", true}, {"labels", true}};
  EXPECT_TRUE(runTrainer(o, &compiler).isReported());
  EXPECT_FALSE(compiler.build.offload);
  o.parallelConfig = R"({"offload_activations": true, "activation_loading_horizon": 2})";
  EXPECT_TRUE(runTrainer(o, &compiler).isReported());
  EXPECT_TRUE(compiler.build.offload);
  EXPECT_EQ(compiler.build.horizon, 2);
  // (A --config puts even one rank on the data-parallel path.)
  EXPECT_EQ(describeParallelBuild(compiler.build),
            "zero-stage=0 shard-degree=1 bucket-mb=25.000000 offload: horizon=2");
  o.parallelConfig = R"({"offload_activations": true})";
  EXPECT_TRUE(runTrainer(o, &compiler).isReported());
  EXPECT_EQ(compiler.build.horizon, 4); // SageMaker's default
}

TEST(TrainerTest, FeedsComeFromTheModelsIntegerInputsAndCompileFailuresAreReported) {
  trc::rt::test::TempDir dir;
  TrainerOptions o = validOptions(writeTokens(dir));
  o.gradAccum = 2;
  o.optimizer.weightDecay = 0.01;
  RecordingCompiler compiler;
  compiler.inputs = {{"mask", false}, {"ids", true}, {"labels", true}};
  Status s = runTrainer(o, &compiler);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.isReported()); // the compiler's diagnostics are not repeated
  EXPECT_EQ(compiler.compiles, 1);
  EXPECT_EQ(compiler.target, "cpu");
  // Micro-batches of batch / grad-accum rows.
  std::map<std::string, std::vector<int64_t>> expected{{"ids", {2, 8}}, {"labels", {2, 8}}};
  EXPECT_EQ(compiler.shapes, expected);
  EXPECT_EQ(compiler.build.tokenInput, "ids");
  EXPECT_TRUE(compiler.build.accumulate);
  EXPECT_EQ(compiler.build.optimizer.weightDecay, 0.01);
  EXPECT_FALSE(compiler.build.dataParallel); // one process, no --config
  EXPECT_EQ(describeTrainStep(compiler.build), "optimizer=adamw weight-decay=0.01 accumulate=true");
  EXPECT_FALSE(compiler.build.fuseAttention); // auto: unfused on the CPU

  // A feed that names no graph input.
  o.feeds = {"tokens=inputs"};
  s = runTrainer(o, &compiler);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("--feed names 'tokens', which is not a graph input"));
}

TEST(TrainerTest, RowDataSizesEveryInputFromItsArray) {
  trc::rt::test::TempDir dir;
  HostTensor ids, mask, labels;
  ASSERT_TRUE(ids.allocate(DType::I64, {6, 5}));
  ASSERT_TRUE(mask.allocate(DType::F32, {6, 5, 2}));
  ASSERT_TRUE(labels.allocate(DType::I64, {6}));
  ASSERT_TRUE(std::filesystem::create_directory(dir.file("rows")));
  ASSERT_TRUE(writeNpyFile(dir.file("rows/ids.npy"), ids));
  ASSERT_TRUE(writeNpyFile(dir.file("rows/mask.npy"), mask));
  ASSERT_TRUE(writeNpyFile(dir.file("rows/labels.npy"), labels));
  TrainerOptions o = validOptions(dir.file("rows")); // a folder of .npy
  o.seqLen = 0;
  o.gradAccum = 2;
  RecordingCompiler compiler;
  compiler.inputs = {{"ids", true, "i64", {-1, -1}},
                     {"mask", false, "f32", {-1, -1, 2}},
                     {"labels", true, "i64", {-1}}};
  Status s = runTrainer(o, &compiler);
  ASSERT_TRUE(s.isReported()) << s.message();
  // Micro-batches of batch / grad-accum rows, the rest of each shape the array's.
  std::map<std::string, std::vector<int64_t>> expected{
      {"ids", {2, 5}}, {"mask", {2, 5, 2}}, {"labels", {2}}};
  EXPECT_EQ(compiler.shapes, expected);
  EXPECT_EQ(compiler.build.tokenInput, "ids"); // the first integer input
  // With --loss, 'labels' feeds the appended loss's targets (not sized:
  // the loss derives them), and no graph input may be left without an array.
  o.loss = "cross_entropy";
  compiler.inputs = {{"ids", true, "i64", {-1, -1}}, {"mask", false, "f32", {-1, -1, 2}}};
  s = runTrainer(o, &compiler);
  ASSERT_TRUE(s.isReported()) << s.message();
  expected.erase("labels");
  EXPECT_EQ(compiler.shapes, expected);
}

} // namespace
