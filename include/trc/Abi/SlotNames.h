//===- SlotNames.h - the slot names of a compiled training step -*- C++ -*-===//
//
// The names under which a training step's inputs and outputs appear in the
// artifact's manifest (docs/ARTIFACT.md), shared by the compiler that
// creates them (trc-build-train-step, trc-mixed-precision, trc-lower-dropout,
// trc-append-loss, the artifact writer) and the runtime that feeds and reads
// them (Session, Trainer, DistributedRun), so both spell each name once.
// No dependencies: plain constants.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ABI_SLOTNAMES_H
#define TRC_ABI_SLOTNAMES_H

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
// A pipeline stage's norm program: its share of the squared norm.
inline constexpr const char kGradSquaresOutput[] = "grad_sq";

// Output "update:<slot>" is the new value of param or state slot <slot>.
inline constexpr const char kUpdatePrefix[] = "update:";
// Output "grad:<param>" is trc-autodiff's gradient of <param>.
inline constexpr const char kGradPrefix[] = "grad:";
// State slot "grad_accum:<param>": the running gradient sum of <param>
// (gradient accumulation), updated on every micro-step.
inline constexpr const char kGradAccumPrefix[] = "grad_accum:";

} // namespace trc::abi

#endif // TRC_ABI_SLOTNAMES_H
