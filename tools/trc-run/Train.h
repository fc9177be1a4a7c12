//===- Train.h - trc-run's training loop ------------------------*- C++ -*-===//
//
//   trc-run MODEL.onnx --data FILE --batch-size B --seq-len T --steps N
//       [--optimizer adamw|adam|sgd] [--lr 1e-3] [--lr-schedule SPEC]
//       [--momentum M] [--nesterov] [--weight-decay W] [--clip-grad-norm C]
//       [--seed S] [--shuffle] [--feed NAME=inputs|targets]
//       [--metrics FILE.jsonl] [--checkpoint-dir D --checkpoint-every K]
//       [--resume] [--device cpu|auto]
//
// Compiles the model's training step in-process (autodiff, optimizer),
// then runs N steps on llm.c-style batches of the data file, logging one
// metrics line per step and checkpointing parameters, optimizer state, the
// data position and the step atomically. --resume continues from the latest
// checkpoint exactly (same batches, same state).
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
};

/// Runs training; prints `error: ...` and returns 1 on any problem.
int runTraining(const TrainArgs &args);

} // namespace trc

#endif
