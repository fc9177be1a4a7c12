//===- RunHelpers.h - pieces shared by trc-run's two modes ------*- C++ -*-===//
//
// Evaluation (trc-run.cpp) and training (Train.cpp) both load an artifact
// into a session, and both may run one compiled in-process into a temporary
// folder that must go when the run ends.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TOOLS_TRC_RUN_RUNHELPERS_H
#define TRC_TOOLS_TRC_RUN_RUNHELPERS_H

#include "runtime/artifact/Artifact.h"
#include "runtime/formats/Bundle.h"
#include "runtime/formats/FileOps.h"
#include "runtime/formats/Manifest.h"
#include "runtime/artifact/Session.h"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

namespace trc {

/// `text` as a whole decimal integer of at least `lo`.
inline bool parseInt(const std::string &text, int64_t lo, int64_t &out) {
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo)
    return false;
  out = v;
  return true;
}

/// The device an artifact (folder or bundle) runs on under --device auto:
/// its manifest's target; "auto" for an .onnx model.
inline std::string deviceForArtifact(const std::string &path) {
  auto endsWith = [&](const char *suffix) {
    size_t n = std::char_traits<char>::length(suffix);
    return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
  };
  std::string text;
  rt::Manifest manifest;
  rt::Status read = endsWith(".trc")
                        ? rt::readBundleManifest(path, text)
                        : rt::readSmallFile(path + "/manifest.trc", rt::kMaxManifestBytes, text);
  if (!read || !rt::parseManifest(text, manifest))
    return "auto"; // loading reports the problem
  return manifest.target;
}

/// Removes the temporary folder around an artifact compiled in-process
/// (the artifact's parent) at scope exit; an empty path removes nothing.
struct RemoveTemporaryArtifact {
  std::string artifactDir;
  ~RemoveTemporaryArtifact() {
    std::error_code ignored;
    if (!artifactDir.empty())
      std::filesystem::remove_all(std::filesystem::path(artifactDir).parent_path(), ignored);
  }
};

/// Loads the artifact at `dir` for `backend` and creates its session.
inline rt::Status openSession(const std::string &dir, rt::Backend &backend,
                              std::unique_ptr<rt::Artifact> &artifact,
                              std::unique_ptr<rt::Session> &session,
                              int64_t shardIndex = 0) {
  if (rt::Status s = rt::Artifact::load(dir, backend.target(), artifact); !s)
    return s;
  return rt::Session::create(*artifact, backend, session, shardIndex);
}

} // namespace trc

#endif
