//===- CompileInProcess.h - trc-run MODEL.onnx: compile, then run -*- C++ -*-===//
//
// Built only with the compiler (TRC_ENABLE_COMPILER): imports an .onnx model
// with the input shapes taken from the given inputs and compiles it through
// the same pipeline as `trc-opt --trc-compile`, into a temporary artifact
// folder that the caller removes.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TOOLS_TRC_RUN_COMPILEINPROCESS_H
#define TRC_TOOLS_TRC_RUN_COMPILEINPROCESS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trc {

/// On success sets `artifactDir` (a fresh temporary folder). On failure
/// returns false with `error` holding the compiler's diagnostics.
bool compileOnnxInProcess(const std::string &model,
                          const std::map<std::string, std::vector<int64_t>> &inputShapes,
                          const std::string &target, std::string &artifactDir,
                          std::string &error);

/// How the training step is built from the imported forward graph.
struct TrainingBuild {
  std::string trainStepOptions;  // trc-build-train-step's, e.g. "optimizer=adamw"
  std::string loss;              // "" (the model's output is the loss) or "cross_entropy"
  int64_t ignoreIndex = -100;    // with loss = cross_entropy
  std::string precision = "fp32"; // fp32, bf16 or fp16 (fp16 adds loss scaling)
  bool fuseAttention = false;    // trc-fuse-attention: probabilities recomputed, not kept
  std::string tokenInput;        // graph input of the token ids
  std::string dataParallelOptions; // trc-data-parallel's options; "" = one process
  bool initWeights = false;      // weights=init: trainable params from their recipes
  uint64_t initSeed = 0;         // weights=init's seed=
};

/// What the compiler learned about the model that the trainer checks.
struct TrainingModelInfo {
  int64_t vocabSize = 0; // rows of the table the token ids index (0: unknown)
};

/// The same for training: after the import, the loss (optional), mixed
/// precision (optional), reverse-mode autodiff and the optimizer step are
/// built and @train_step is compiled. A model whose output is not a scalar
/// loss and no `loss` is an error naming the output.
bool compileOnnxForTraining(const std::string &model,
                            const std::map<std::string, std::vector<int64_t>> &inputShapes,
                            const TrainingBuild &build, const std::string &target,
                            std::string &artifactDir, TrainingModelInfo &info,
                            std::string &error);

} // namespace trc

#endif
