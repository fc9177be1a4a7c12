//===- TrainingArtifact.h - a saved training step and how to feed it ------===//
//
// `trc-run MODEL.onnx ... --save-artifact DIR` compiles the training step as
// a training run would and keeps it: DIR is the artifact (manifest,
// program, weights, kernels) plus `training.trc`, what the training loop
// needs that the manifest does not say: the graph inputs fed with token ids
// and targets, the vocabulary bound, the batch shape, the world size and
// data-parallel plan, and the compile-time settings (optimizer, precision,
// loss, attention). `trc-run DIR --data ...` then trains without compiling,
// which the runtime-only build (GPU nodes: no MLIR) can do. MLIR-free.
//
// training.trc: "trc-training 1", then one "key value" line per field
// (names percent-encoded, docs/ARTIFACT.md).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_TRAININGARTIFACT_H
#define TRC_RUNTIME_TRAIN_TRAININGARTIFACT_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <map>
#include <string>

namespace trc::rt {

struct TrainingArtifactInfo {
  std::string inputs, targets;     // graph inputs fed with token ids / targets
  bool targetsAreWindow = false;   // targets take the token window, not the next tokens
  int64_t vocab = 0;               // token ids must be below it (0: unchecked)
  int64_t batch = 0, seq = 0;      // global batch and sequence length
  int64_t gradAccum = 1;
  int64_t ranks = 1;               // world size the step was compiled for
  std::string parallel;            // trc-data-parallel's options ("" = none)
  // Compile-time settings, checked against a training run's flags.
  std::map<std::string, std::string> settings;
};

/// The file beside the artifact's manifest.
inline const char *kTrainingInfoFile = "training.trc";

/// True when `dir` holds a training.trc (a saved training step).
bool isTrainingArtifact(const std::string &dir);

rt::Status writeTrainingInfo(const std::string &dir, const TrainingArtifactInfo &info);
/// Moves the folder `built` (a compiled step with its training.trc) to
/// `dir`, exchanging it with a step saved there before in one rename (there
/// is always a whole step at `dir`), and makes the renames durable
/// (FileOps.h). Preconditions: Linux (renameat2), `dir`'s folder exists.
rt::Status installTrainingArtifact(const std::string &built, const std::string &dir);
/// The contents of DIR/training.trc; errors name the file and the line.
rt::StatusOr<TrainingArtifactInfo> readTrainingInfo(const std::string &dir);

} // namespace trc::rt

#endif
