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

/// The same for training: after the import, reverse-mode autodiff and the
/// optimizer step (`trainStepOptions` are trc-build-train-step's, e.g.
/// "optimizer=adamw clip-norm=1") are built and @train_step is compiled.
bool compileOnnxForTraining(const std::string &model,
                            const std::map<std::string, std::vector<int64_t>> &inputShapes,
                            const std::string &trainStepOptions, const std::string &target,
                            std::string &artifactDir, std::string &error);

} // namespace trc

#endif
