//===- CompileInProcess.h - trc-run MODEL.onnx: compile, then run -*- C++ -*-===//
//
// Built only with the compiler (TRC_ENABLE_COMPILER): imports an .onnx model
// with the input shapes taken from the given inputs and compiles it through
// the same pipeline as `trc-opt --trc-compile`, into a temporary artifact
// folder that the caller removes.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DRIVER_COMPILEINPROCESS_H
#define TRC_DRIVER_COMPILEINPROCESS_H

#include "runtime/train/StepCompiler.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trc {

/// On success sets `artifactDir` (a fresh temporary folder). On failure
/// returns false with `error` holding the compiler's diagnostics. With
/// `valueFiles` (input name -> .npy), integer inputs that determine shapes
/// (a Reshape's shape, Slice's starts, Tile's repeats...) are specialized on
/// their values: they become constants, leave the artifact's inputs, and
/// their names are appended to `specialized`.
bool compileOnnxInProcess(const std::string &model,
                          const std::map<std::string, std::vector<int64_t>> &inputShapes,
                          const std::string &target, std::string &artifactDir,
                          std::string &error,
                          const std::map<std::string, std::string> *valueFiles = nullptr,
                          std::vector<std::string> *specialized = nullptr);

/// The same for training: after the import, the loss (optional), mixed
/// precision (optional), reverse-mode autodiff and the optimizer step are
/// built and @train_step is compiled. A model whose output is not a scalar
/// loss and no `loss` is an error naming the output.
bool compileOnnxForTraining(const std::string &model,
                            const std::map<std::string, std::vector<int64_t>> &inputShapes,
                            const rt::TrainingBuild &build, const std::string &target,
                            std::string &artifactDir, rt::TrainingModelInfo &info,
                            std::string &error);

/// The Trainer's compiler (runtime/train/StepCompiler.h): the functions
/// above, the importer's graph inputs and --export-onnx (ExportOnnx.h).
/// Compile diagnostics go to stderr as the compiler prints them.
class InProcessStepCompiler : public rt::StepCompiler {
public:
  rt::StatusOr<std::vector<rt::GraphInput>> listGraphInputs(const std::string &model) override;
  rt::StatusOr<rt::CompiledStep>
  compileTrainingStep(const std::string &model,
                      const std::map<std::string, std::vector<int64_t>> &shapes,
                      const rt::TrainingBuild &build, const std::string &target) override;
  rt::StatusOr<std::string>
  compileForward(const std::string &model,
                 const std::map<std::string, std::vector<int64_t>> &shapes,
                 const std::string &target) override;
  rt::Status checkExportTarget(const std::string &model, const std::string &outPath) override;
  rt::Status exportOnnx(const std::string &model, const std::string &outPath,
                        const rt::TrainedWeights &weights) override;
  rt::StatusOr<std::map<std::string, std::string>>
  modelMetadata(const std::string &model) override;
};

} // namespace trc

#endif
