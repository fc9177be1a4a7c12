//===- PipelineIndex.cpp - pipeline.trc, the index of a pipeline artifact --===//
//
// See PipelineIndex.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/spec/PipelineIndex.h"

#include "runtime/formats/FileOps.h"

#include <filesystem>
#include <sstream>

namespace trc::rt {

std::string stageEntryName(int stage, std::string_view program) {
  return abi::stageFunctionName(stage, program);
}

std::string stageFolderName(int stage, std::string_view program) {
  return abi::stageName(stage) + "/" + std::string(program);
}

std::string formatPipelineIndex(const PipelineIndex &index) {
  std::ostringstream os;
  os << "trc-pipeline 1\nranks " << index.ranks << "\nchunks " << index.chunks << "\n";
  for (int s = 0; s < index.stages(); ++s)
    for (const char *program : kStagePrograms)
      os << "program " << s << " " << program << " " << stageFolderName(s, program) << "\n";
  for (const PipelineIndex::Transfer &t : index.transfers)
    os << "transfer " << t.id << " " << (t.backward ? abi::kBackwardPhase : abi::kForwardPhase)
       << " " << t.from << " " << t.to << "\n";
  os << "end\n";
  return os.str();
}

bool isPipelineArtifact(const std::string &dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir + "/" + kPipelineIndexFile, ec);
}

StatusOr<PipelineIndex> readPipelineIndex(const std::string &dir) {
  std::string path = dir + "/" + kPipelineIndexFile;
  StatusOr<std::string> text = readSmallFile(path, 1 << 20);
  if (!text.ok())
    return text.status();
  std::istringstream in(*text);
  PipelineIndex index;
  std::string line;
  int number = 0;
  bool ended = false, headed = false;
  while (std::getline(in, line)) {
    ++number;
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    auto bad = [&] {
      return Status::error(path + ":" + std::to_string(number) + ": bad record '" + line + "'");
    };
    if (key == "trc-pipeline") {
      int version = 0;
      if (!(fields >> version) || version != 1)
        return bad();
      headed = true;
    } else if (key == "ranks") {
      if (!(fields >> index.ranks) || index.ranks < 1)
        return bad();
    } else if (key == "chunks") {
      if (!(fields >> index.chunks) || index.chunks < 1)
        return bad();
    } else if (key == "program") {
      continue; // the folders follow from the stage and the program's name
    } else if (key == "transfer") {
      PipelineIndex::Transfer t;
      std::string phase;
      if (!(fields >> t.id >> phase >> t.from >> t.to) ||
          (phase != abi::kForwardPhase && phase != abi::kBackwardPhase))
        return bad();
      t.backward = phase == abi::kBackwardPhase;
      index.transfers.push_back(t);
    } else if (key == "end") {
      ended = true;
      break;
    } else if (!key.empty()) {
      return bad();
    }
  }
  if (!headed || !ended)
    return Status::error(path + ": not a complete pipeline index (trc-pipeline 1 ... end)");
  for (const auto &t : index.transfers)
    if (t.from < 0 || t.to < 0 || t.from >= index.stages() || t.to >= index.stages())
      return Status::error(path + ": transfer " + t.id + " names a stage outside 0.." +
                           std::to_string(index.stages() - 1));
  return index;
}

} // namespace trc::rt
