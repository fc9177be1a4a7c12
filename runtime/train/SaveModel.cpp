//===- SaveModel.cpp - the trained model as PyTorch and HF load it --------===//
//
// See SaveModel.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/SaveModel.h"

#include "runtime/formats/FileOps.h"
#include "runtime/formats/Json.h"
#include "runtime/formats/Safetensors.h"
#include "trc/Abi/AttrNames.h"

#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace trc::rt {
namespace fs = std::filesystem;

Status checkSaveModelTarget(const std::string &dir) {
  return checkOwnedFolder("--save-model", dir, kSavedModelRecord);
}

namespace {

std::string record(const SavedModel &m, const std::string &prefix,
                   const std::vector<std::string> &names) {
  std::string out = "{\"format\": \"trc-model 1\", \"source\": ";
  appendJsonString(out, m.source);
  out += ", \"step\": ";
  appendJsonInt(out, m.step);
  out += ", \"prefix_removed\": ";
  appendJsonString(out, prefix);
  out += ", \"hugging_face_config\": ";
  out += m.metadata.count(abi::kHfConfigMetadataKey) ? "true" : "false";
  out += ", \"tensors\": {";
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    out += i ? ", " : "";
    appendJsonString(out, names[i]);
    out += ": {\"dtype\": ";
    appendJsonString(out, dtypeName(m.tensors[i].tensor.dtype));
    out += ", \"shape\": [";
    for (size_t d = 0; d < m.tensors[i].tensor.shape.size(); ++d) {
      out += d ? ", " : "";
      appendJsonInt(out, m.tensors[i].tensor.shape[d]);
    }
    out += "]}";
  }
  return out + "}}\n";
}

} // namespace

Status saveModel(const SavedModel &m) {
  if (Status s = checkSaveModelTarget(m.dir); !s)
    return s;
  auto prefixIt = m.metadata.find(abi::kStateDictPrefixMetadataKey);
  const std::string prefix = prefixIt == m.metadata.end() ? "" : prefixIt->second;
  std::vector<std::string> names;
  std::vector<SafetensorsView> views;
  for (const NamedTensor &t : m.tensors) {
    bool prefixed = !prefix.empty() && t.name.compare(0, prefix.size(), prefix) == 0;
    names.push_back(prefixed ? t.name.substr(prefix.size()) : t.name);
    views.push_back({names.back(), t.tensor.dtype, t.tensor.shape, t.tensor.data()});
  }
  StatusOr<std::string> stagedOr = stageFolder(m.dir);
  if (!stagedOr.ok())
    return Status(stagedOr.status()).withPrefix("--save-model " + m.dir + ": ");
  const std::string staged = *stagedOr;
  std::error_code ec;
  auto fail = [&](const Status &s) {
    fs::remove_all(staged, ec);
    return s.withPrefix("--save-model " + m.dir + ": ");
  };
  if (Status s = writeSafetensorsFile(staged + "/" + kSavedModelTensors, views, {{"format", "pt"}});
      !s)
    return fail(s);
  if (auto config = m.metadata.find(abi::kHfConfigMetadataKey); config != m.metadata.end())
    if (Status s = writeFileAtomic(staged + "/" + kSavedModelConfig, config->second,
                                   systemFileSystem());
        !s)
      return fail(s);
  if (Status s = writeFileAtomic(staged + "/" + kSavedModelRecord, record(m, prefix, names),
                                 systemFileSystem());
      !s)
    return fail(s);
  // The old folder (one --save-model wrote) goes only once the new one is complete.
  if (Status s = replaceFolder(staged, m.dir); !s)
    return s.withPrefix("--save-model " + m.dir + ": ");
  return Status::success();
}

} // namespace trc::rt
