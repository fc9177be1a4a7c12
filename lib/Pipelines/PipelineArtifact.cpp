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

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace trc {

bool isPipelineModule(ModuleOp module) {
  return module->hasAttr("trc.pipeline_transfers");
}

LogicalResult compilePipelineArtifact(ModuleOp module, const CompileOptions &options,
                                      llvm::StringRef outPath, llvm::raw_ostream &log) {
  auto fail = [&](const llvm::Twine &message) {
    log << "error: " << outPath << ": " << message << "\n";
    return failure();
  };
  auto pipeline = module->getAttrOfType<DictionaryAttr>("trc.pipeline");
  auto transfers = module->getAttrOfType<ArrayAttr>("trc.pipeline_transfers");
  if (!pipeline || !transfers)
    return fail("the module is not split into pipeline stages (run trc-pipeline-split)");
  auto ranksAttr = pipeline.getAs<IntegerAttr>("stages");
  auto chunksAttr = pipeline.getAs<IntegerAttr>("virtual");
  int64_t ranks = ranksAttr ? ranksAttr.getInt() : 1, chunks = chunksAttr ? chunksAttr.getInt() : 1;
  if (auto ec = llvm::sys::fs::create_directories(outPath))
    return fail("cannot create the folder: " + ec.message());
  std::string index;
  llvm::raw_string_ostream os(index);
  os << "trc-pipeline 1\nranks " << ranks << "\nchunks " << chunks << "\n";
  for (int64_t s = 0; s < ranks * chunks; ++s)
    for (const char *kind : {"forward", "backward", "weights", "norm", "apply"}) {
      std::string entry = "stage" + std::to_string(s) + "_" + kind;
      if (!module.lookupSymbol<func::FuncOp>(entry))
        return fail("there is no function @" + entry);
      std::string folder = "stage" + std::to_string(s) + "/" + kind;
      llvm::SmallString<256> out(outPath);
      llvm::sys::path::append(out, folder);
      if (auto ec = llvm::sys::fs::create_directories(llvm::sys::path::parent_path(out)))
        return fail("cannot create " + llvm::sys::path::parent_path(out) + ": " + ec.message());
      OwningOpRef<ModuleOp> copy = module.clone();
      CompileOptions programOptions = options;
      programOptions.entry = entry;
      log << "stage " << s << " " << kind << ":\n";
      if (failed(compileToArtifact(*copy, programOptions, out, log)))
        return failure();
      os << "program " << s << " " << kind << " " << folder << "\n";
    }
  for (Attribute a : transfers) {
    auto t = cast<DictionaryAttr>(a);
    os << "transfer " << t.getAs<StringAttr>("id").getValue() << " "
       << t.getAs<StringAttr>("phase").getValue() << " "
       << t.getAs<IntegerAttr>("from").getInt() << " " << t.getAs<IntegerAttr>("to").getInt()
       << "\n";
  }
  os << "end\n";
  llvm::SmallString<256> indexPath(outPath);
  llvm::sys::path::append(indexPath, "pipeline.trc");
  std::error_code ec;
  llvm::raw_fd_ostream file(indexPath, ec);
  if (ec)
    return fail("cannot write pipeline.trc: " + ec.message());
  file << index;
  return success();
}

} // namespace trc
