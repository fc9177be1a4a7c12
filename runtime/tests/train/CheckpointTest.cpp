//===- CheckpointTest.cpp - atomic, checksummed checkpoints -----------------===//
//
// Round trips (tensors, state, config), state.json's exact layout, pruning
// to the last K, replacing a folder, every corruption we can make (each
// byte of state.json and of tensors.safetensors flipped, every truncation,
// missing files, forged-but-signed contents; a failed read returns
// nothing), old format_version 1 checkpoints (FNV-1a 64), the disk filling
// up at every point of a save (simulated
// through FileSystemHooks, and for real on a tiny tmpfs when the test may
// mount one), and a resumed toy training run that continues bit for bit.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Checkpoint.h"

#include "runtime/formats/Checksum.h"
#include "runtime/train/DataLoader.h"
#include "runtime/formats/Json.h"
#include "runtime/train/LrSchedule.h"
#include "runtime/support/Version.h"

#include "FailingFileSystem.h"
#include "StatusTesting.h"
#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/mount.h>
#include <unistd.h>

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace trc::rt;
using trc::rt::test::errorOf;
using trc::rt::test::FailingFs;
using trc::rt::test::readFile;
using trc::rt::test::TempDir;
using trc::rt::test::writeFile;

namespace {

// The tensors of a small model with Adam state.
struct Model {
  std::vector<float> w = std::vector<float>(6), b = std::vector<float>(2);
  std::vector<float> mw = std::vector<float>(6), vw = std::vector<float>(6);
  int64_t t = 0;
  uint8_t mask[3] = {1, 0, 1};

  explicit Model(float seed = 0) {
    for (size_t i = 0; i < 6; ++i) {
      w[i] = seed + float(i);
      mw[i] = seed * 0.5f - float(i);
      vw[i] = seed * 0.25f + float(i * i);
    }
    b = {seed - 1, seed + 1};
    t = int64_t(seed * 10);
  }
  std::vector<SafetensorsView> views() const {
    return {{"w", DType::F32, {3, 2}, w.data()},
            {"b", DType::F32, {2}, b.data()},
            {"adam.m.w", DType::F32, {3, 2}, mw.data()},
            {"adam.v.w", DType::F32, {3, 2}, vw.data()},
            {"adam.t", DType::I64, {}, &t},
            {"mask", DType::I1, {3}, mask}};
  }
  // Their buffers, to load into (in the order of views()).
  std::vector<void *> buffers() {
    return {w.data(), b.data(), mw.data(), vw.data(), &t, mask};
  }
  bool operator==(const Model &o) const {
    return w == o.w && b == o.b && mw == o.mw && vw == o.vw && t == o.t &&
           std::memcmp(mask, o.mask, 3) == 0;
  }
};

CheckpointState stateAt(int64_t step) {
  CheckpointState s;
  s.step = step;
  s.data.position = step * 64;
  s.data.epoch = step / 7;
  s.data.batchTokens = 64;
  s.data.numTokens = 100000;
  s.data.shuffle = true;
  s.data.seed = 18446744073709551615ull;
  s.seed = 1234;
  s.rng = {1, 18446744073709551615ull, uint64_t(step)};
  s.config = {{"model", "gpt2.onnx"}, {"lr", "0.001"}, {"q\"uote", "a\\b\n"}};
  return s;
}

void expectSameState(const CheckpointState &a, const CheckpointState &b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.data.position, b.data.position);
  EXPECT_EQ(a.data.epoch, b.data.epoch);
  EXPECT_EQ(a.data.batchTokens, b.data.batchTokens);
  EXPECT_EQ(a.data.numTokens, b.data.numTokens);
  EXPECT_EQ(a.data.shuffle, b.data.shuffle);
  EXPECT_EQ(a.data.seed, b.data.seed);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.rng, b.rng);
  EXPECT_EQ(a.config, b.config);
}

Status save(const std::string &dir, int64_t step, const Model &m,
            CheckpointWriteOptions opt = {}) {
  return saveCheckpoint(dir, stateAt(step), m.views(), opt);
}

// readCheckpoint, then the tensors copied into `m` (each of the model's
// present with its dtype and shape, no other), as trc-run resumes.
Status loadInto(const std::string &folder, Model &m, CheckpointState &st) {
  StatusOr<CheckpointContents> read = readCheckpoint(folder);
  if (!read.ok())
    return read.status();
  const std::vector<NamedTensor> &tensors = read->tensors;
  std::vector<SafetensorsView> views = m.views();
  std::vector<void *> buffers = m.buffers();
  if (tensors.size() != views.size())
    return Status::error("expected " + std::to_string(views.size()) +
                         " tensors, got " + std::to_string(tensors.size()));
  for (size_t i = 0; i < views.size(); ++i) {
    const SafetensorsView &v = views[i];
    auto it = std::find_if(tensors.begin(), tensors.end(),
                           [&](const NamedTensor &t) { return t.name == v.name; });
    if (it == tensors.end() || it->tensor.dtype != v.dtype ||
        it->tensor.shape != v.shape)
      return Status::error("tensor '" + v.name + "' is missing or different");
    std::memcpy(buffers[i], it->tensor.data(), it->tensor.byteSize());
  }
  st = std::move(read->state);
  return Status::success();
}

std::string loadError(const std::string &folder) {
  Model m(99);
  CheckpointState st;
  Status s = loadInto(folder, m, st);
  return s ? std::string() : s.message();
}

// Re-signs a state.json whose body was edited (with XXH3, as trc does, or
// with FNV-1a 64 as format_version 1 did).
std::string resign(const std::string &text,
                   ChecksumKind kind = ChecksumKind::Xxh3) {
  size_t at = text.rfind("\n  \"checksum\"");
  std::string body = text.substr(0, at + 1);
  return body + "  \"checksum\": \"" +
         formatChecksum(checksumOf(kind, body.data(), body.size())) +
         "\"\n}\n";
}

// state.json without its "metrics" line (format 3's addition).
std::string withoutMetrics(std::string text) {
  size_t at = text.find("  \"metrics\": {");
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos)
    text.erase(at, text.find('\n', at) + 1 - at);
  return text;
}

// A format_version 3 state.json rewritten as trc wrote format_version 1
// before XXH3 (and metrics): the tensors' FNV-1a 64 as bare hex under
// "fnv1a64", and the file's own checksum "fnv1a64:<hex>".
std::string asFormat1(const std::string &state, const std::string &tensors) {
  std::string text = withoutMetrics(state);
  size_t at = text.find("\"format_version\": 3,");
  EXPECT_NE(at, std::string::npos);
  text.replace(at, 20, "\"format_version\": 1,");
  std::string key = "\"checksum\": \"xxh3:";
  at = text.find(key);
  EXPECT_NE(at, std::string::npos);
  text.replace(at, key.size() + 16,
               "\"fnv1a64\": \"" +
                   toHex16(fnv1a64(tensors.data(), tensors.size())));
  return resign(text, ChecksumKind::Fnv1a64);
}

std::string replaced(std::string text, const std::string &from,
                     const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  return text;
}

// Names in a folder (sorted).
std::vector<std::string> entries(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// After a failed save of step 2: step 1 is latest, loads, and nothing else
// is left in the folder.
void expectStep1Intact(const std::string &dir, const Model &m1) {
  TRC_ASSERT_OK_AND_ASSIGN(std::string folder, latestCheckpoint(dir));
  EXPECT_EQ(folder, dir + "/step-1");
  Model got(77);
  CheckpointState st;
  Status s = loadInto(folder, got, st);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(got == m1);
  EXPECT_EQ(st.step, 1);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-1"}));
}

} // namespace

TEST(Checkpoint, SavesAndLoads) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  Model m(3);
  CheckpointSaveResult result;
  Status s = saveCheckpoint(dir, stateAt(10), m.views(), {}, &result);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(result.path, dir + "/step-10");
  EXPECT_TRUE(result.warnings.empty());
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-10"}));
  EXPECT_EQ(entries(dir + "/step-10"),
            (std::vector<std::string>{"state.json", "tensors.safetensors"}));
  EXPECT_EQ(readFile(dir + "/latest"), "step-10\n");

  TRC_ASSERT_OK_AND_ASSIGN(std::string folder, latestCheckpoint(dir));
  EXPECT_EQ(folder, dir + "/step-10");
  Model got(0);
  CheckpointState st;
  s = loadInto(folder, got, st);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(got == m);
  expectSameState(st, stateAt(10));
  EXPECT_EQ(st.trcVersion, kTrcVersion);

  // Every tensor, with its name, dtype and shape.
  TRC_ASSERT_OK_AND_ASSIGN(CheckpointContents contents, readCheckpoint(folder));
  const std::vector<NamedTensor> &tensors = contents.tensors;
  ASSERT_EQ(tensors.size(), 6u);
  std::vector<SafetensorsView> views = m.views();
  for (const SafetensorsView &v : views) {
    auto it = std::find_if(tensors.begin(), tensors.end(),
                           [&](const NamedTensor &t) { return t.name == v.name; });
    ASSERT_NE(it, tensors.end()) << v.name;
    EXPECT_EQ(it->tensor.dtype, v.dtype) << v.name;
    EXPECT_EQ(it->tensor.shape, v.shape) << v.name;
  }

  // tensors.safetensors is a plain safetensors file.
  TRC_ASSERT_OK_AND_ASSIGN(SafetensorsContents file,
                           readSafetensorsFile(folder + "/tensors.safetensors"));
  EXPECT_EQ(file.metadata.at("format"), "trc-checkpoint");
  EXPECT_EQ(file.metadata.at("step"), "10");
}

// The step's metrics are written in their order, a non-finite one as null,
// and read back (format 3).
TEST(Checkpoint, MetricsRoundTrip) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  Model m(1);
  CheckpointState st = stateAt(7);
  st.metrics = {{"loss", 3.25}, {"grad_norm", std::nan("")}, {"eval_loss", 0.1}};
  ASSERT_TRUE(saveCheckpoint(dir, st, m.views()));
  EXPECT_THAT(readFile(dir + "/step-7/state.json"),
              HasSubstr("  \"metrics\": {\"loss\": 3.25, \"grad_norm\": null, "
                        "\"eval_loss\": 0.1},\n"));
  TRC_ASSERT_OK_AND_ASSIGN(CheckpointContents read, readCheckpoint(dir + "/step-7"));
  ASSERT_EQ(read.state.metrics.size(), 3u);
  std::map<std::string, double> byName(read.state.metrics.begin(), read.state.metrics.end());
  EXPECT_EQ(byName["loss"], 3.25);
  EXPECT_TRUE(std::isnan(byName["grad_norm"]));
  EXPECT_EQ(byName["eval_loss"], 0.1);
}

TEST(Checkpoint, StateJsonLayout) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  Model m(1);
  ASSERT_TRUE(save(dir, 5, m));
  std::string tensors = readFile(dir + "/step-5/tensors.safetensors");
  std::string body =
      std::string("{\n"
                  "  \"format\": \"trc-checkpoint\",\n"
                  "  \"format_version\": 3,\n"
                  "  \"trc_version\": \"") +
      kTrcVersion +
      "\",\n"
      "  \"step\": 5,\n"
      "  \"data\": {\"position\": 320, \"epoch\": 0, \"batch_tokens\": 64, "
      "\"num_tokens\": 100000, \"shuffle\": true, \"seed\": "
      "18446744073709551615},\n"
      "  \"rng\": {\"seed\": 1234, \"state\": [1, 18446744073709551615, 5]},\n"
      "  \"config\": {\n"
      "    \"lr\": \"0.001\",\n"
      "    \"model\": \"gpt2.onnx\",\n"
      "    \"q\\\"uote\": \"a\\\\b\\n\"\n"
      "  },\n"
      "  \"metrics\": {},\n"
      "  \"tensors\": {\"file\": \"tensors.safetensors\", \"bytes\": " +
      std::to_string(tensors.size()) + ", \"checksum\": \"xxh3:" +
      toHex16(xxh3_64(tensors.data(), tensors.size())) + "\"},\n";
  std::string want = body + "  \"checksum\": \"xxh3:" +
                     toHex16(xxh3_64(body.data(), body.size())) + "\"\n}\n";
  std::string got = readFile(dir + "/step-5/state.json");
  EXPECT_EQ(got, want);
  EXPECT_TRUE(parseJson(got).ok());

  // An empty config and no RNG words.
  CheckpointState st = stateAt(6);
  st.config.clear();
  st.rng.clear();
  ASSERT_TRUE(saveCheckpoint(dir, st, m.views()));
  got = readFile(dir + "/step-6/state.json");
  EXPECT_THAT(got,
              HasSubstr("\"state\": []},\n  \"config\": {},\n  \"metrics\": {},\n  \"tensors\""));
  TRC_ASSERT_OK_AND_ASSIGN(CheckpointContents back, readCheckpoint(dir + "/step-6"));
  expectSameState(back.state, st);
}

TEST(Checkpoint, KeepsTheLastK) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  CheckpointWriteOptions opt;
  opt.keepLast = 2;
  for (int64_t step = 1; step <= 5; ++step)
    ASSERT_TRUE(save(dir, step * 10, Model(float(step)), opt));
  EXPECT_EQ(entries(dir),
            (std::vector<std::string>{"latest", "step-40", "step-50"}));
  opt.keepLast = 1;
  ASSERT_TRUE(save(dir, 60, Model(6), opt));
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-60"}));
  opt.keepLast = 0; // keep all
  ASSERT_TRUE(save(dir, 70, Model(7), opt));
  ASSERT_TRUE(save(dir, 80, Model(8), opt));
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-60",
                                                    "step-70", "step-80"}));
  // Leftovers of crashed saves are removed by the next save.
  std::filesystem::create_directory(dir + "/.tmp-step-90-999999");
  writeFile(dir + "/latest.tmp-999999", "x");
  ASSERT_TRUE(save(dir, 90, Model(9), opt));
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-60",
                                                    "step-70", "step-80",
                                                    "step-90"}));
}

TEST(Checkpoint, KeepsTheBestBesidesTheLastK) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  CheckpointWriteOptions opt;
  opt.keepLast = 1;
  opt.keepStep = 20;
  for (int64_t step = 1; step <= 4; ++step)
    ASSERT_TRUE(save(dir, step * 10, Model(float(step)), opt));
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"latest", "step-20", "step-40"}));
  // D/best: written and read back; none before; malformed is an error.
  TRC_ASSERT_OK_AND_ASSIGN(std::optional<BestCheckpoint> none, readBestCheckpoint(dir));
  EXPECT_FALSE(none);
  ASSERT_TRUE(writeBestCheckpoint(dir, BestCheckpoint{20, "eval_loss", 0.1}).ok());
  TRC_ASSERT_OK_AND_ASSIGN(std::optional<BestCheckpoint> best, readBestCheckpoint(dir));
  ASSERT_TRUE(best);
  EXPECT_EQ(best->step, 20);
  EXPECT_EQ(best->metric, "eval_loss");
  EXPECT_EQ(best->value, 0.1); // %.17g round-trips
  for (const char *bad : {"step-x eval_loss 1\n", "step-2 eval_loss\n", "step-2 eval_loss 1x\n"}) {
    writeFile(dir + "/best", bad);
    StatusOr<std::optional<BestCheckpoint>> read = readBestCheckpoint(dir);
    ASSERT_FALSE(read.ok()) << bad;
    EXPECT_THAT(read.status().message(), HasSubstr("best: malformed (expected 'step-<N> METRIC VALUE')"));
  }
}

TEST(Checkpoint, ReplacesAnExistingFolder) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  ASSERT_TRUE(save(dir, 5, Model(1)));
  // The latest checkpoint saved again: swapped in whole.
  Model m2(2);
  ASSERT_TRUE(save(dir, 5, m2));
  Model got;
  CheckpointState st;
  ASSERT_TRUE(loadInto(dir + "/step-5", got, st));
  EXPECT_TRUE(got == m2);
  // A leftover step folder that `latest` does not name.
  std::filesystem::create_directory(dir + "/step-7");
  writeFile(dir + "/step-7/junk", "junk");
  Model m3(3);
  ASSERT_TRUE(save(dir, 7, m3));
  EXPECT_EQ(entries(dir + "/step-7"),
            (std::vector<std::string>{"state.json", "tensors.safetensors"}));
  ASSERT_TRUE(loadInto(dir + "/step-7", got, st));
  EXPECT_TRUE(got == m3);
  EXPECT_EQ(entries(dir),
            (std::vector<std::string>{"latest", "step-5", "step-7"}));
}

TEST(Checkpoint, ReportsMissingPieces) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  EXPECT_EQ(errorOf(latestCheckpoint(dir)), dir + ": no such checkpoint folder");
  std::filesystem::create_directory(dir);
  EXPECT_EQ(errorOf(latestCheckpoint(dir)),
            dir + "/latest: missing (no checkpoint in " + dir + ")");
  writeFile(dir + "/latest", "garbage\n");
  EXPECT_EQ(errorOf(latestCheckpoint(dir)), dir + "/latest: malformed (expected 'step-<N>')");
  writeFile(dir + "/latest", "step-99\n");
  EXPECT_EQ(errorOf(latestCheckpoint(dir)),
            dir + "/latest: names " + dir + "/step-99, which does not exist");
  writeFile(dir + "/latest", std::string(100, 'x'));
  EXPECT_THAT(errorOf(latestCheckpoint(dir)),
              HasSubstr("/latest: is 100 bytes, more than the limit of 64"));

  ASSERT_TRUE(save(dir, 3, Model(1)));
  std::string f = dir + "/step-3";
  std::filesystem::rename(f + "/tensors.safetensors", f + "/t.bak");
  EXPECT_EQ(loadError(f),
            f + "/tensors.safetensors: cannot open: No such file or directory");
  std::filesystem::rename(f + "/t.bak", f + "/tensors.safetensors");
  std::filesystem::remove(f + "/state.json");
  EXPECT_EQ(loadError(f),
            f + "/state.json: cannot open: No such file or directory");
  EXPECT_EQ(loadError(dir + "/step-4"),
            dir + "/step-4/state.json: cannot open: No such file or directory");
  writeFile(f + "/state.json", std::string((16 << 20) + 1, ' '));
  EXPECT_THAT(loadError(f),
              HasSubstr(f + "/state.json: is 16777217 bytes, more than "
                            "the limit of 16777216"));
}

TEST(Checkpoint, DetectsEveryFlippedOrTruncatedByte) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  ASSERT_TRUE(save(dir, 3, Model(1)));
  std::string f = dir + "/step-3";
  std::string statePath = f + "/state.json";
  std::string tensorsPath = f + "/tensors.safetensors";
  std::string state = readFile(statePath);
  std::string tensors = readFile(tensorsPath);

  for (size_t i = 0; i < state.size(); ++i) {
    std::string bad = state;
    bad[i] ^= 0x04;
    writeFile(statePath, bad);
    std::string msg = loadError(f);
    ASSERT_THAT(msg, StartsWith(statePath + ": "))
        << "byte " << i << ": " << msg;
  }
  for (size_t n = 0; n < state.size(); ++n) {
    writeFile(statePath, state.substr(0, n));
    std::string msg = loadError(f);
    ASSERT_THAT(msg, StartsWith(statePath + ": "))
        << "length " << n << ": " << msg;
  }
  writeFile(statePath, state);
  EXPECT_EQ(loadError(f), "");
  writeFile(statePath, state.substr(0, state.size() - 3));
  EXPECT_EQ(loadError(f), statePath + ": unexpected bytes after the checksum "
                                      "line");
  writeFile(statePath, state + " ");
  EXPECT_EQ(loadError(f), statePath + ": unexpected bytes after the checksum "
                                      "line");
  writeFile(statePath, replaced(state, "\"format\"", "\"formaT\""));
  EXPECT_THAT(loadError(f),
              HasSubstr(statePath + ": checksum mismatch (xxh3 "));
  EXPECT_THAT(loadError(f), HasSubstr("): the file is corrupt"));
  writeFile(statePath, state);

  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string bad = tensors;
    bad[i] ^= 0x10;
    writeFile(tensorsPath, bad);
    std::string msg = loadError(f);
    ASSERT_THAT(msg, StartsWith(tensorsPath + ": checksum mismatch"))
        << "byte " << i << ": " << msg;
  }
  writeFile(tensorsPath, tensors.substr(0, tensors.size() - 1));
  EXPECT_EQ(loadError(f), tensorsPath + ": is " +
                              std::to_string(tensors.size() - 1) +
                              " bytes, state.json records " +
                              std::to_string(tensors.size()) +
                              " (the file is truncated)");
  writeFile(tensorsPath, tensors + "x");
  EXPECT_THAT(loadError(f), HasSubstr("(the file is corrupt)"));
  writeFile(tensorsPath, tensors);
  EXPECT_EQ(loadError(f), "");
}

TEST(Checkpoint, RejectsSignedButWrongState) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  ASSERT_TRUE(save(dir, 3, Model(1)));
  std::string f = dir + "/step-3";
  std::string statePath = f + "/state.json";
  std::string state = readFile(statePath);
  auto withState = [&](const std::string &text) {
    writeFile(statePath, text);
    return loadError(f);
  };
  std::string p = statePath + ": ";
  EXPECT_EQ(withState(resign(replaced(state, "\"step\": 3", "\"step\": 4"))),
            p + "step 4 does not match the folder name step-3");
  EXPECT_EQ(withState(resign(replaced(state, "\"format_version\": 3",
                                      "\"format_version\": 4"))),
            p + "format_version 4 is not supported (this trc reads 1 to 3)");
  EXPECT_EQ(withState(resign(replaced(state, "\"format_version\": 3",
                                      "\"format_version\": 0"))),
            p + "format_version 0 is not supported (this trc reads 1 to 3)");
  // Metrics are format 3's: numbers or null, and not in format 2.
  EXPECT_EQ(withState(resign(replaced(state, "\"metrics\": {}", "\"metrics\": {\"loss\": \"x\"}"))),
            p + "metrics: 'loss' must be a number or null");
  EXPECT_EQ(withState(resign(replaced(state, "\"format_version\": 3",
                                      "\"format_version\": 2"))),
            p + "'metrics' is not part of format_version 2");
  EXPECT_EQ(withState(resign(replaced(state, "\"trc-checkpoint\"",
                                      "\"other\""))),
            p + "'format' is 'other', not 'trc-checkpoint'");
  EXPECT_EQ(withState(resign(replaced(state, "  \"step\"", "  \"extra\": 1,\n"
                                                           "  \"step\""))),
            p + "unexpected key 'extra'");
  EXPECT_EQ(withState(resign(replaced(state, "  \"step\": 3,\n", ""))),
            p + "missing key 'step'");
  EXPECT_EQ(withState(resign(replaced(state, "\"step\": 3", "\"step\": -3"))),
            p + "'step' must be an integer >= 0");
  EXPECT_EQ(withState(resign(replaced(state, "\"step\": 3", "\"step\": 3.0"))),
            p + "'step' must be an integer >= 0");
  EXPECT_EQ(withState(resign(replaced(state, "\"epoch\": 0", "\"epoch\": \"0\""))),
            p + "data: 'epoch' must be an integer >= 0");
  EXPECT_EQ(withState(resign(replaced(state, "\"shuffle\": true",
                                      "\"shuffle\": 1"))),
            p + "data: 'shuffle' must be true or false");
  EXPECT_EQ(withState(resign(replaced(state, ", \"shuffle\": true", ""))),
            p + "data: missing key 'shuffle'");
  EXPECT_EQ(withState(resign(replaced(state, "[1, 18446744073709551615",
                                      "[1, 18446744073709551616"))),
            p + "rng: 'state' must hold unsigned 64-bit integers");
  EXPECT_EQ(withState(resign(replaced(state, "\"seed\": 1234",
                                      "\"seed\": -1"))),
            p + "rng: 'seed' must be an unsigned 64-bit integer");
  EXPECT_EQ(withState(resign(replaced(state, "\"lr\": \"0.001\"",
                                      "\"lr\": 0.001"))),
            p + "config: 'lr' must be a string");
  EXPECT_EQ(withState(resign(replaced(state, "\"file\": \"tensors.safetensors\"",
                                      "\"file\": \"../x\""))),
            p + "tensors: 'file' is '../x', not 'tensors.safetensors'");
  EXPECT_EQ(withState(resign(replaced(state, "\"checksum\": \"xxh3:",
                                      "\"checksum\": \"xxh3:X"))),
            p + "tensors: 'checksum' is not xxh3:<16 lower-case hex digits>");
  // Format 2 names the tensors' checksum "checksum", format 1 "fnv1a64".
  EXPECT_EQ(withState(resign(replaced(state, "\"checksum\": \"xxh3:",
                                      "\"fnv1a64\": \"xxh3:"))),
            p + "tensors: unexpected key 'fnv1a64'");
  EXPECT_EQ(withState(resign(replaced(withoutMetrics(state), "\"format_version\": 3",
                                      "\"format_version\": 1"))),
            p + "tensors: unexpected key 'checksum'");
  EXPECT_THAT(withState(resign(replaced(state, "\"step\": 3,", "\"step\": 3"))),
              HasSubstr(p + "expected ',' or '}' at byte"));
  EXPECT_EQ(withState("{}\n"),
            p + "no checksum line (the file is truncated or not a trc "
                "checkpoint state)");
  EXPECT_THAT(withState(resign(replaced(state, "\"config\": {",
                                        "\"config\": {\"lr\": \"x\", "))),
              HasSubstr(p + "duplicate key \"lr\" at byte "));
  writeFile(statePath, state);
  EXPECT_EQ(loadError(f), "");

  // A tensors file that matches a forged record but is not safetensors.
  std::string tensorsPath = f + "/tensors.safetensors";
  std::string junk = "not a safetensors file";
  writeFile(tensorsPath, junk);
  std::string tensors = readFile(tensorsPath);
  std::string forged = state;
  size_t at = forged.find("\"bytes\": ");
  size_t end = forged.find(",", at);
  forged.replace(at, end - at, "\"bytes\": " + std::to_string(junk.size()));
  at = forged.find("\"checksum\": \"xxh3:") + 18;
  forged.replace(at, 16, toHex16(xxh3_64(junk.data(), junk.size())));
  EXPECT_THAT(withState(resign(forged)),
              HasSubstr(tensorsPath + ": header length "));
  EXPECT_THAT(withState(resign(forged)), HasSubstr(" is more than the limit"));
}

// Checkpoints written before XXH3 (format_version 1, FNV-1a 64 checksums)
// still load, and corruption of either file is still detected.
TEST(Checkpoint, Format1CheckpointsWithFnvChecksumsStillLoad) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  Model m(4);
  ASSERT_TRUE(save(dir, 3, m));
  std::string f = dir + "/step-3";
  std::string statePath = f + "/state.json";
  std::string tensorsPath = f + "/tensors.safetensors";
  std::string tensors = readFile(tensorsPath);
  std::string old = asFormat1(readFile(statePath), tensors);
  EXPECT_THAT(old, HasSubstr("\"format_version\": 1,"));
  EXPECT_THAT(old, HasSubstr(", \"fnv1a64\": \"" +
                             toHex16(fnv1a64(tensors.data(), tensors.size())) +
                             "\"},\n  \"checksum\": \"fnv1a64:"));
  writeFile(statePath, old);

  Model got(0);
  CheckpointState st;
  Status s = loadInto(f, got, st);
  ASSERT_TRUE(s) << s.message();
  EXPECT_TRUE(got == m);
  expectSameState(st, stateAt(3));

  // A flipped byte of state.json: its own FNV-1a 64 no longer matches.
  writeFile(statePath, replaced(old, "\"format\"", "\"formaT\""));
  EXPECT_THAT(loadError(f),
              HasSubstr(statePath + ": checksum mismatch (fnv1a64 "));
  // A flipped byte of the tensors: the recorded FNV-1a 64 no longer matches.
  writeFile(statePath, old);
  std::string bad = tensors;
  bad[bad.size() / 2] ^= 0x10;
  writeFile(tensorsPath, bad);
  EXPECT_EQ(loadError(f),
            tensorsPath + ": checksum mismatch (fnv1a64 " +
                toHex16(fnv1a64(bad.data(), bad.size())) +
                ", state.json records " +
                toHex16(fnv1a64(tensors.data(), tensors.size())) +
                "): the file is corrupt");
  writeFile(tensorsPath, tensors);
  EXPECT_EQ(loadError(f), "");
  std::string p = statePath + ": ";
  writeFile(statePath, resign(replaced(old, "\"fnv1a64\": \"",
                                       "\"fnv1a64\": \"xxh3:"),
                              ChecksumKind::Fnv1a64));
  EXPECT_EQ(loadError(f), p + "tensors: 'fnv1a64' is not 16 lower-case hex "
                              "digits");

  // Saving again writes format 3 with XXH3.
  ASSERT_TRUE(save(dir, 3, m));
  EXPECT_THAT(readFile(statePath), HasSubstr("\"format_version\": 3,"));
  EXPECT_THAT(readFile(statePath), HasSubstr("\"checksum\": \"xxh3:"));
}

// A failed read returns nothing: the caller's state and tensors stay as
// they were.
TEST(Checkpoint, AFailedReadReturnsNothing) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  ASSERT_TRUE(save(dir, 3, Model(1)));
  std::string f = dir + "/step-3";
  std::string tensorsPath = f + "/tensors.safetensors";
  std::string tensors = readFile(tensorsPath);
  tensors[tensors.size() - 1] ^= 1;
  writeFile(tensorsPath, tensors);
  Status s = readCheckpoint(f).status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), StartsWith(tensorsPath + ": checksum mismatch"));
}

TEST(Checkpoint, ChecksTheRunsConfig) {
  CheckpointState saved = stateAt(3);
  EXPECT_TRUE(checkCheckpointConfig("d/step-3", saved, {}));
  EXPECT_TRUE(checkCheckpointConfig("d/step-3", saved,
                                    {{"model", "gpt2.onnx"}, {"lr", "0.001"}}));
  EXPECT_EQ(checkCheckpointConfig("d/step-3", saved, {{"lr", "0.01"}})
                .message(),
            "d/step-3/state.json: config 'lr' is '0.001' in the checkpoint, "
            "'0.01' in this run");
  EXPECT_EQ(checkCheckpointConfig("d/step-3", saved, {{"batch_size", "8"}})
                .message(),
            "d/step-3/state.json: the checkpoint has no config 'batch_size' "
            "(this run has '8')");
  EXPECT_EQ(checkCheckpointConfig("d/step-3", saved, {{"lr", "0.01"}}, {{"lr", "--lr"}})
                .message(),
            "d/step-3/state.json: config 'lr' (--lr) is '0.001' in the checkpoint, "
            "'0.01' in this run");
}

TEST(Checkpoint, RejectsBadSaves) {
  TempDir tmp;
  Model m(1);
  CheckpointState st = stateAt(-1);
  EXPECT_EQ(saveCheckpoint(tmp.file("c"), st, m.views()).message(),
            "checkpoint step must not be negative, got -1");
  writeFile(tmp.file("file"), "x");
  EXPECT_THAT(
      save(tmp.file("file"), 1, m).message(),
      HasSubstr(tmp.file("file") + ": cannot create the checkpoint folder"));
  std::vector<SafetensorsView> views = m.views();
  views.push_back(views[0]);
  Status s = saveCheckpoint(tmp.file("c"), stateAt(1), views);
  EXPECT_THAT(s.message(), HasSubstr("duplicate tensor name 'w'"));
  EXPECT_THAT(s.message(), HasSubstr("(no earlier checkpoint)"));
  EXPECT_EQ(entries(tmp.file("c")), std::vector<std::string>{});
}

// The disk fills up after every possible number of bytes of a save, and
// each fsync and rename fails in turn: step 1 stays the latest, loads,
// and nothing of step 2 is left.
TEST(Checkpoint, DiskFullLeavesThePreviousCheckpoint) {
  TempDir tmp;
  std::string dir = tmp.file("ckpt");
  Model m1(1), m2(2);
  ASSERT_TRUE(save(dir, 1, m1));

  FailingFs probe; // a save that succeeds, to count bytes and calls
  TempDir other;
  ASSERT_TRUE(save(other.file("c"), 2, m2, {0, &probe}));
  ASSERT_GT(probe.written, 500u);
  EXPECT_EQ(probe.fsyncs, 3);  // tensors, state.json, latest
  EXPECT_EQ(probe.renames, 2); // the folder, latest

  // Every budget near the start and the file boundaries, others sampled.
  uint64_t tensorsSize =
      std::filesystem::file_size(other.file("c") + "/step-2/tensors.safetensors");
  uint64_t stateSize =
      std::filesystem::file_size(other.file("c") + "/step-2/state.json");
  std::vector<uint64_t> budgets;
  for (uint64_t b = 0; b < probe.written; b += b < 64 ? 1 : 13)
    budgets.push_back(b);
  for (uint64_t edge : {tensorsSize, tensorsSize + stateSize, probe.written})
    for (uint64_t b = edge - 2; b <= edge + 1; ++b)
      if (b < probe.written)
        budgets.push_back(b);
  for (uint64_t budget : budgets) {
    FailingFs fs;
    fs.budget = int64_t(budget);
    Status s = save(dir, 2, m2, {0, &fs});
    ASSERT_FALSE(s) << "budget " << budget;
    ASSERT_THAT(s.message(),
                StartsWith("checkpoint " + dir + "/step-2 not saved: "))
        << s.message();
    ASSERT_THAT(s.message(),
                HasSubstr(": write failed: No space left on device; "
                          "the previous checkpoint " +
                          dir + "/step-1 is intact"))
        << s.message();
    expectStep1Intact(dir, m1);
  }
  for (int i = 0; i < probe.fsyncs; ++i) {
    FailingFs fs;
    fs.failFsyncAt = i;
    Status s = save(dir, 2, m2, {0, &fs});
    ASSERT_FALSE(s);
    EXPECT_THAT(s.message(),
                HasSubstr("fsync failed: Input/output error; the previous "
                          "checkpoint"));
    expectStep1Intact(dir, m1);
  }
  for (int i = 0; i < probe.renames; ++i) {
    FailingFs fs;
    fs.failRenameAt = i;
    Status s = save(dir, 2, m2, {0, &fs});
    ASSERT_FALSE(s);
    EXPECT_THAT(s.message(), HasSubstr(": cannot rename "));
    EXPECT_THAT(s.message(),
                HasSubstr("No space left on device; the previous checkpoint"));
    expectStep1Intact(dir, m1);
  }
  // With space again, the save goes through.
  ASSERT_TRUE(save(dir, 2, m2));
  TRC_ASSERT_OK_AND_ASSIGN(std::string folder, latestCheckpoint(dir));
  EXPECT_EQ(folder, dir + "/step-2");
}

// The same on a real, tiny tmpfs (needs the right to mount: root).
TEST(Checkpoint, RealDiskFullOnTmpfs) {
  TempDir tmp;
  std::string mnt = tmp.file("mnt");
  std::filesystem::create_directory(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (" << std::strerror(errno)
                 << "): the simulated disk-full test covers this";
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{mnt};
  std::string dir = mnt + "/ckpt";
  Model m1(1);
  ASSERT_TRUE(save(dir, 1, m1));
  std::vector<float> big(64 * 1024, 1.0f); // 256 KiB: does not fit
  std::vector<SafetensorsView> views = m1.views();
  views.push_back({"big", DType::F32, {int64_t(big.size())}, big.data()});
  Status s = saveCheckpoint(dir, stateAt(2), views);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("tensors.safetensors: write failed: No space left "
                        "on device; the previous checkpoint " +
                        dir + "/step-1 is intact"));
  expectStep1Intact(dir, m1);
  // The space was given back: a small save fits again.
  ASSERT_TRUE(save(dir, 2, Model(2)));
}

// A toy training run (parameters updated from the batches with a
// scheduled learning rate and an RNG) resumed from its checkpoint gives
// the same "loss" curve and parameters, bit for bit.
TEST(Checkpoint, ResumedRunContinuesBitForBit) {
  TempDir tmp;
  std::string data = tmp.file("data.txt");
  std::string text;
  for (int i = 0; i < 3000; ++i)
    text += char('a' + (i * 7 + i / 13) % 26);
  writeFile(data, text);
  TRC_ASSERT_OK_AND_ASSIGN(LrSchedule lr, parseLrSchedule("cosine:warmup=3,min=1e-4", 1e-2, 40));
  DataLoaderOptions opt;
  opt.batchSize = 4;
  opt.seqLen = 8;
  opt.shuffle = true;
  opt.seed = 11;

  struct Run {
    std::vector<float> w = std::vector<float>(26, 0.5f);
    uint64_t rng = 88172645463325252ull;
    std::vector<float> losses;
  };
  auto step = [&](Run &r, DataLoader &dl, int64_t s) {
    std::vector<int64_t> in(32), tg(32);
    ASSERT_TRUE(dl.next(in.data(), tg.data()));
    r.rng ^= r.rng << 13, r.rng ^= r.rng >> 7, r.rng ^= r.rng << 17;
    float noise = float(r.rng >> 40) * 1e-9f;
    float loss = 0;
    for (size_t i = 0; i < 32; ++i) {
      float &p = r.w[size_t(tg[i] - 'a')];
      loss += (p - float(in[i] - 'a') / 26) * (p - float(in[i] - 'a') / 26);
      p -= float(lr.at(s)) * (p - float(in[i] - 'a') / 26) + noise;
    }
    r.losses.push_back(loss);
  };
  auto save = [&](const Run &r, DataLoader &dl, int64_t s) {
    CheckpointState st;
    st.step = s;
    st.data = dl.state();
    st.rng = {r.rng};
    return saveCheckpoint(tmp.file("ckpt"), st,
                          {{"w", DType::F32, {26}, r.w.data()}});
  };

  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<DataLoader> dl, DataLoader::open(data, opt));
  Run full;
  for (int64_t s = 0; s < 40; ++s) {
    step(full, *dl, s);
    if (s + 1 == 25)
      ASSERT_TRUE(save(full, *dl, s + 1));
  }

  TRC_ASSERT_OK_AND_ASSIGN(std::string folder, latestCheckpoint(tmp.file("ckpt")));
  Run resumed;
  TRC_ASSERT_OK_AND_ASSIGN(CheckpointContents read, readCheckpoint(folder));
  const CheckpointState &st = read.state;
  const std::vector<NamedTensor> &tensors = read.tensors;
  ASSERT_EQ(tensors.size(), 1u);
  ASSERT_EQ(tensors[0].name, "w");
  ASSERT_EQ(tensors[0].tensor.byteSize(), resumed.w.size() * 4);
  std::memcpy(resumed.w.data(), tensors[0].tensor.data(), resumed.w.size() * 4);
  resumed.rng = st.rng.at(0);
  TRC_ASSERT_OK_AND_ASSIGN(dl, DataLoader::open(data, opt));
  ASSERT_TRUE(dl->restore(st.data));
  for (int64_t k = st.step; k < 40; ++k)
    step(resumed, *dl, k);
  ASSERT_EQ(resumed.losses.size(), 15u);
  for (size_t i = 0; i < 15; ++i)
    EXPECT_EQ(std::memcmp(&resumed.losses[i], &full.losses[25 + i], 4), 0)
        << "step " << 25 + i;
  EXPECT_EQ(std::memcmp(resumed.w.data(), full.w.data(), 26 * 4), 0);
}
