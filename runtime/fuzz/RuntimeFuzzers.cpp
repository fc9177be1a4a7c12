//===- RuntimeFuzzers.cpp - libFuzzer targets for the runtime's readers ------===//
//
// One libFuzzer entry per file format the runtime reads, chosen at compile
// time by TRC_FUZZ_<NAME> (runtime/fuzz/CMakeLists.txt builds one executable
// per target: trc-fuzz-npy, -npz, -safetensors, -json, -manifest, -plan,
// -training-info, -bundle, -checkpoint, -tokens (llm.c token files and text
// --data), -cluster and -profile (trc-plan's --cluster and --device-profile
// files). Each reader must turn any bytes into
// a value or a Status error: never crash, leak, read out of bounds, hit
// undefined behaviour, hang or allocate without bound (ASan's allocation limit
// catches the last). Readers that take a path get the bytes in a file of a
// private temporary folder. scripts/fuzz_runtime.sh builds the targets, seeds
// them with valid files and runs each.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Bundle.h"
#include "runtime/formats/Json.h"
#include "runtime/formats/Manifest.h"
#include "runtime/formats/Npy.h"
#include "runtime/formats/Npz.h"
#include "runtime/formats/Safetensors.h"
#include "runtime/spec/ParallelPlan.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/DataLoader.h"
#include "runtime/train/TrainingArtifact.h"
#include "trc/Plan/Cluster.h"
#include "trc/Plan/ProfileFile.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

// UBSan only prints by default; stop at the first report so that libFuzzer
// records the input.
extern "C" const char *__ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}

namespace {

/// A private folder for readers that take paths, made once per process.
const std::string &scratch() {
  static const std::string dir = [] {
    std::string pattern = "/tmp/trc-fuzz-XXXXXX";
    if (!::mkdtemp(pattern.data()))
      std::abort();
    return pattern;
  }();
  return dir;
}

std::string writeScratch(const std::string &name, std::string_view bytes) {
  std::string path = scratch() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
  return path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  using namespace trc::rt;
#if defined(TRC_FUZZ_NPY)
  (void)parseNpy(bytes, "fuzz.npy");
#elif defined(TRC_FUZZ_NPZ)
  (void)parseNpz(bytes, "fuzz.npz");
#elif defined(TRC_FUZZ_SAFETENSORS)
  (void)decodeSafetensors(bytes, "fuzz.safetensors");
#elif defined(TRC_FUZZ_JSON)
  (void)parseJson(bytes);
#elif defined(TRC_FUZZ_MANIFEST)
  (void)parseManifest(bytes);
#elif defined(TRC_FUZZ_PLAN)
  // Inline JSON only: other text would be taken as a file to open.
  if (!bytes.empty() && bytes[0] == '{')
    (void)parseParallelPlan(std::string(bytes), 8);
#elif defined(TRC_FUZZ_TRAINING_INFO)
  writeScratch(kTrainingInfoFile, bytes);
  (void)readTrainingInfo(scratch());
#elif defined(TRC_FUZZ_BUNDLE)
  (void)readBundleManifest(writeScratch("fuzz.trc", bytes));
#elif defined(TRC_FUZZ_CHECKPOINT)
  // state.json as found in a checkpoint folder beside an empty tensors file.
  static const std::string folder = [] {
    std::string f = scratch() + "/step-1";
    ::mkdir(f.c_str(), 0700);
    return f;
  }();
  writeScratch("step-1/state.json", bytes);
  writeScratch("step-1/tensors.safetensors", "");
  (void)readCheckpoint(folder);
#elif defined(TRC_FUZZ_TOKENS)
  // --data: the file is opened (token file or text by its header) and two
  // batches read, so that the token-range checks and the wrap-around run.
  DataLoaderOptions options;
  options.batchSize = 2;
  options.seqLen = 4;
  StatusOr<std::unique_ptr<DataLoader>> loader =
      DataLoader::open(writeScratch("fuzz.bin", bytes), options);
  if (loader.ok()) {
    int64_t inputs[8], targets[8];
    for (int i = 0; i < 2 && (*loader)->next(inputs, targets); ++i) {
    }
  }
#elif defined(TRC_FUZZ_CLUSTER)
  // --cluster: a .json file, or else the inline "N x kind" spelling (a name
  // ending in .json would be opened as a path: not fuzzed).
  trc::plan::Cluster cluster;
  if (!bytes.empty() && bytes[0] == '{')
    (void)trc::plan::parseCluster(writeScratch("fuzz.json", bytes), cluster);
  else if (bytes.size() < 5 || bytes.substr(bytes.size() - 5) != ".json")
    (void)trc::plan::parseCluster(std::string(bytes), cluster);
#elif defined(TRC_FUZZ_PROFILE)
  trc::plan::DeviceProfile profile;
  (void)trc::plan::parseDeviceProfile(std::string(bytes), profile);
#else
#error "define one TRC_FUZZ_<NAME>"
#endif
  return 0;
}
