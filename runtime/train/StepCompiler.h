//===- StepCompiler.h - what the trainer needs from a compiler --*- C++ -*-===//
//
// The runtime never links the compiler (DESIGN.md): a Trainer given an .onnx
// model asks a StepCompiler, which the front end supplies when it is built
// with the compiler (lib/Driver: trc/Driver/CompileInProcess.h), to list the model's
// graph inputs, compile its training step (and, for --eval-data, its forward
// program) into an artifact folder, and write the trained weights back into
// ONNX. A runtime-only build passes none and
// trains saved steps only (TrainingArtifact.h).
//
// Failures: a StepCompiler reports its own diagnostics (the compiler's
// `error:` lines, to stderr) and returns Status::reported(), or returns an
// ordinary error Status for the caller to print.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_STEPCOMPILER_H
#define TRC_RUNTIME_TRAIN_STEPCOMPILER_H

#include "runtime/support/Status.h"
#include "runtime/support/Tensor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trc::rt {

/// The optimizer of the compiled step (trc-build-train-step's options).
struct OptimizerSettings {
  std::string name = "adamw";            // adamw | adam | sgd      (--optimizer)
  std::optional<double> momentum;        // sgd                     (--momentum)
  std::optional<double> weightDecay;     // default: the optimizer's (--weight-decay)
  std::optional<double> clipGradNorm;    // global-norm clipping    (--clip-grad-norm)
  bool nesterov = false;                 //                         (--nesterov)
};

/// Gradients averaged and ZeRO-sharded over the ranks (trc-data-parallel).
struct DataParallelBuild {
  int zeroStage = 0;
  int shardDegree = 1;
  double bucketMb = 25.0;
  bool hybrid = false;   // stage >= 2 with replicas: a replica all-reduce too
};

/// Parameters split over the tensor group (Megatron-style; the compiler's
/// sharding propagation and trc-partition): the step's split params carry
/// manifest `split` records of this degree.
struct TensorParallelBuild {
  int degree = 1;
  bool sequenceParallel = false; // activations split along the sequence too
};

/// The step split into pipeline stages (trc-pipeline-stages/-split): `stages`
/// ranks x `chunks` model chunks each.
struct PipelineBuild {
  int stages = 1;
  int chunks = 1;
  int shardDegree = 1; // ZeRO within each stage's data group
  int zeroStage = 0;   // 0 with shardDegree 1, else 1 (optimizer state) or 3 (parameters too)
  // Per step (the programs run batch / (data ranks x microbatches) rows):
  // recorded with a saved step, which then runs with these alone.
  int microbatches = 1;
};

/// How the training step is built from the imported forward graph: the
/// typed form of trc-opt's --trc-training-pipeline options.
struct TrainingBuild {
  OptimizerSettings optimizer;
  bool accumulate = false;       // gradient accumulation buffers (--grad-accum > 1)
  std::string loss;              // "" (the model's output is the loss) or "cross_entropy"
  int64_t ignoreIndex = -100;    // with loss = cross_entropy
  std::string precision = "fp32"; // fp32, bf16 or fp16 (fp16 adds loss scaling)
  bool fuseAttention = false;    // trc-fuse-attention: probabilities recomputed, not kept
  // trc-recompute: none, selective, full, or auto (the least recomputation
  // whose arena fits `memoryLimit` bytes: --memory-budget, else what the
  // device has beside the step's parameters, gradients and state).
  std::string recompute = "none";
  // Layer norm gradients recompute the forward's statistics (memory) rather
  // than share them (time): on unless the CPU runs without recomputation.
  bool recomputeStatistics = true;
  int64_t memoryLimit = 0;       // auto: arena bytes; 0: the device's
  // trc-offload-activations: kept activations copied to host memory after
  // their forward and prefetched `horizon` layers ahead of their backward.
  bool offload = false;
  int64_t horizon = 4;
  int64_t deviceMemory = 0;      // auto without a budget: the device's bytes
  std::string tokenInput;        // graph input of the token ids
  std::optional<DataParallelBuild> dataParallel; // none: one process
  std::optional<TensorParallelBuild> tensorParallel; // none: tensor degree 1
  int contextDegree = 1;         // sequences split over this many ranks (inputs' `split`)
  bool contextRing = false;      // cp_comm_type p2p: attention as a ring (trc-ring-attention)
  bool contextBalance = false;   // cp_load_balance: sequences split head-tail
  std::optional<PipelineBuild> pipeline; // none: one stage
  bool initWeights = false;      // weights=init: trainable params from their recipes
  // Which float initializers train (trc/Import/InitializerRoles.h's rule):
  // --trainable and --freeze regexes over the exporter's own tags.
  std::vector<std::string> freeze, trainable;
  uint64_t initSeed = 0;         // weights=init's seed=
  bool detectAnomaly = false;    // trc-detect-anomaly: every float value checked
};

/// The step's optimizer spelled as --trc-training-pipeline's keys, e.g.
/// "optimizer=adamw weight-decay=0.01 accumulate=true": what saved steps and
/// checkpoints record (and compare on reuse).
std::string describeTrainStep(const TrainingBuild &build);
/// A describeTrainStep record without its accumulation (the optimizer's
/// state does not depend on it).
std::string withoutAccumulation(std::string trainStepRecord);
/// trc-data-parallel's options, e.g. "zero-stage=3 shard-degree=2
/// bucket-mb=25.000000 hybrid=true", as saved steps record the plan.
std::string describeDataParallel(const DataParallelBuild &dp);
/// The --freeze/--trainable regexes, e.g. "freeze=[wte.*] trainable=[]";
/// "model" when the model's own tags decide: what saved steps record.
std::string describeParameterChoice(const TrainingBuild &build);
/// The tensor-parallel options, e.g. "degree=2 sequence-parallel=false".
std::string describeTensorParallel(const TensorParallelBuild &tp);

/// What the compiler learned about the model that the trainer checks.
struct TrainingModelInfo {
  int64_t vocabSize = 0; // rows of the table the token ids index (0: unknown)
  // Rows of the embedding table each integer input indexes (row data
  // checks every such array; inputs that index no table are absent).
  std::map<std::string, int64_t> tableRows;
  // The model's first output (its loss, unless an appended loss follows).
  std::string firstOutput;
  // A classification pairing: the float output `logitsOutput` [..., C] and
  // the integer input `labelsInput` of its shape without C (with an
  // appended loss: the loss's targets); "" when the model has none.
  std::string logitsOutput, labelsInput;
  int64_t classes = 0;
  // The model's float initializers that train and those frozen, counted by
  // the reason (a phrase: "tagged PARAMETER by the exporter", "--freeze").
  std::map<std::string, int64_t> trainingTensors, frozenTensors;
  // A static export compiled at other sizes than it was traced at: the
  // inputs ("'input_ids' [8, 128] -> [4, 128]") and how many of its shape
  // constants the importer re-derived (empty and 0 otherwise).
  std::vector<std::string> respecializedInputs;
  int64_t rederivedConstants = 0;
  // The shapes those inputs were traced at, by name.
  std::map<std::string, std::vector<int64_t>> tracedShapes;
};

/// One graph input of an .onnx model.
struct GraphInput {
  std::string name;
  bool isInteger = false;
  std::string dtype;          // the runtime's spelling ("i64"); "" unknown
  std::vector<int64_t> dims;  // -1: dynamic
  // The node that slices it from sequence position 1: labels that a causal
  // LM shifts itself, to be fed the token window, not the next tokens.
  std::string shiftedBy;
};

/// The weights to export: the trained parameters by (decoded) name, and how
/// to read one (its value, or an error).
struct TrainedWeights {
  std::vector<std::string> names;
  std::function<StatusOr<HostTensor>(const std::string &name)> read;
};

/// A compiled training step: the artifact folder (inside a temporary parent
/// the caller removes) and what the compiler learned about the model.
struct CompiledStep {
  std::string artifactDir;
  TrainingModelInfo info;
};

class StepCompiler {
public:
  virtual ~StepCompiler() = default;
  /// The graph inputs of `model`, in order.
  virtual StatusOr<std::vector<GraphInput>> listGraphInputs(const std::string &model) = 0;
  /// Compiles the training step of `model` for `target` ("cpu" | "cuda") with
  /// the given input shapes into a fresh temporary artifact folder; on
  /// failure nothing is left behind.
  virtual StatusOr<CompiledStep>
  compileTrainingStep(const std::string &model,
                      const std::map<std::string, std::vector<int64_t>> &shapes,
                      const TrainingBuild &build, const std::string &target) = 0;
  /// Compiles the model's own forward program (no training step) for
  /// `target` with the given input shapes into a fresh temporary artifact
  /// folder (--eval-data's program), read as module.eval() reads the model
  /// (Dropout the identity, BatchNormalization on its running statistics,
  /// whatever the export's training_mode says); on failure nothing is left
  /// behind.
  virtual StatusOr<std::string>
  compileForward(const std::string &model,
                 const std::map<std::string, std::vector<int64_t>> &shapes,
                 const std::string &target) = 0;
  /// Checks before training that `outPath` can be written from `model`.
  virtual Status checkExportTarget(const std::string &model, const std::string &outPath) = 0;
  /// Writes `outPath`: `model` with the trained weights.
  virtual Status exportOnnx(const std::string &model, const std::string &outPath,
                            const TrainedWeights &weights) = 0;
  /// The model's metadata (ONNX metadata_props: key -> value).
  virtual StatusOr<std::map<std::string, std::string>> modelMetadata(const std::string &model) = 0;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_STEPCOMPILER_H
