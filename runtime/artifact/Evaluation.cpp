//===- Evaluation.cpp - run an artifact once (see Evaluation.h) ------------===//
#include "runtime/artifact/Evaluation.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/artifact/Session.h"
#include "runtime/formats/FileOps.h"
#include "runtime/formats/Manifest.h"
#include "runtime/formats/Npy.h"
#include "runtime/support/Names.h"
#include "runtime/support/Profiler.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace trc::rt {
namespace {

// mkdir -p.
Status makeDirs(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return Status::success();
    return Status::error(path + ": exists and is not a folder");
  }
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    if (Status s = makeDirs(path.substr(0, slash)); !s)
      return s;
  }
  if (::mkdir(path.c_str(), 0777) != 0 && errno != EEXIST)
    return Status::error(path + ": cannot create folder: " + std::strerror(errno));
  return Status::success();
}

// bf16 -> f32 (exact).
void widenBf16(const HostTensor &in, HostTensor &out) {
  const uint16_t *src = in.as<uint16_t>();
  float *dst = out.as<float>();
  for (int64_t i = 0; i < in.numElements(); ++i) {
    uint32_t bits = uint32_t(src[i]) << 16;
    std::memcpy(&dst[i], &bits, 4);
  }
}

} // namespace

Status evaluateArtifact(const std::string &artifactDir, Backend &backend,
                        const EvaluationOptions &options) {
  StatusOr<LoadedSession> opened = openSession(artifactDir, backend);
  if (!opened.ok())
    return opened.status();
  const std::unique_ptr<Artifact> &artifact = opened->artifact;
  const std::unique_ptr<Session> &session = opened->session;
  // One process holds one tensor rank's part of a split param; its
  // program's tensor-group collectives would have no peers.
  for (const Slot &slot : artifact->manifest().slots)
    if (slot.isSplit() && slot.split.degree > 1)
      return Status::error(artifactDir + ": " + slotKindName(slot.kind) + " '" +
                           percentEncode(slot.name) + "' is split over " +
                           std::to_string(slot.split.degree) +
                           " tensor ranks (a step compiled for tensor parallelism); evaluate "
                           "one compiled without it");

  for (const auto &[name, file] : options.inputs) {
    // Check the name before reading a possibly large file.
    if (!artifact->manifest().find(SlotKind::Input, name)) {
      HostTensor none;
      return Status::error(session->setInput(name, none).message());
    }
    StatusOr<HostTensor> value = readNpyFile(file);
    if (!value.ok())
      return Status::error("input '" + percentEncode(name) + "': " +
                           std::string(value.status().message()));
    if (Status s = session->setInput(name, *value); !s)
      return Status::error(s.message() + " (from " + file + ")");
  }
  if (Status s = session->run(); !s)
    return s;
  if (options.repeat > 0) {
    double total = 0, best = 1e300;
    if (options.profileSpans)
      Profiler::instance().start();
    for (int r = 0; r < options.repeat; ++r) {
      auto start = std::chrono::steady_clock::now();
      ProfileScope run("run", profile::kStep);
      Status s = session->run();
      run.end();
      if (!s) {
        if (options.profileSpans)
          Profiler::instance().stop(), Profiler::instance().takeSpans();
        return s;
      }
      double ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      total += ms;
      best = std::min(best, ms);
    }
    if (options.profileSpans) {
      Profiler::instance().stop();
      *options.profileSpans = Profiler::instance().takeSpans();
    }
    std::fprintf(stderr, "trc-run: %d runs, mean %.3f ms, best %.3f ms per run\n",
                 options.repeat, total / options.repeat, best);
  }

  // Fetch every output, then write them all to temporary files, then rename.
  std::vector<std::pair<std::string, HostTensor>> outputs;
  for (const Slot *slot : artifact->manifest().slotsOfKind(SlotKind::Output)) {
    StatusOr<HostTensor> output = session->getOutput(slot->name);
    if (!output.ok())
      return output.status();
    HostTensor value = *std::move(output);
    if (value.dtype == DType::BF16) {
      HostTensor wide;
      if (Status s = wide.allocate(DType::F32, value.shape); !s)
        return Status::error("output '" + percentEncode(slot->name) + "': " + s.message());
      widenBf16(value, wide);
      value = std::move(wide);
    }
    outputs.emplace_back(slot->name, std::move(value));
  }
  // A folder this run creates is removed again when its outputs fail.
  struct stat before;
  const bool created = ::stat(options.outputDir.c_str(), &before) != 0;
  if (Status s = makeDirs(options.outputDir); !s)
    return s;
  std::string dir = options.outputDir;
  if (dir.back() != '/')
    dir += '/';
  std::vector<std::pair<std::string, std::string>> written; // temp, final
  auto cleanup = [&]() {
    for (const auto &[temp, final] : written)
      ::unlink(temp.c_str());
    if (created)
      ::rmdir(options.outputDir.c_str()); // only if empty
  };
  std::string pid = std::to_string(::getpid());
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string finalPath = dir + outputFileName(outputs[i].first);
    std::string temp = dir + ".trc-run-" + pid + "-" + std::to_string(i) + ".tmp";
    if (Status s = writeNpyTemp(temp, finalPath, outputs[i].second); !s) {
      cleanup();
      return s;
    }
    written.emplace_back(temp, finalPath);
  }
  for (size_t i = 0; i < written.size(); ++i) {
    if (systemFileSystem().rename(written[i].first.c_str(), written[i].second.c_str()) != 0) {
      int e = errno;
      for (size_t j = 0; j < i; ++j)
        ::unlink(written[j].second.c_str());
      cleanup();
      return Status::error(written[i].second + ": cannot rename into place: " +
                           std::strerror(e));
    }
  }
  return fsyncDirectory(options.outputDir);
}

} // namespace trc::rt
