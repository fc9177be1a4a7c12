//===- Trainer.h - the training loop as a library ---------------*- C++ -*-===//
//
// A Trainer runs a training job described by TrainerOptions: it connects the
// ranks (DistributedRun, ParallelPlan), gets the training step (compiled from
// an .onnx model by a StepCompiler, or a step saved with --save-artifact),
// opens the data (a token file cut llm.c-style, or rows of named arrays:
// RowData.h), and runs N optimizer steps, logging one metrics line per step
// (and, with evalData, held-out loss and accuracy: Evaluator.h) and
// checkpointing parameters, optimizer state,
// the data position and the step atomically. Resuming continues from the
// latest checkpoint exactly (same batches, same state). With gradAccum K
// each step runs K micro-steps of B/K rows and applies one update; with
// fp16 a step whose gradients overflow is skipped and the loss scale backs
// off (LossScaler.h). A step whose loss or gradient norm is inf/NaN
// otherwise stops the run with an error naming the step, its update
// discarded and nothing checkpointed (onNonFinite "skip": the update is
// discarded and training goes on, up to kMaxNonFiniteSkips in a row); a
// checkpoint never holds non-finite values. Token ids are checked against the rows of the
// embedding they index. initWeights compiles with weights=init: each
// trainable parameter starts from fresh values of its exported values'
// recipe (docs/ARTIFACT.md). saveArtifact compiles the step and keeps it
// with its training.trc (TrainingArtifact.h) instead of training.
//
// trc-run and Python's trc.Trainer are thin front ends over this
// (TrainFlags.h turns their flags into TrainerOptions). Errors are Status messages that name the
// trc-run flag or --config key at fault; every rank must call run().
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_TRAINER_H
#define TRC_RUNTIME_TRAIN_TRAINER_H

#include "runtime/support/Status.h"
#include "runtime/train/StepCompiler.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace trc::rt {

/// Everything a training job needs; each field names the trc-run flag that
/// sets it. Defaults are trc-run's.
struct TrainerOptions {
  std::string model;                     // .onnx or a saved training step folder
  std::string device = "auto";           // cpu | cuda | auto        (--device)
  std::string data;                      // token file, or rows: .npz / .npy folder (--data)
  int64_t batchSize = 0;                 // global batch             (--batch-size)
  int64_t seqLen = 0;                    // token data only          (--seq-len)
  int64_t steps = 0;                     // 0 only with saveArtifact (--steps)
  int64_t epochs = 0;                    // passes over --data, --steps caps (--epochs)
  int64_t gradAccum = 1;                 // micro-steps per step     (--grad-accum)
  uint64_t seed = 0;                     // data order, dropout, init (--seed)
  bool shuffle = false;                  //                          (--shuffle)
  std::vector<std::string> feeds;        // NAME=inputs|targets      (--feed)
  std::vector<std::string> freeze;       // regexes of frozen initializers (--freeze)
  std::vector<std::string> trainable;    // regexes of trained ones, first (--trainable)
  OptimizerSettings optimizer;
  double lr = 1e-3;                      //                          (--lr)
  std::string lrSchedule = "constant";   // LrSchedule.h's spec      (--lr-schedule)
  std::string loss;                      // "" or cross_entropy      (--loss)
  std::optional<int64_t> ignoreIndex;    // with loss                (--ignore-index)
  std::string precision = "auto";        // auto | fp32 | bf16 | fp16 (--precision;
                                         // auto: bf16 on cuda, fp32 on cpu)
  std::optional<double> initialLossScale; // fp16 only, >= 1          (--loss-scale)
  std::string attention = "auto";        // auto | fused | unfused   (--attention)
  std::string recompute;                 // "" (--config's, else none) | none | selective |
                                         // full | auto              (--recompute)
  int64_t memoryBudget = 0;              // arena bytes for auto; 0: the device's
                                         //                          (--memory-budget)
  bool initWeights = false;              //                          (--init-weights)
  std::string metricsPath;               // JSON lines               (--metrics)
  std::string tensorboardDir;            // event files, rank 0      (--tensorboard)
  int64_t logEvery = 10;                 // step lines, stderr not a tty (--log-every)
  std::string evalData;                  // rows: .npz / .npy folder (--eval-data)
  int64_t evalEvery = 0;                 // 0: after the last step   (--eval-every)
  std::string checkpointDir;             //                          (--checkpoint-dir)
  int64_t checkpointEvery = 0;           // 0: never                 (--checkpoint-every)
  int64_t keepLast = 0;                  // newest kept, 0: all      (--keep-last)
  bool resume = false;                   //                          (--resume)
  bool resumeAuto = false;               // resume if D holds one    (--resume auto)
  bool overwriteCheckpoints = false;     // a fresh run replaces D's (--overwrite-checkpoints)
  bool checkpointSync = false;           // wait for each checkpoint's write (--checkpoint-sync)
  // SIGTERM/SIGINT/SIGUSR1 stop the run after the step in flight, with a
  // checkpoint; past this many seconds the process ends anyway (0: no
  // bound; Slurm's KillWait is 30 s)                            (--signal-grace)
  double signalGrace = 25;
  std::string parallelConfig;            // ParallelPlan spec        (--config)
  std::string exportOnnx;                // OUT.onnx after training  (--export-onnx)
  std::string saveModel;                 // trained parameters as PyTorch/HF load them (--save-model)
  std::string predictionsDir;            // the eval rows' outputs (--predictions, Predictions.h)
  std::string keepBest;                  // eval_loss | eval_perplexity | eval_accuracy:
                                         // D/best names the best checkpoint, kept (--keep-best)
  std::string saveArtifact;              // compile and keep, no run (--save-artifact)
  std::string deviceProfile;             // the planner's device (--device-profile; --config auto)
  std::string profilePath;               // Chrome-trace JSON, rank 0 (--profile)
  bool profileSummary = false;           // per-rank table to stderr (--profile-summary)
  int64_t profileSteps = 0;              // record the last N steps; 0: all (--profile-steps)
  std::string onNonFinite = "stop";      // stop | skip: a step whose loss or
                                         // gradient norm is inf/NaN (--on-nonfinite)
  bool detectAnomaly = false;            // every value checked; a non-finite
                                         // step names its first op (--detect-anomaly)
  // Evaluation alone (--eval-data without --data): the parameters of this
  // checkpoint (a step-<N> folder, or a checkpoint folder's latest), else
  // the model's own                     (--from-checkpoint)
  std::string fromCheckpoint;
  // The compile-time flags given explicitly (e.g. "--optimizer"): a saved
  // step's own settings fill in the rest, and a given one must agree.
  std::set<std::string> givenFlags;
};

/// --on-nonfinite skip: this many non-finite steps in a row stop the run.
constexpr int64_t kMaxNonFiniteSkips = 10;

/// The options' values and their combinations (not the files they name):
/// the first problem, naming the flag.
Status validateTrainerOptions(const TrainerOptions &options);

/// Whether `options` ask to evaluate alone: --eval-data without --data
/// (the step is compiled at the eval data's shapes; nothing trains).
bool evaluatesOnly(const TrainerOptions &options);

/// One optimizer step's results, as the metrics line reports them.
struct StepResult {
  int64_t step = 0;          // 1-based
  double loss = 0, learningRate = 0, gradNorm = 0, stepTimeMs = 0, tokensPerSecond = 0;
  double samplesPerSecond = 0; // rows of the global batch per second
  bool applied = true;       // false: an fp16 overflow or a non-finite step skipped the update
  bool nonFinite = false;    // the loss or the gradient norm is inf/NaN (not an fp16 overflow)
  std::string anomaly;       // --detect-anomaly, a non-finite step: where NaN/inf began
  // --eval-data, on the steps that evaluate (rank 0).
  std::optional<double> evalLoss, evalAccuracy, evalPerplexity;
};

/// Runs the job. `compiler` compiles .onnx models (null in a runtime-only
/// build: only saved steps train). `onStep` (optional) sees every step; an
/// evaluation alone is reported to it on rank 0 as one result with the
/// checkpoint's step, `applied` false and the eval fields set.
Status runTrainer(const TrainerOptions &options, StepCompiler *compiler,
                  const std::function<void(const StepResult &)> &onStep = nullptr);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_TRAINER_H
