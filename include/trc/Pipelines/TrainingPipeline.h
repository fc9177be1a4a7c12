//===- TrainingPipeline.h - the forward graph to @train_step ----*- C++ -*-===//
//
// The passes that turn an imported forward graph into the training step, as
// a typed builder: TrainingPipelineOptions holds each pass's own option
// struct (generated from Passes.td), so nothing travels as a pasted pipeline
// string. trc-run compiles through buildTrainingPipeline, and trc-opt runs
// the same builder as `--trc-training-pipeline="optimizer=adamw ..."`
// (registerTrainingPipeline), so both produce the same step.
//
// Order: [trc-append-loss] -> trc-parameters-to-arguments ->
// trc-lower-dropout -> [trc-fuse-attention] -> [trc-mixed-precision] ->
// [trc-pipeline-stages] -> trc-autodiff -> [trc-recompute] ->
// [trc-offload-activations] -> [trc-shard-tensor-parallel,
// trc-partition] -> [trc-data-parallel] -> [trc-pipeline-split] ->
// trc-build-train-step. Pipeline stages combine with tensor parallelism in
// the compiled step; their data parallelism is the runtime's.
// Preconditions: the module's @main returns a scalar loss first, or
// `loss` is set (a logits model).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PIPELINES_TRAININGPIPELINE_H
#define TRC_PIPELINES_TRAININGPIPELINE_H

#include "trc/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <optional>
#include <string>

namespace trc {

struct TrainingPipelineOptions {
  /// A cross-entropy loss appended to a model that outputs logits.
  std::optional<AppendLossOptions> loss;
  /// Attention fused before autodiff (its backward recomputes probabilities).
  bool fuseAttention = false;
  /// bf16 or fp16 compute with fp32 master weights (fp16 adds loss scaling).
  std::optional<MixedPrecisionOptions> mixedPrecision;
  /// Reverse-mode autodiff's options (layer norm statistics recomputed).
  AutodiffOptions autodiff;
  /// Activations recomputed in the backward (policy none: not run).
  std::optional<RecomputeOptions> recompute;
  /// Kept activations copied to host memory and back (not with `pipeline`).
  std::optional<OffloadActivationsOptions> offload;
  /// Megatron tensor parallelism (trc-shard-tensor-parallel, trc-partition)
  /// over the tensor axis, before data parallelism over the data axis.
  std::optional<ShardTensorParallelOptions> tensorParallel;
  /// Context parallelism (trc-shard-context-parallel, trc-partition): the
  /// sequences split over the context axis.
  std::optional<ShardContextParallelOptions> contextParallel;
  /// With `contextParallel`: attention as a ring (trc-ring-attention after
  /// trc-partition; cp_comm_type p2p) instead of gathering keys and values;
  /// attention is then fused whatever `fuseAttention` says.
  bool ringAttention = false;
  /// Pipeline stages (trc-pipeline-stages before autodiff, trc-pipeline-split
  /// after it): per-stage forward, backward and update functions.
  std::optional<PipelineStagesOptions> pipeline;
  /// With `pipeline`: trc-pipeline-split's options (ZeRO-1 within each
  /// stage's data group: its shard-degree).
  PipelineSplitOptions pipelineSplit;
  /// Gradients averaged (and ZeRO-sharded) over the ranks.
  std::optional<DataParallelOptions> dataParallel;
  BuildTrainStepOptions trainStep;
  /// Every float value of the step checked for NaN/inf (trc-detect-anomaly;
  /// not with `pipeline`).
  bool detectAnomaly = false;
  /// The step ends at @main_grad (forward and backward, partitioned, its
  /// ops tagged with their stages when `pipeline`): no data parallelism,
  /// split or optimizer. What trc-print-stage-work and the planner count.
  bool stopAtGradients = false;
};

void buildTrainingPipeline(mlir::OpPassManager &pm, const TrainingPipelineOptions &options);

/// Sets `loss` and `mixedPrecision` from the spellings trc-run and
/// --trc-training-pipeline share: loss "none" | "cross_entropy" (with
/// `ignoreIndex`), precision "fp32" | "bf16" | "fp16". False, with `problem`
/// naming the option, for any other value.
bool setLossAndPrecision(TrainingPipelineOptions &options, llvm::StringRef loss,
                         int64_t ignoreIndex, llvm::StringRef precision, std::string &problem);

/// Registers `--trc-training-pipeline` with trc-opt (called by
/// registerTrcPipelines).
void registerTrainingPipeline();

} // namespace trc

#endif // TRC_PIPELINES_TRAININGPIPELINE_H
