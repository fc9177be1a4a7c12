//===- TestTrainingStep.h - a saved training step for the trainer tests --===//
//
// writeTestTrainingStep(dir, ...) writes what `trc-run MODEL.onnx
// --save-artifact DIR` would: an artifact folder whose program is the
// TestTrainingProgram.c fixture (micro-batches of 2 x 8 token ids, slots in
// that file) and its training.trc, for a global batch of 2 x (data ranks)
// rows of 8 tokens. writeTestTokens writes an llm.c token file of 200
// tokens below 50. Both need TRC_TEST_TRAINING_PROGRAM (the fixture's path).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TESTS_TESTTRAININGSTEP_H
#define TRC_RUNTIME_TESTS_TESTTRAININGSTEP_H

#include "TestFixtures.h"
#include "runtime/formats/Checksum.h"
#include "runtime/train/TrainingArtifact.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace trc::rt::test {

/// The fixture's micro-batch: 2 rows of 8 tokens.
inline constexpr int64_t kStepRows = 2, kStepSeq = 8;

/// The plan a step was saved for: the world size, and the plan's record
/// (TrainerSettings.h describeParallelBuild; "" for one process, no --config).
struct TestStepPlan {
  int64_t ranks = 1, dataRanks = 1;
  std::string parallel;
};

inline std::string readWhole(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void writeWhole(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

/// Writes the step into `dir` (which must exist); false if the fixture
/// cannot be read or the training.trc not written.
inline bool writeTestTrainingStep(const std::string &dir, const TestStepPlan &plan = {}) {
  std::string program = readWhole(fixturePath(TRC_TEST_TRAINING_PROGRAM));
  if (program.empty())
    return false;
  std::string weights(64 * sizeof(float), '\0');
  for (int j = 0; j < 64; ++j) {
    float w = 0.01f * float(j % 7);
    std::memcpy(&weights[size_t(j) * sizeof(float)], &w, sizeof w);
  }
  auto sum = [](const std::string &bytes) {
    return formatChecksum(checksumOf(ChecksumKind::Xxh3, bytes.data(), bytes.size()));
  };
  std::string m = "trc-artifact 1\ntarget cpu\n";
  m += "program program.so " + std::to_string(program.size()) + " " + sum(program) + "\n";
  m += "entry trc_entry\narena 320\n";
  m += "weights weights.bin " + std::to_string(weights.size()) + " " + sum(weights) + "\n";
  m += "slot 0 input ids i64 2 2 8\n"
       "slot 1 input targets i64 2 2 8\n"
       "slot 2 input trc.lr f32 0\n"
       "slot 3 input trc.step f32 0\n"
       "slot 4 param W f32 1 64 0 trainable\n"
       "slot 5 output loss f32 0\n"
       "slot 6 output grad_norm f32 0\n"
       "slot 7 output update:W f32 1 64\n"
       "end\n";
  writeWhole(dir + "/program.so", program);
  writeWhole(dir + "/weights.bin", weights);
  writeWhole(dir + "/manifest.trc", m);
  TrainingArtifactInfo info;
  info.inputs = "ids";
  info.targets = "targets";
  info.vocab = 50;
  info.batch = kStepRows * plan.dataRanks;
  info.seq = kStepSeq;
  info.ranks = plan.ranks;
  info.parallel = plan.parallel;
  info.settings = {{"train_step", "optimizer=adamw"}, {"precision", "fp32"}, {"loss", "model"},
                   {"attention", "unfused"}, {"init_weights", "no"}};
  return writeTrainingInfo(dir, info).ok();
}

/// An llm.c token file (256 int32 header, uint16 tokens) of 200 tokens.
inline void writeTestTokens(const std::string &path) {
  std::vector<int32_t> header(256, 0);
  header[0] = 20240520;
  header[1] = 1;
  header[2] = 200;
  std::string bytes(reinterpret_cast<const char *>(header.data()), 256 * 4);
  for (int i = 0; i < 200; ++i) {
    uint16_t t = uint16_t((i * 7) % 50);
    bytes.append(reinterpret_cast<const char *>(&t), 2);
  }
  writeWhole(path, bytes);
}

} // namespace trc::rt::test

#endif // TRC_RUNTIME_TESTS_TESTTRAININGSTEP_H
