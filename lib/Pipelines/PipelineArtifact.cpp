//===- PipelineArtifact.cpp - a pipeline-split step -> artifact folders ----===//
//
// compilePipelineArtifact (Pipelines.h): one ordinary artifact per stage
// program (stage<s>/forward, backward, weights, norm and apply), each
// compiled from a copy of the module with that function as the entry, and
// the index `pipeline.trc` the runtime's executor reads (docs/ARTIFACT.md
// "Pipeline artifacts"): stage count, chunks per rank, the programs, and
// every transfer between stages.
// Preconditions: trc-pipeline-split and trc-build-train-step have run
// (module attributes trc.pipeline and trc.pipeline_transfers).
//
//===----------------------------------------------------------------------===//
#include "trc/Pipelines/Pipelines.h"
#include "ArtifactWriter.h"
#include "trc/Abi/AttrNames.h"
#include "trc/Abi/PipelineNames.h"

#include "runtime/spec/PipelineIndex.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace trc {

bool isPipelineModule(ModuleOp module) {
  return module->hasAttr(abi::kPipelineTransfersAttr);
}

LogicalResult compilePipelineArtifact(ModuleOp module, const CompileOptions &options,
                                      llvm::StringRef outPath, llvm::raw_ostream &log,
                                      CompileReport *report) {
  auto fail = [&](const llvm::Twine &message) {
    log << "error: " << outPath << ": " << message << "\n";
    return failure();
  };
  auto pipeline = module->getAttrOfType<DictionaryAttr>(abi::kPipelineAttr);
  auto transfers = module->getAttrOfType<ArrayAttr>(abi::kPipelineTransfersAttr);
  if (!pipeline || !transfers)
    return fail("the module is not split into pipeline stages (run trc-pipeline-split)");
  auto ranksAttr = pipeline.getAs<IntegerAttr>("stages");
  auto chunksAttr = pipeline.getAs<IntegerAttr>("virtual");
  int64_t ranks = ranksAttr ? ranksAttr.getInt() : 1, chunks = chunksAttr ? chunksAttr.getInt() : 1;
  if (auto ec = llvm::sys::fs::create_directories(outPath))
    return fail("cannot create the folder: " + ec.message());
  rt::PipelineIndex index;
  index.ranks = int(ranks);
  index.chunks = int(chunks);
  for (int s = 0; s < index.stages(); ++s)
    for (const char *kind : rt::kStagePrograms) {
      std::string entry = rt::stageEntryName(s, kind);
      if (!module.lookupSymbol<func::FuncOp>(entry))
        return fail("there is no function @" + entry);
      llvm::SmallString<256> out(outPath);
      llvm::sys::path::append(out, rt::stageFolderName(s, kind));
      if (auto ec = llvm::sys::fs::create_directories(llvm::sys::path::parent_path(out)))
        return fail("cannot create " + llvm::sys::path::parent_path(out) + ": " + ec.message());
      OwningOpRef<ModuleOp> copy = module.clone();
      CompileOptions programOptions = options;
      programOptions.entry = entry;
      programOptions.program = "stage " + std::to_string(s) + " " + kind; // names its memory line
      if (failed(compileToArtifact(*copy, programOptions, out, log, nullptr, report)))
        return failure();
    }
  for (Attribute a : transfers) {
    auto t = cast<DictionaryAttr>(a);
    index.transfers.push_back(
        {t.getAs<StringAttr>(abi::kTransferIdKey).getValue().str(),
         t.getAs<StringAttr>(abi::kTransferPhaseKey).getValue() == abi::kBackwardPhase,
         int(t.getAs<IntegerAttr>(abi::kTransferFromKey).getInt()),
         int(t.getAs<IntegerAttr>(abi::kTransferToKey).getInt())});
  }
  llvm::SmallString<256> indexPath(outPath);
  llvm::sys::path::append(indexPath, rt::kPipelineIndexFile);
  std::string error;
  if (!writeArtifactFile(indexPath.str().str(), rt::formatPipelineIndex(index), error))
    return fail(error);
  return success();
}

} // namespace trc
