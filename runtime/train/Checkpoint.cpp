//===- Checkpoint.cpp - atomic, checksummed training checkpoints ------------===//
//
// state.json encoding and strict decoding, the atomic save sequence, and
// verified loading (see Checkpoint.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Checkpoint.h"

#include "runtime/formats/Checksum.h"
#include "runtime/formats/Json.h"
#include "runtime/support/Parse.h"
#include "runtime/support/Version.h"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace trc::rt {

namespace fs = std::filesystem;

namespace {

constexpr const char *kTensorsFile = "tensors.safetensors";
constexpr const char *kStateFile = "state.json";
constexpr const char *kLatestFile = "latest";
// The start of state.json's last member; its value is a spelled Checksum.
constexpr const char *kChecksumLine = "  \"checksum\": \"";

std::string stepName(int64_t step) { return "step-" + std::to_string(step); }

// "step-<digits>" -> the number; false for anything else.
bool parseStepName(std::string_view name, int64_t &step) {
  if (name.substr(0, 5) != "step-")
    return false;
  std::optional<uint64_t> v = parseUint64(name.substr(5), INT64_MAX);
  if (v)
    step = int64_t(*v);
  return v.has_value();
}

std::string baseName(const std::string &path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

//===----------------------------------------------------------------------===//
// state.json
//===----------------------------------------------------------------------===//

std::string encodeState(const CheckpointState &st, uint64_t tensorBytes,
                        const Checksum &tensorHash) {
  std::string j = "{\n";
  j += "  \"format\": \"trc-checkpoint\",\n";
  j += "  \"format_version\": ";
  appendJsonInt(j, kCheckpointFormatVersion);
  j += ",\n  \"trc_version\": ";
  appendJsonString(j, kTrcVersion);
  j += ",\n  \"step\": ";
  appendJsonInt(j, st.step);
  j += ",\n  \"data\": {\"position\": ";
  appendJsonInt(j, st.data.position);
  j += ", \"epoch\": ";
  appendJsonInt(j, st.data.epoch);
  j += ", \"batch_tokens\": ";
  appendJsonInt(j, st.data.batchTokens);
  j += ", \"num_tokens\": ";
  appendJsonInt(j, st.data.numTokens);
  j += ", \"shuffle\": ";
  j += st.data.shuffle ? "true" : "false";
  j += ", \"seed\": ";
  appendJsonUint(j, st.data.seed);
  j += "},\n  \"rng\": {\"seed\": ";
  appendJsonUint(j, st.seed);
  j += ", \"state\": [";
  for (size_t i = 0; i < st.rng.size(); ++i) {
    if (i)
      j += ", ";
    appendJsonUint(j, st.rng[i]);
  }
  j += "]},\n  \"config\": {";
  bool first = true;
  for (const auto &kv : st.config) {
    j += first ? "\n    " : ",\n    ";
    first = false;
    appendJsonString(j, kv.first);
    j += ": ";
    appendJsonString(j, kv.second);
  }
  j += first ? "},\n" : "\n  },\n";
  j += "  \"metrics\": {";
  for (size_t i = 0; i < st.metrics.size(); ++i) {
    j += i ? ", " : "";
    appendJsonString(j, st.metrics[i].first);
    j += ": ";
    appendJsonDouble(j, st.metrics[i].second); // null when not finite
  }
  j += "},\n";
  j += "  \"tensors\": {\"file\": \"";
  j += kTensorsFile;
  j += "\", \"bytes\": ";
  appendJsonUint(j, tensorBytes);
  j += ", \"checksum\": \"" + formatChecksum(tensorHash) + "\"},\n";
  Checksum h = checksumOf(ChecksumKind::Xxh3, j.data(), j.size());
  j += kChecksumLine + formatChecksum(h) + "\"\n}\n";
  return j;
}

// Strict reader of one object's keys: every key must be known.
class Fields {
public:
  Fields(const std::string &where, const JsonValue &object)
      : where_(where), object_(object) {}

  Status only(std::initializer_list<const char *> keys) const {
    for (const auto &m : object_.members()) {
      bool known = false;
      for (const char *k : keys)
        known |= m.first == k;
      if (!known)
        return Status::error(where_ + "unexpected key '" + m.first + "'");
    }
    for (const char *k : keys)
      if (!object_.find(k))
        return Status::error(where_ + "missing key '" + k + "'");
    return Status::success();
  }
  Status int64(const char *key, int64_t &out, int64_t min = 0) const {
    const JsonValue *v = object_.find(key);
    if (!v || !v->asInt64(out) || out < min)
      return Status::error(where_ + "'" + key + "' must be an integer >= " +
                           std::to_string(min));
    return Status::success();
  }
  Status uint64(const char *key, uint64_t &out) const {
    const JsonValue *v = object_.find(key);
    if (!v || !v->asUint64(out))
      return Status::error(where_ + "'" + key +
                           "' must be an unsigned 64-bit integer");
    return Status::success();
  }
  Status string(const char *key, std::string &out) const {
    const JsonValue *v = object_.find(key);
    if (!v || !v->isString())
      return Status::error(where_ + "'" + key + "' must be a string");
    out = v->text();
    return Status::success();
  }
  Status boolean(const char *key, bool &out) const {
    const JsonValue *v = object_.find(key);
    if (!v || !v->isBool())
      return Status::error(where_ + "'" + key + "' must be true or false");
    out = v->boolValue();
    return Status::success();
  }
  Status object(const char *key, const JsonValue *&out) const {
    out = object_.find(key);
    if (!out || !out->isObject())
      return Status::error(where_ + "'" + key + "' must be an object");
    return Status::success();
  }

private:
  std::string where_;
  const JsonValue &object_;
};

#define TRC_TRY(expr)                                                          \
  do {                                                                         \
    if (Status _s = (expr); !_s)                                               \
      return _s;                                                               \
  } while (0)

Status decodeState(const std::string &text, const std::string &path,
                   CheckpointState &st, uint64_t &tensorBytes,
                   Checksum &tensorHash) {
  // The self-checksum first: any flipped byte fails here. Its spelling
  // names the function (xxh3:, or fnv1a64: in format_version 1).
  size_t at = text.rfind(std::string("\n") + kChecksumLine);
  if (at == std::string::npos)
    return Status::error(path + ": no checksum line (the file is truncated "
                                "or not a trc checkpoint state)");
  size_t valueAt = at + 1 + std::strlen(kChecksumLine);
  size_t quote = text.find('"', valueAt);
  Checksum want;
  if (quote == std::string::npos ||
      !parseChecksum(std::string_view(text).substr(valueAt, quote - valueAt),
                     want))
    return Status::error(path + ": malformed checksum line");
  if (text.compare(quote, std::string::npos, "\"\n}\n") != 0)
    return Status::error(path + ": unexpected bytes after the checksum line");
  Checksum got = checksumOf(want.kind, text.data(), at + 1);
  if (got != want)
    return Status::error(path + ": checksum mismatch (" +
                         checksumKindName(want.kind) + " " +
                         toHex16(got.value) + ", recorded " +
                         toHex16(want.value) + "): the file is corrupt");

  StatusOr<JsonValue> parsed = parseJson(text);
  if (!parsed.ok())
    return Status::error(path + ": " + std::string(parsed.status().message()));
  const JsonValue &root = *parsed;
  if (!root.isObject())
    return Status::error(path + ": not a JSON object");
  std::string where = path + ": ";
  Fields top(where, root);
  std::string format;
  TRC_TRY(top.string("format", format));
  if (format != "trc-checkpoint")
    return Status::error(where + "'format' is '" + format +
                         "', not 'trc-checkpoint'");
  int64_t version = 0;
  TRC_TRY(top.int64("format_version", version));
  if (version < kOldestCheckpointFormatVersion ||
      version > kCheckpointFormatVersion)
    return Status::error(where + "format_version " + std::to_string(version) +
                         " is not supported (this trc reads " +
                         std::to_string(kOldestCheckpointFormatVersion) +
                         " to " + std::to_string(kCheckpointFormatVersion) +
                         ")");
  // Format 3 added "metrics"; the keys are exactly the version's.
  if (version >= 3)
    TRC_TRY(top.only({"format", "format_version", "trc_version", "step", "data", "rng", "config",
                      "metrics", "tensors", "checksum"}));
  else if (root.find("metrics"))
    return Status::error(where + "'metrics' is not part of format_version " +
                         std::to_string(version));
  else
    TRC_TRY(top.only({"format", "format_version", "trc_version", "step", "data", "rng", "config",
                      "tensors", "checksum"}));
  TRC_TRY(top.string("trc_version", st.trcVersion));
  TRC_TRY(top.int64("step", st.step));

  const JsonValue *data, *rng, *config, *tensors;
  TRC_TRY(top.object("data", data));
  Fields d(where + "data: ", *data);
  TRC_TRY(d.only({"position", "epoch", "batch_tokens", "num_tokens",
                  "shuffle", "seed"}));
  TRC_TRY(d.int64("position", st.data.position));
  TRC_TRY(d.int64("epoch", st.data.epoch));
  TRC_TRY(d.int64("batch_tokens", st.data.batchTokens));
  TRC_TRY(d.int64("num_tokens", st.data.numTokens));
  TRC_TRY(d.boolean("shuffle", st.data.shuffle));
  TRC_TRY(d.uint64("seed", st.data.seed));

  TRC_TRY(top.object("rng", rng));
  Fields r(where + "rng: ", *rng);
  TRC_TRY(r.only({"seed", "state"}));
  TRC_TRY(r.uint64("seed", st.seed));
  const JsonValue *words = rng->find("state");
  if (!words->isArray())
    return Status::error(where + "rng: 'state' must be an array");
  st.rng.clear();
  for (const JsonValue &w : words->elements()) {
    uint64_t v;
    if (!w.asUint64(v))
      return Status::error(where + "rng: 'state' must hold unsigned 64-bit "
                                   "integers");
    st.rng.push_back(v);
  }

  TRC_TRY(top.object("config", config));
  st.config.clear();
  for (const auto &kv : config->members()) {
    if (!kv.second.isString())
      return Status::error(where + "config: '" + kv.first +
                           "' must be a string");
    st.config[kv.first] = kv.second.text();
  }

  // Format 3 records the step's metrics (numbers, or null); earlier ones none.
  st.metrics.clear();
  if (version >= 3) {
    const JsonValue *metrics;
    TRC_TRY(top.object("metrics", metrics));
    for (const auto &kv : metrics->members()) {
      double value = std::nan("");
      if (!kv.second.isNull() && !kv.second.asDouble(value))
        return Status::error(where + "metrics: '" + kv.first + "' must be a number or null");
      st.metrics.emplace_back(kv.first, value);
    }
  }

  TRC_TRY(top.object("tensors", tensors));
  Fields t(where + "tensors: ", *tensors);
  // Format 1 recorded the FNV-1a 64 as bare hex under "fnv1a64"; format 2
  // a spelled checksum under "checksum".
  const char *hashKey = version == 1 ? "fnv1a64" : "checksum";
  TRC_TRY(t.only({"file", "bytes", hashKey}));
  std::string file, hash;
  TRC_TRY(t.string("file", file));
  if (file != kTensorsFile)
    return Status::error(where + "tensors: 'file' is '" + file + "', not '" +
                         kTensorsFile + "'");
  TRC_TRY(t.uint64("bytes", tensorBytes));
  TRC_TRY(t.string(hashKey, hash));
  if (version == 1) {
    tensorHash.kind = ChecksumKind::Fnv1a64;
    if (!parseHex16(hash, tensorHash.value))
      return Status::error(where + "tensors: 'fnv1a64' is not 16 lower-case "
                                   "hex digits");
  } else if (!parseChecksum(hash, tensorHash)) {
    return Status::error(where + "tensors: 'checksum' is not xxh3:<16 "
                                 "lower-case hex digits>");
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Saving
//===----------------------------------------------------------------------===//

// Removes a folder tree; false (and a message) on failure.
bool removeTree(const std::string &path, std::string *why = nullptr) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec && why)
    *why = path + ": cannot remove: " + ec.message();
  return !ec;
}

Status writeInto(const std::string &temp, const CheckpointState &state,
                 const std::vector<SafetensorsView> &tensors,
                 FileSystemHooks &hooks) {
  SafetensorsMetadata meta{{"format", "trc-checkpoint"},
                           {"step", std::to_string(state.step)}};
  FileWriter tw;
  TRC_TRY(tw.open(temp + "/" + kTensorsFile, hooks));
  TRC_TRY(writeSafetensors(tw, tensors, meta));
  uint64_t bytes = tw.bytesWritten();
  Checksum hash = tw.checksum();
  TRC_TRY(tw.finish());

  FileWriter sw;
  TRC_TRY(sw.open(temp + "/" + kStateFile, hooks));
  TRC_TRY(sw.append(encodeState(state, bytes, hash)));
  TRC_TRY(sw.finish());
  return fsyncDirectory(temp);
}

// Moves the finished temp folder to `target`, swapping out an existing one.
Status install(const std::string &temp, const std::string &target,
               bool targetIsLatest, FileSystemHooks &hooks) {
  struct stat st;
  if (::lstat(target.c_str(), &st) != 0) {
    if (hooks.rename(temp.c_str(), target.c_str()) != 0)
      return Status::error(target + ": cannot rename " + temp + ": " +
                           std::strerror(errno));
    return Status::success();
  }
  if (::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, target.c_str(),
                  RENAME_EXCHANGE) == 0) {
    removeTree(temp); // now the old folder
    return Status::success();
  }
  int e = errno;
  if (targetIsLatest)
    return Status::error(target + ": cannot replace the latest checkpoint "
                                  "(renameat2: " +
                         std::strerror(e) + ")");
  // A leftover folder that `latest` does not name: remove it first.
  std::string why;
  if (!removeTree(target, &why))
    return Status::error(why);
  if (hooks.rename(temp.c_str(), target.c_str()) != 0)
    return Status::error(target + ": cannot rename " + temp + ": " +
                         std::strerror(errno));
  return Status::success();
}

std::string readLatestName(const std::string &dir) {
  StatusOr<std::string> read = readSmallFile(dir + "/" + kLatestFile, 64);
  if (!read.ok())
    return "";
  std::string text = *std::move(read);
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

void prune(const std::string &dir, int64_t keepLast, int64_t justSaved, int64_t keepStep,
           CheckpointSaveResult &result) {
  std::error_code ec;
  std::string latest = readLatestName(dir);
  std::vector<int64_t> steps;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    int64_t step;
    if (parseStepName(name, step)) {
      steps.push_back(step);
    } else if (name.rfind(".tmp-step-", 0) == 0 ||
               name.rfind("latest.tmp-", 0) == 0) {
      std::string why;
      if (!removeTree(dir + "/" + name, &why))
        result.warnings.push_back(why);
    }
  }
  if (keepLast <= 0)
    return;
  std::sort(steps.rbegin(), steps.rend());
  int64_t kept = 0;
  for (int64_t step : steps) {
    std::string name = stepName(step);
    if (step == justSaved || name == latest || step == keepStep) {
      continue;
    }
    if (kept < keepLast - 1) {
      ++kept;
      continue;
    }
    std::string why;
    if (!removeTree(dir + "/" + name, &why))
      result.warnings.push_back(why);
  }
}

} // namespace

Status saveCheckpoint(const std::string &dir, const CheckpointState &state,
                      const std::vector<SafetensorsView> &tensors,
                      const CheckpointWriteOptions &options,
                      CheckpointSaveResult *result) {
  FileSystemHooks &hooks = options.fs ? *options.fs : systemFileSystem();
  CheckpointSaveResult local;
  CheckpointSaveResult &res = result ? *result : local;
  res = CheckpointSaveResult();
  if (state.step < 0)
    return Status::error("checkpoint step must not be negative, got " +
                         std::to_string(state.step));
  std::string name = stepName(state.step);
  std::string target = dir + "/" + name;
  std::string latest = readLatestName(dir);
  std::string intact =
      latest.empty() ? std::string(" (no earlier checkpoint)")
                     : "; the previous checkpoint " + dir + "/" + latest +
                           " is intact";

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec))
    return Status::error(dir + ": cannot create the checkpoint folder" +
                         (ec ? ": " + ec.message() : std::string()));

  std::string temp =
      dir + "/.tmp-" + name + "-" + std::to_string(::getpid());
  removeTree(temp);
  if (::mkdir(temp.c_str(), 0755) != 0)
    return Status::error(temp + ": cannot create: " + std::strerror(errno) +
                         intact);
  Status s = writeInto(temp, state, tensors, hooks);
  if (s)
    s = install(temp, target, latest == name, hooks);
  if (!s) {
    removeTree(temp);
    return Status::error("checkpoint " + target + " not saved: " +
                         s.message() + intact);
  }
  s = fsyncDirectory(dir);
  if (s)
    s = writeFileAtomic(dir + "/" + kLatestFile, name + "\n", hooks);
  if (!s) {
    // `latest` may or may not have been renamed: keep the folder if it
    // names it, else remove the folder (space matters on a full disk).
    if (readLatestName(dir) != name)
      removeTree(target);
    return Status::error("checkpoint " + target + " not saved: " +
                         s.message() + intact);
  }
  res.path = target;
  prune(dir, options.keepLast, state.step, options.keepStep, res);
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

StatusOr<std::string> latestCheckpoint(const std::string &dir) {
  std::string path = dir + "/" + kLatestFile;
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return Status::error(dir + ": no such checkpoint folder");
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT)
    return Status::error(path + ": missing (no checkpoint in " + dir + ")");
  StatusOr<std::string> text = readSmallFile(path, 64);
  if (!text.ok())
    return text.status();
  std::string name = *text;
  if (!name.empty() && name.back() == '\n')
    name.pop_back();
  int64_t step;
  if (!parseStepName(name, step))
    return Status::error(path + ": malformed (expected 'step-<N>')");
  std::string folder = dir + "/" + name;
  if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::error(path + ": names " + folder +
                         ", which does not exist");
  return folder;
}

StatusOr<int64_t> latestCheckpointStep(const std::string &dir) {
  StatusOr<std::string> folder = latestCheckpoint(dir);
  if (!folder.ok())
    return folder.status();
  int64_t step = 0;
  parseStepName(std::string_view(*folder).substr(dir.size() + 1), step); // checked above
  return step;
}

constexpr const char *kBestFile = "best";

Status writeBestCheckpoint(const std::string &dir, const BestCheckpoint &best) {
  char value[32];
  std::snprintf(value, sizeof value, "%.17g", best.value);
  return writeFileAtomic(dir + "/" + kBestFile,
                         stepName(best.step) + " " + best.metric + " " + value + "\n",
                         systemFileSystem());
}

StatusOr<std::optional<BestCheckpoint>> readBestCheckpoint(const std::string &dir) {
  const std::string path = dir + "/" + kBestFile;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT)
    return std::optional<BestCheckpoint>();
  StatusOr<std::string> text = readSmallFile(path, 256);
  if (!text.ok())
    return text.status();
  std::istringstream in(*text);
  std::string name, metric, value;
  BestCheckpoint best;
  char *end = nullptr;
  if (!(in >> name >> metric >> value) || !parseStepName(name, best.step) ||
      (best.value = std::strtod(value.c_str(), &end), end != value.c_str() + value.size()))
    return Status::error(path + ": malformed (expected 'step-<N> METRIC VALUE')");
  best.metric = metric;
  return std::optional<BestCheckpoint>(best);
}

StatusOr<std::string> checkpointFolder(const std::string &path) {
  struct stat st;
  if (::stat((path + "/" + kLatestFile).c_str(), &st) == 0)
    return latestCheckpoint(path);
  return path;
}

namespace {

// Reads and verifies state.json and tensors.safetensors of a folder; the
// mapped tensors file and its index stay in `file` and `index`.
Status openCheckpoint(const std::string &folder, CheckpointState &state,
                      MappedFile &file, SafetensorsIndex &index,
                      std::string &tensorsPath) {
  std::string statePath = folder + "/" + kStateFile;
  StatusOr<std::string> text = readSmallFile(statePath, kMaxCheckpointStateBytes);
  if (!text.ok())
    return text.status();
  uint64_t bytes = 0;
  Checksum hash;
  CheckpointState st;
  TRC_TRY(decodeState(*text, statePath, st, bytes, hash));
  int64_t folderStep;
  if (parseStepName(baseName(folder), folderStep) && folderStep != st.step)
    return Status::error(statePath + ": step " + std::to_string(st.step) +
                         " does not match the folder name " +
                         baseName(folder));

  tensorsPath = folder + "/" + kTensorsFile;
  TRC_TRY(file.open(tensorsPath));
  if (file.size() != bytes)
    return Status::error(tensorsPath + ": is " + std::to_string(file.size()) +
                         " bytes, state.json records " +
                         std::to_string(bytes) + " (the file is " +
                         (file.size() < bytes ? "truncated" : "corrupt") +
                         ")");
  Checksum got = checksumOf(hash.kind, file.data(), file.size());
  if (got != hash)
    return Status::error(tensorsPath + ": checksum mismatch (" +
                         checksumKindName(hash.kind) + " " +
                         toHex16(got.value) + ", state.json records " +
                         toHex16(hash.value) + "): the file is corrupt");
  StatusOr<SafetensorsIndex> parsed = parseSafetensorsIndex(file.bytes(), tensorsPath);
  if (!parsed.ok())
    return parsed.status();
  index = *std::move(parsed);
  state = std::move(st);
  return Status::success();
}

} // namespace

StatusOr<CheckpointContents> readCheckpoint(const std::string &folder) {
  CheckpointContents result;
  MappedFile file;
  SafetensorsIndex index;
  std::string path;
  TRC_TRY(openCheckpoint(folder, result.state, file, index, path));
  result.tensors.resize(index.tensors.size());
  for (size_t i = 0; i < index.tensors.size(); ++i) {
    result.tensors[i].name = index.tensors[i].name;
    StatusOr<HostTensor> tensor =
        readSafetensorsTensor(file.bytes(), path, index, index.tensors[i]);
    if (!tensor.ok())
      return tensor.status();
    result.tensors[i].tensor = *std::move(tensor);
  }
  return result;
}

Status checkCheckpointConfig(const std::string &folder,
                             const CheckpointState &saved,
                             const std::map<std::string, std::string> &run,
                             const std::map<std::string, std::string> &flags) {
  std::string path = folder + "/" + kStateFile;
  for (const auto &kv : run) {
    auto it = saved.config.find(kv.first);
    if (it == saved.config.end())
      return Status::error(path + ": the checkpoint has no config '" +
                           kv.first + "' (this run has '" + kv.second + "')");
    if (it->second != kv.second) {
      auto flag = flags.find(kv.first);
      return Status::error(path + ": config '" + kv.first + "'" +
                           (flag != flags.end() ? " (" + flag->second + ")" : "") + " is '" +
                           it->second + "' in the checkpoint, '" + kv.second +
                           "' in this run");
    }
  }
  return Status::success();
}

} // namespace trc::rt
