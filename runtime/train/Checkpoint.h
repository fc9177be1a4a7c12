//===- Checkpoint.h - atomic, checksummed training checkpoints --------------===//
//
// A checkpoint folder D holds:
//   D/step-<N>/tensors.safetensors  parameters and optimizer state by name
//   D/step-<N>/state.json           step, data position, RNG state, config
//   D/latest                        "step-<N>\n": the checkpoint to resume
//
// state.json (format_version 3), written with exactly this layout:
//   {
//     "format": "trc-checkpoint",
//     "format_version": 2,
//     "trc_version": "0.1.0",
//     "step": N,
//     "data": {"position": P, "epoch": E, "batch_tokens": BT,
//              "num_tokens": NT, "shuffle": false, "seed": S},
//     "rng": {"seed": S, "state": [W0, W1, ...]},
//     "config": {"key": "value", ...},
//     "metrics": {"loss": 3.24, "eval_loss": 3.5, ...},
//     "tensors": {"file": "tensors.safetensors", "bytes": B,
//                 "checksum": "xxh3:<16 hex digits>"},
//     "checksum": "xxh3:<16 hex digits>"
//   }
// The last "checksum" is the XXH3-64 of every byte before its own line, so
// a flipped byte anywhere in state.json is detected; "tensors" carries the
// size and XXH3-64 of tensors.safetensors (checksums spelled as Checksum.h
// says). Integers are exact (uint64 where they are seeds or RNG words).
// Unknown keys are errors.
//
// "metrics" are the checkpointed step's numbers as --metrics logs them
// (loss, learning_rate, grad_norm, eval_*; null when not finite), for
// people and tools choosing a checkpoint; resuming does not read them.
// format_version 2 (before metrics) is read without them.
// format_version 1 (written before XXH3) is still read: the same layout
// with "format_version": 1, the tensors' hash under "fnv1a64" as 16 bare
// hex digits, and "checksum": "fnv1a64:<16 hex digits>", both FNV-1a 64.
//
// saveCheckpoint writes atomically: tensors.safetensors and state.json go
// into D/.tmp-step-<N>-<pid>/, each fsynced; the folder is fsynced and
// renamed to D/step-<N> (an existing D/step-<N> is swapped out with
// renameat2(RENAME_EXCHANGE) and then removed); D is fsynced; then `latest`
// is replaced atomically (temp file, fsync, rename, fsync of D). Until that
// last rename, `latest` still names the previous checkpoint, so any failure
// (a full disk, a crash) leaves it intact and loadable; a failed save
// removes what it wrote. Then all but the `keepLast` newest step-<N>
// folders are removed (never the one `latest` names), as are temp folders
// that earlier, crashed saves left behind. One process writes a folder D
// at a time (rank 0).
//
// Loading: latestCheckpoint(D) reads `latest`; readCheckpoint(folder)
// checks state.json's own checksum, parses it strictly, checks that its
// step matches the folder name, checks size and checksum of
// tensors.safetensors, parses it (Safetensors.h) and returns the state and
// every tensor it holds; the caller compares them with what it expects. A
// failed read returns only the error. Every error names the file it is
// about.
//
// Failure injection: every write, file fsync and rename of a save goes
// through CheckpointWriteOptions::fs (FileOps.h), so tests make the disk
// "fill up" after any number of bytes.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CHECKPOINT_H
#define TRC_RUNTIME_CHECKPOINT_H

#include "runtime/support/DType.h"
#include "runtime/train/DataLoader.h"
#include "runtime/formats/FileOps.h"
#include "runtime/formats/Safetensors.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trc::rt {

// The format saveCheckpoint writes, and the oldest one loading accepts.
constexpr int64_t kCheckpointFormatVersion = 3;
constexpr int64_t kOldestCheckpointFormatVersion = 1;
// Largest state.json read back.
constexpr size_t kMaxCheckpointStateBytes = size_t(16) << 20;

struct CheckpointState {
  int64_t step = 0; // steps completed
  DataLoaderState data;
  uint64_t seed = 0;          // the run's --seed
  std::vector<uint64_t> rng;  // the caller's generator state (opaque words)
  std::map<std::string, std::string> config; // the user's run settings
  // The step's metrics, in logging order (format_version 3; NaN: null).
  std::vector<std::pair<std::string, double>> metrics;
  std::string trcVersion;     // set by load; save writes kTrcVersion
};

struct CheckpointWriteOptions {
  // Keep this many newest step-<N> folders (0: keep all).
  int64_t keepLast = 0;
  // The system calls of the save (null: the kernel's).
  FileSystemHooks *fs = nullptr;
  // A step whose folder stays whatever keepLast says (the best one; 0: none).
  int64_t keepStep = 0;
};

struct CheckpointSaveResult {
  std::string path;                  // D/step-<N>
  std::vector<std::string> warnings; // old folders that could not be removed
};

// Saves `tensors` and `state` as D/step-<state.step> and points `latest` at
// it (see above). On failure the message names the file and says that the
// previous checkpoint is intact.
Status saveCheckpoint(const std::string &dir, const CheckpointState &state,
                      const std::vector<SafetensorsView> &tensors,
                      const CheckpointWriteOptions &options = {},
                      CheckpointSaveResult *result = nullptr);

/// The folder `D/latest` names ("D/step-<N>"); fails if D/latest is
/// missing ("no checkpoint"), malformed, or names a folder that does not
/// exist.
StatusOr<std::string> latestCheckpoint(const std::string &dir);
/// The step of latestCheckpoint(dir) (its errors the same).
StatusOr<int64_t> latestCheckpointStep(const std::string &dir);

/// A checkpoint as a user names it: a folder holding `latest` is that
/// latest; any other path is taken as a step-<N> folder itself.
StatusOr<std::string> checkpointFolder(const std::string &path);

/// --keep-best: `D/best` names the checkpoint whose evaluation was best so
/// far, "step-<N> <metric> <value>\n" (written atomically after that
/// checkpoint is complete).
struct BestCheckpoint {
  int64_t step = 0;
  std::string metric;
  double value = 0;
};
Status writeBestCheckpoint(const std::string &dir, const BestCheckpoint &best);
/// D/best, or none when D has none; an error names a malformed file.
StatusOr<std::optional<BestCheckpoint>> readBestCheckpoint(const std::string &dir);

/// What a checkpoint folder holds: its state and every tensor, in data
/// order.
struct CheckpointContents {
  CheckpointState state;
  std::vector<NamedTensor> tensors;
};

/// Verifies and reads a checkpoint folder whatever tensors it holds.
StatusOr<CheckpointContents> readCheckpoint(const std::string &folder);

// A resumed run's settings must be the checkpoint's: every key of `run`
// must be in saved.config with the same value ("D/step-N/state.json: config
// 'batch_size' (--batch-size) is '8' in the checkpoint, '16' in this run";
// `flags` names the flags that set a key).
Status checkCheckpointConfig(const std::string &folder,
                             const CheckpointState &saved,
                             const std::map<std::string, std::string> &run,
                             const std::map<std::string, std::string> &flags = {});

} // namespace trc::rt

#endif // TRC_RUNTIME_CHECKPOINT_H
