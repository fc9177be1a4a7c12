//===- Train.h - trc-run's training loop ------------------------*- C++ -*-===//
//
//   trc-run MODEL.onnx --data FILE --batch-size B --seq-len T --steps N
//       [--optimizer adamw|adam|sgd] [--lr 1e-3] [--lr-schedule SPEC]
//       [--momentum M] [--nesterov] [--weight-decay W] [--clip-grad-norm C]
//       [--seed S] [--shuffle] [--feed NAME=inputs|targets]
//       [--metrics FILE.jsonl] [--checkpoint-dir D --checkpoint-every K]
//       [--resume] [--device cpu|cuda|auto] [--loss cross_entropy [--ignore-index I]]
//       [--precision fp32|bf16|fp16 [--loss-scale S]] [--grad-accum K]
//       [--export-onnx OUT.onnx] [--init-weights]
//
// Compiles the model's training step in-process (optional loss for logits
// models, mixed precision, autodiff, optimizer), then runs N steps on
// llm.c-style batches of the data file, logging one metrics line per step
// and checkpointing parameters, optimizer state, the data position and the
// step atomically. --resume continues from the latest checkpoint exactly
// (same batches, same state). With --grad-accum K each step runs K
// micro-steps of B/K rows and applies one update; with fp16 a step whose
// gradients overflow is skipped and the loss scale backs off (LossScaler.h).
// Token ids are checked against the rows of the embedding they index.
// --init-weights compiles with weights=init (seed --seed): each trainable
// parameter starts from fresh values of the recipe its exported values
// follow instead of those values (docs/ARTIFACT.md).
// --save-artifact DIR compiles the step (for --device cpu|cuda) and keeps it
// with its training.trc (TrainingArtifact.h) instead of training; `trc-run
// DIR --data ...` trains such a step without compiling, which is all the
// runtime-only build (no MLIR: GPU nodes) can train.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TOOLS_TRC_RUN_TRAIN_H
#define TRC_TOOLS_TRC_RUN_TRAIN_H

#include <map>
#include <string>
#include <vector>

namespace trc {

struct TrainArgs {
  std::string model, device = "auto";
  std::map<std::string, std::string> values;   // --flag value
  std::vector<std::string> feeds;              // --feed NAME=inputs|targets
  bool shuffle = false, resume = false, nesterov = false;
  bool initWeights = false; // --init-weights: fresh parameters (weights=init)
};

/// Runs training; prints `error: ...` and returns 1 on any problem.
int runTraining(const TrainArgs &args);

} // namespace trc

#endif
