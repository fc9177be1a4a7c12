//===- PipelineIndex.h - pipeline.trc, the index of a pipeline artifact ----===//
//
// A pipeline artifact (docs/ARTIFACT.md "Pipeline artifacts") is a folder of
// ordinary artifacts, one per stage program, plus `pipeline.trc`: the stage
// count (ranks x chunks per rank), the programs and every transfer between
// stages. The compiler writes it (lib/Pipelines/PipelineArtifact.cpp, with
// formatPipelineIndex) and the runtime's executor reads it
// (readPipelineIndex), so both spell the file, its records and the stage
// folder and entry names here, once. MLIR-free.
//
//   trc-pipeline 1
//   ranks <R>
//   chunks <C>
//   program <stage> <kind> <folder>      one per stage and kind
//   transfer <id> forward|backward <from> <to>
//   end
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SPEC_PIPELINEINDEX_H
#define TRC_RUNTIME_SPEC_PIPELINEINDEX_H

#include "runtime/support/Status.h"
#include "trc/Abi/PipelineNames.h"

#include <string>
#include <string_view>
#include <vector>

namespace trc::rt {

/// The index file inside a pipeline artifact folder.
inline constexpr const char kPipelineIndexFile[] = "pipeline.trc";

/// The programs of every stage, in the order the index lists them (their
/// names are the phases of trc/Abi/PipelineNames.h).
inline constexpr const char *kStagePrograms[] = {abi::kForwardPhase, abi::kBackwardPhase,
                                                 abi::kWeightsPhase, abi::kNormPhase,
                                                 abi::kApplyPhase};

struct PipelineIndex {
  int ranks = 1, chunks = 1;
  struct Transfer {
    std::string id;
    bool backward = false;
    int from = 0, to = 0;
  };
  std::vector<Transfer> transfers;
  int stages() const { return ranks * chunks; }
};

/// "stage<s>_<program>": the function of the split module a stage program
/// is compiled from (its entry; abi::stageFunctionName).
std::string stageEntryName(int stage, std::string_view program);
/// "stage<s>/<program>": the stage program's artifact folder, relative to
/// the pipeline artifact's folder.
std::string stageFolderName(int stage, std::string_view program);

/// The text of pipeline.trc for `index` (a program record per stage and
/// kStagePrograms entry).
std::string formatPipelineIndex(const PipelineIndex &index);

/// Whether `dir` is a pipeline artifact (has pipeline.trc).
bool isPipelineArtifact(const std::string &dir);
/// DIR/pipeline.trc, checked (header, end record, transfers between stages
/// that exist); errors name the file and line.
StatusOr<PipelineIndex> readPipelineIndex(const std::string &dir);

} // namespace trc::rt

#endif // TRC_RUNTIME_SPEC_PIPELINEINDEX_H
