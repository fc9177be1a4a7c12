//===- SlotNames.h - the slot names of a compiled training step -*- C++ -*-===//
//
// The names under which a training step's inputs and outputs appear in the
// artifact's manifest (docs/ARTIFACT.md), shared by the compiler that
// creates them (trc-build-train-step, trc-mixed-precision, trc-lower-dropout,
// trc-append-loss, the artifact writer) and the runtime that feeds and reads
// them (Session, Trainer, DistributedRun), so both spell each name once.
// No dependencies: plain constants and string tests.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ABI_SLOTNAMES_H
#define TRC_ABI_SLOTNAMES_H

#include <string_view>

namespace trc::abi {

// Scalar inputs the runtime feeds every (micro-)step.
inline constexpr const char kLearningRate[] = "trc.lr";   // f32: this step's rate
inline constexpr const char kStepCount[] = "trc.step";    // f32: 1-based step (Adam's bias correction)
inline constexpr const char kKeepAccum[] = "trc.keep_accum"; // f32: 1 keeps summing, 0 restarts
inline constexpr const char kGradScale[] = "trc.grad_scale"; // f32: 1 / (micro-steps x loss scale)
inline constexpr const char kLossScale[] = "trc.loss_scale"; // f32: fp16's dynamic loss scale
inline constexpr const char kRngKey[] = "trc.rng_key";   // i64: dropout masks' key
// Pipeline stages: the squared global gradient norm over every stage (the
// runtime sums each stage's "grad_sq" output) that the update clips by.
inline constexpr const char kGradNormSquared[] = "trc.grad_norm_sq";

// The targets input an appended loss (trc-append-loss) brings.
inline constexpr const char kLossTargets[] = "loss.targets";

// Outputs of a training step.
inline constexpr const char kLossOutput[] = "loss";
inline constexpr const char kGradNormOutput[] = "grad_norm";
// --detect-anomaly (trc-detect-anomaly): one code per checked value, f32[sites]
// (AnomalySites.h).
inline constexpr const char kAnomalyOutput[] = "trc.anomaly";
// A pipeline stage's norm program: its share of the squared norm.
inline constexpr const char kGradSquaresOutput[] = "grad_sq";

// Output "update:<slot>" is the new value of param or state slot <slot>.
inline constexpr const char kUpdatePrefix[] = "update:";
// Output "grad:<param>" is trc-autodiff's gradient of <param>.
inline constexpr const char kGradPrefix[] = "grad:";
// State slot "grad_accum:<param>": the running gradient sum of <param>
// (gradient accumulation), updated on every micro-step.
inline constexpr const char kGradAccumPrefix[] = "grad_accum:";

// Checkpoint tensor (i64): fp16 loss scaling's count of good steps since the
// scale last changed (the scale itself is checkpointed as kLossScale).
inline constexpr const char kLossScaleGoodSteps[] = "trc.loss_scale_good_steps";

// Pipeline stages' buffers (trc-pipeline-split): input "stash:<n>" is a value
// a stage's forward keeps for its backward (output of one program, input of
// a later one); output "send:<id>" and input "recv:<id>" are the two ends of
// transfer <id> (pipeline.trc) between stages. The executor lends them a
// buffer per microbatch.
inline constexpr const char kStashPrefix[] = "stash:";
inline constexpr const char kSendPrefix[] = "send:";
inline constexpr const char kRecvPrefix[] = "recv:";

// A slot name of the form "<kind>:<name>": a parameter's or an input's own
// name has no colon; state, accumulators, gradients, updates and pipeline
// buffers are named after what they belong to.
inline constexpr char kSlotKindSeparator = ':';

inline bool hasSlotPrefix(std::string_view name, std::string_view prefix) {
  return name.substr(0, prefix.size()) == prefix;
}
/// "<kind>:<name>".
inline bool isDerivedSlot(std::string_view name) {
  return name.find(kSlotKindSeparator) != std::string_view::npos;
}
/// A pipeline stage's stash, send or receive buffer.
inline bool isPipelineBufferSlot(std::string_view name) {
  return hasSlotPrefix(name, kStashPrefix) || hasSlotPrefix(name, kSendPrefix) ||
         hasSlotPrefix(name, kRecvPrefix);
}
/// An input that persists from step to step besides the parameters (and is
/// checkpointed): optimizer state ("adam.m:<param>") or a gradient
/// accumulator ("grad_accum:<param>").
inline bool isStateSlot(std::string_view name) {
  return isDerivedSlot(name) && !isPipelineBufferSlot(name);
}
/// A gradient accumulator ("grad_accum:<param>").
inline bool isAccumulatorSlot(std::string_view name) {
  return hasSlotPrefix(name, kGradAccumPrefix);
}
/// Optimizer state: a state slot other than a gradient accumulator.
inline bool isOptimizerStateSlot(std::string_view name) {
  return isStateSlot(name) && !isAccumulatorSlot(name);
}

} // namespace trc::abi

#endif // TRC_ABI_SLOTNAMES_H
