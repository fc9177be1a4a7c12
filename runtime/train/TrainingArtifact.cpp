//===- TrainingArtifact.cpp - training.trc, written and read ----------------===//
#include "runtime/train/TrainingArtifact.h"

#include "runtime/formats/FileOps.h"
#include "runtime/support/InterruptCleanup.h"
#include "runtime/support/Names.h"
#include "runtime/support/Parse.h"

#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

namespace trc::rt {

using rt::Status;

namespace {
constexpr size_t kMaxInfoBytes = 1 << 16;

} // namespace

bool isTrainingArtifact(const std::string &dir) {
  struct stat st;
  return ::stat((dir + "/" + kTrainingInfoFile).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status writeTrainingInfo(const std::string &dir, const TrainingArtifactInfo &info) {
  std::ostringstream out;
  out << "trc-training 1\n"
      << "inputs " << rt::percentEncode(info.inputs) << "\n"
      << "targets " << rt::percentEncode(info.targets) << "\n"
      << "targets_window " << (info.targetsAreWindow ? "same" : "next") << "\n"
      << "vocab " << info.vocab << "\n"
      << "batch " << info.batch << "\n"
      << "seq " << info.seq << "\n"
      << "grad_accum " << info.gradAccum << "\n"
      << "ranks " << info.ranks << "\n"
      << "parallel " << rt::percentEncode(info.parallel) << "\n";
  for (const auto &[key, value] : info.settings)
    out << "setting " << key << " " << rt::percentEncode(value) << "\n";
  return rt::writeFileAtomic(dir + "/" + kTrainingInfoFile, out.str(), rt::systemFileSystem());
}

StatusOr<TrainingArtifactInfo> readTrainingInfo(const std::string &dir) {
  std::string path = dir + "/" + kTrainingInfoFile;
  StatusOr<std::string> text = rt::readSmallFile(path, kMaxInfoBytes);
  if (!text.ok())
    return Status::error(std::string(text.status().message()) + // names the file
                         " (save a training step with trc-run MODEL.onnx ... --save-artifact DIR)");
  TrainingArtifactInfo info;
  std::istringstream lines(*text);
  std::string line;
  int number = 0;
  bool header = false;
  auto bad = [&](const std::string &why) {
    return Status::error(path + ":" + std::to_string(number) + ": " + why);
  };
  while (std::getline(lines, line)) {
    ++number;
    std::istringstream fields(line);
    std::string key, value, extra;
    fields >> key >> value;
    if (number == 1) {
      if (key != "trc-training" || value != "1")
        return bad("not a training step description (expected 'trc-training 1')");
      header = true;
      continue;
    }
    if (key.empty())
      continue;
    std::string decoded, problem;
    auto name = [&](std::string &out) {
      if (!rt::percentDecode(value, out, problem))
        return bad("bad " + key + " field: " + problem);
      return Status::success();
    };
    auto count = [&](int64_t min, int64_t &out) {
      std::optional<int64_t> parsed = parseInt64(value, min);
      if (!parsed)
        return bad("'" + key + "' expects an integer >= " + std::to_string(min) + ", got '" +
                   rt::percentEncode(value) + "'");
      out = *parsed;
      return Status::success();
    };
    Status s = Status::success();
    if (key == "inputs")
      s = name(info.inputs);
    else if (key == "targets")
      s = name(info.targets);
    else if (key == "targets_window") {
      if (value != "same" && value != "next")
        s = bad("'targets_window' expects same or next, got '" + rt::percentEncode(value) + "'");
      info.targetsAreWindow = value == "same";
    } else if (key == "parallel")
      s = value.empty() ? Status::success() : name(info.parallel);
    else if (key == "vocab")
      s = count(0, info.vocab);
    else if (key == "batch")
      s = count(1, info.batch);
    else if (key == "seq")
      s = count(1, info.seq);
    else if (key == "grad_accum")
      s = count(1, info.gradAccum);
    else if (key == "ranks")
      s = count(1, info.ranks);
    else if (key == "setting") {
      std::string setting = value;
      value.clear(); // an empty setting has no field
      fields >> value;
      s = name(decoded);
      info.settings[setting] = decoded;
    } else
      s = bad("unknown key '" + rt::percentEncode(key) + "'");
    if (!s)
      return s;
  }
  if (!header)
    return bad("empty (expected 'trc-training 1')");
  if (info.inputs.empty() || info.targets.empty() || info.batch == 0 || info.seq == 0)
    return Status::error(path + ": incomplete (inputs, targets, batch and seq are required)");
  return info;
}

Status installTrainingArtifact(const std::string &built, const std::string &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Stage the new step beside `dir` (a rename across file systems falls
  // back to a copy), so that installing it is a rename in one folder.
  std::string staging = dir + ".saving";
  fs::remove_all(staging, ec);
  // A failure (a full disk) or an interrupt leaves no half-written staging.
  InterruptCleanupGuard interrupted(staging);
  auto fail = [&](const Status &s) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    return s;
  };
  if (systemFileSystem().rename(built.c_str(), staging.c_str()) != 0) {
    ec.clear();
    fs::copy(built, staging, fs::copy_options::recursive, ec);
    if (ec)
      return fail(Status::error("cannot write " + staging + ": " + ec.message()));
  }
  if (Status s = fsyncDirectory(parentDirectory(staging)); !s)
    return fail(s);
  // Swap the old step and the new one in one step (renameat2's
  // RENAME_EXCHANGE), so there is never a moment with no step at `dir`;
  // where there is no old step, a plain rename.
  bool exists = fs::exists(dir, ec);
  if (exists) {
    if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0)
      return fail(Status::error("cannot replace " + dir + " with " + staging + ": " +
                                std::strerror(errno)));
    fs::remove_all(staging, ec); // now the old step
  } else if (systemFileSystem().rename(staging.c_str(), dir.c_str()) != 0) {
    return fail(Status::error(std::string("cannot rename ") + staging + " into place: " +
                              std::strerror(errno)));
  }
  return fsyncDirectory(parentDirectory(dir));
}

} // namespace trc::rt
