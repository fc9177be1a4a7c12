//===- PipelineNames.h - names of a pipeline's stage programs ----*- C++ -*-===//
//
// trc-pipeline-split and trc-build-train-step make each pipeline stage's
// programs as functions @stage<N>_<phase>; the pipeline artifact writer puts
// each in a folder stage<N>/<phase> and the runtime runs (and profiles) them
// from there. The spelling of those names, once. The slots that connect the
// programs (stash:, send:, recv:) are in SlotNames.h. No dependencies beyond
// the standard library.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ABI_PIPELINENAMES_H
#define TRC_ABI_PIPELINENAMES_H

#include <cstdint>
#include <string>
#include <string_view>

namespace trc::abi {

// The phases of a stage: its forward, backward (B: input gradients) and
// weights (W: weight gradients) programs; @stage<N>_grads (the gradients
// trc-build-train-step makes the update from, not an artifact of its own),
// the norm (its share of the squared gradient norm) and apply (the update).
inline constexpr const char kForwardPhase[] = "forward";
inline constexpr const char kBackwardPhase[] = "backward";
inline constexpr const char kWeightsPhase[] = "weights";
inline constexpr const char kGradsPhase[] = "grads";
inline constexpr const char kNormPhase[] = "norm";
inline constexpr const char kApplyPhase[] = "apply";

// The keys of each entry of the module's trc.pipeline_transfers list (one
// activation or gradient sent between stages): its slot name, the phase that
// sends it (kForwardPhase or kBackwardPhase), and the sending and receiving
// stage.
inline constexpr const char kTransferIdKey[] = "id";
inline constexpr const char kTransferPhaseKey[] = "phase";
inline constexpr const char kTransferFromKey[] = "from";
inline constexpr const char kTransferToKey[] = "to";

// "stage<N>": a stage's folder in a pipeline artifact.
inline constexpr const char kStagePrefix[] = "stage";

inline std::string stageName(int64_t stage) {
  return kStagePrefix + std::to_string(stage);
}
/// "stage<N>_<phase>": the function of stage N's program `phase`.
inline std::string stageFunctionName(int64_t stage, std::string_view phase) {
  return stageName(stage) + "_" + std::string(phase);
}

} // namespace trc::abi

#endif // TRC_ABI_PIPELINENAMES_H
