//===- RespecializeCheck.cpp - a re-specialized static export, checked -----===//
//
// See RespecializeCheck.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/RespecializeCheck.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/artifact/Session.h"
#include "runtime/support/Names.h"
#include "runtime/support/SplitMix64.h"
#include "trc/Abi/SlotNames.h"

#include "absl/strings/str_join.h"

#include <cmath>
#include <cstring>
#include <numeric>

namespace trc::rt {
namespace {

/// Rows 0..rows-1 of `base` (rows of `rowBytes` bytes) repeated: row r is
/// base row r % baseRows.
void repeatRows(const std::vector<char> &base, int64_t baseRows, int64_t rows, char *out) {
  size_t rowBytes = base.size() / size_t(baseRows);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(out + size_t(r) * rowBytes, base.data() + size_t(r % baseRows) * rowBytes,
                rowBytes);
}

/// `rows` rows of `rowElements` values each: token-like integers below
/// `bound`, floats in [-1, 1); false for a dtype it does not make.
bool makeRows(DType dtype, int64_t rows, int64_t rowElements, int64_t bound, uint64_t seed,
              std::vector<char> &out) {
  int64_t n = rows * rowElements;
  out.assign(size_t(n) * dtypeSize(dtype), 0);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = splitmix64(seed + uint64_t(i));
    switch (dtype) {
    case DType::F32:
      reinterpret_cast<float *>(out.data())[i] = float(double(r >> 11) * 0x1p-52 - 1.0);
      break;
    case DType::I64:
      reinterpret_cast<int64_t *>(out.data())[i] = int64_t(r % uint64_t(bound));
      break;
    case DType::I32:
      reinterpret_cast<int32_t *>(out.data())[i] = int32_t(r % uint64_t(bound));
      break;
    case DType::I1:
    case DType::U8:
      reinterpret_cast<uint8_t *>(out.data())[i] = uint8_t(r % 2);
      break;
    default:
      return false;
    }
  }
  return true;
}

/// Where two f32 outputs disagree ("" where they agree): the run's `b`
/// against the traced `a`; `baseRows` distinct rows, `ratio` = run batch /
/// traced batch.
std::string disagreement(const HostTensor &a, const HostTensor &b, int64_t baseRows,
                         double ratio) {
  auto close = [](double x, double y) {
    return (std::isnan(x) && std::isnan(y)) || std::fabs(x - y) <= 1e-4 * std::max(1.0, std::fabs(x));
  };
  if (a.shape == b.shape) {
    bool equal = true, scaled = true; // a summed loss scales with the batch
    for (int64_t i = 0; i < a.numElements(); ++i) {
      equal &= close(a.as<float>()[i], b.as<float>()[i]);
      scaled &= close(a.as<float>()[i] * ratio, b.as<float>()[i]);
    }
    if (equal || (a.numElements() == 1 && scaled))
      return "";
    return a.numElements() == 1 ? std::to_string(a.as<float>()[0]) + " at the traced sizes, " +
                                      std::to_string(b.as<float>()[0]) + " at the run's"
                                : "values differ";
  }
  if (a.shape.empty() || b.shape.empty() || a.shape.size() != b.shape.size() ||
      !std::equal(a.shape.begin() + 1, a.shape.end(), b.shape.begin() + 1))
    return ""; // not comparable row by row: not compared
  int64_t rowElements = a.numElements() / a.shape[0];
  for (int64_t i = 0; i < baseRows * rowElements; ++i)
    if (!close(a.as<float>()[i], b.as<float>()[i]))
      return "row " + std::to_string(i / rowElements) + " differs";
  return "";
}

} // namespace

Status checkRespecialized(StepCompiler &compiler, Backend &backend, const std::string &model,
                          const std::map<std::string, std::vector<int64_t>> &runShapes,
                          const TrainingModelInfo &info, std::string &skipped) {
  // The model's inputs at both sizes; the batches must differ on axis 0 only.
  std::map<std::string, std::vector<int64_t>> traced;
  int64_t tracedBatch = 0, runBatch = 0;
  for (const auto &[name, shape] : runShapes) {
    if (name == abi::kLossTargets)
      continue; // an appended loss's, not the model's
    auto found = info.tracedShapes.find(name);
    traced[name] = found == info.tracedShapes.end() ? shape : found->second;
    const std::vector<int64_t> &was = traced[name];
    if (was.size() != shape.size() || was.empty() ||
        !std::equal(was.begin() + 1, was.end(), shape.begin() + 1)) {
      skipped = "the sequence changed too ('" + name + "'), which repeated rows do not check";
      return Status::success();
    }
    if (was[0] != shape[0]) {
      if (tracedBatch && (tracedBatch != was[0] || runBatch != shape[0])) {
        skipped = "the inputs' batches differ";
        return Status::success();
      }
      tracedBatch = was[0];
      runBatch = shape[0];
    }
  }
  if (!tracedBatch) {
    skipped = "no batch changed";
    return Status::success();
  }
  int64_t baseRows = std::gcd(tracedBatch, runBatch);

  struct Program {
    TemporaryArtifact removeTemporary;
    LoadedSession loaded;
  } programs[2];
  std::map<std::string, std::vector<int64_t>> runInputs = traced;
  for (auto &[name, shape] : runInputs)
    shape = runShapes.at(name);
  const std::map<std::string, std::vector<int64_t>> *shapes[2] = {&traced, &runInputs};
  for (int p = 0; p < 2; ++p) {
    StatusOr<std::string> dir = compiler.compileForward(model, *shapes[p], backend.target());
    if (!dir.ok())
      return Status(dir.status()).withPrefix("checking the re-specialized static export: ");
    programs[p].removeTemporary.artifactDir = *dir;
    StatusOr<LoadedSession> loaded = openSession(*dir, backend);
    if (!loaded.ok())
      return loaded.status();
    programs[p].loaded = *std::move(loaded);
  }
  const Manifest &manifest = programs[0].loaded.session->manifest();
  uint64_t seed = 0x5eed;
  for (const Slot *slot : manifest.slotsOfKind(SlotKind::Input)) {
    if (slot->name == abi::kRngKey) {
      skipped = "the model draws dropout masks, which differ at different sizes";
      return Status::success();
    }
    auto table = info.tableRows.find(slot->name);
    int64_t bound = table != info.tableRows.end() ? table->second
                    : info.vocabSize > 0          ? info.vocabSize
                                                  : 2;
    std::vector<char> base;
    int64_t rowElements = slot->shape.empty() ? 1 : slot->numElements / slot->shape[0];
    if (slot->shape.empty() ||
        !makeRows(slot->dtype, baseRows, rowElements, bound, seed += 1 << 20, base)) {
      skipped = "input '" + percentEncode(slot->name) + "' is not a batch of rows it can make";
      return Status::success();
    }
    for (int p = 0; p < 2; ++p) {
      const Slot *own = programs[p].loaded.session->manifest().find(SlotKind::Input, slot->name);
      HostTensor value;
      if (!own || own->shape.empty() || own->numElements != own->shape[0] * rowElements)
        return Status::error("checking the re-specialized static export: input '" +
                             percentEncode(slot->name) + "' has no batch of the same rows");
      if (Status s = value.allocate(slot->dtype, own->shape); !s)
        return s;
      repeatRows(base, baseRows, own->shape[0], static_cast<char *>(value.data()));
      if (Status s = programs[p].loaded.session->setInput(slot->name, value); !s)
        return s;
    }
  }
  for (Program &program : programs)
    if (Status s = program.loaded.session->run(); !s)
      return s.withPrefix("checking the re-specialized static export: ");
  for (const Slot *slot : manifest.slotsOfKind(SlotKind::Output)) {
    if (slot->dtype != DType::F32)
      continue;
    StatusOr<HostTensor> a = programs[0].loaded.session->getOutput(slot->name);
    StatusOr<HostTensor> b = programs[1].loaded.session->getOutput(slot->name);
    if (!a.ok() || !b.ok())
      return a.ok() ? b.status() : a.status();
    std::string problem = disagreement(*a, *b, baseRows, double(runBatch) / double(tracedBatch));
    if (!problem.empty())
      return Status::error(
          model + ": the static export re-specialized to this run's sizes (" +
          absl::StrJoin(info.respecializedInputs, ", ") + ") does not compute what it does at " +
          "its traced sizes: on the same rows repeated, output '" + percentEncode(slot->name) +
          "' differs (" + problem + "). Export with dynamic batch and sequence axes (torch 2.x: "
          "dynamic_shapes=..., torch 1.13: dynamic_axes=...; scripts/export_torch.py does "
          "either) or train at the traced sizes");
  }
  return Status::success();
}

} // namespace trc::rt
