//===- ArtifactWriter.h - writes the artifact folder ------------*- C++ -*-===//
//
// Writes manifest.trc, weights.bin and the program into a fresh folder next
// to the destination, then moves it into place (or, for a destination
// ending in ".trc", packs it into that one file), so a failed compile never
// leaves a partial artifact (docs/ARTIFACT.md is the format). Parameters
// with equal bytes share one copy in weights.bin; those with an `init`
// record (weights=init) have none.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_PIPELINES_ARTIFACTWRITER_H
#define TRC_LIB_PIPELINES_ARTIFACTWRITER_H

#include "runtime/formats/Initializer.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace trc {

struct ArtifactSlot {
  enum class Kind { Input, Output, Param };
  Kind kind;
  std::string name;
  mlir::RankedTensorType type;
  bool trainable = false;
  llvm::ArrayRef<char> initialBytes; // params only (the logical tensor when split or sharded)
  // weights=init: the param's `init` record instead of bytes in weights.bin.
  std::optional<rt::Initializer> init;
  // A 1-D shard of a tensor of `fullShape` over `shardDegree` ranks (a
  // manifest `shard` record); 0 when not sharded.
  int64_t shardDegree = 0;
  llvm::SmallVector<int64_t> fullShape;
  // One tensor rank's part of a logical tensor of `splitShape` (a manifest
  // `split` record, written before `shard`: dim `splitDim` is `splitBlocks`
  // blocks, each cut into `splitDegree` chunks, the odd blocks' in reverse
  // rank order when `splitMirrored`; when also sharded, `fullShape` is the
  // part's shape); 0 when not split.
  int64_t splitDegree = 0;
  int64_t splitDim = 0, splitBlocks = 1;
  bool splitMirrored = false;
  llvm::SmallVector<int64_t> splitShape;
  // Integer inputs that index a table (an embedding lookup): its rows (a
  // manifest `bound` record; the runtime refuses indices outside
  // [-rows, rows)); 0: no record.
  int64_t indexBound = 0;
  // Integer inputs that are a cross-entropy loss's labels: its classes and
  // ignore index (a manifest `labels` record); 0: no record.
  int64_t labelClasses = 0;
  std::optional<int64_t> labelIgnore;
};

struct ArtifactContents {
  std::string target;
  int64_t arenaBytes = 0;
  int64_t hostArenaBytes = 0; // offloaded activations; 0: no host_arena record
  std::vector<ArtifactSlot> slots; // in slot order
  // Target-specific records (target cuda: cubin, ptx, kernel), written
  // after `weights`; their files are written into the stage by the caller.
  std::vector<std::string> records;
};

/// Writes `bytes` to `path` whole; false with `error` naming the file on a
/// failure (a full disk too: reported, never the stream's fatal error).
bool writeArtifactFile(const std::string &path, llvm::StringRef bytes, std::string &error);

/// Creates a staging folder for `outPath` (its program.so is written by the
/// caller), fills manifest and weights, and moves it to `outPath`.
class ArtifactWriter {
public:
  explicit ArtifactWriter(llvm::StringRef outPath) : outPath_(outPath.str()) {}
  ~ArtifactWriter();

  /// The staging folder; empty with `error` set on failure.
  std::string stage(std::string &error);
  /// The program signature (runtime/formats/ProgramSignature.h) of the
  /// manifest finish() writes for `contents`; false with `error` set if
  /// that manifest would not parse.
  static bool signature(const ArtifactContents &contents, std::string &text,
                        std::string &error);
  /// Writes manifest and weights into the stage and publishes it.
  bool finish(const ArtifactContents &contents, std::string &error);

private:
  std::string outPath_, stage_;
};

/// "f32", "i64", ... as the manifest spells element types ("" if unknown).
std::string manifestDType(mlir::Type type);

} // namespace trc

#endif
