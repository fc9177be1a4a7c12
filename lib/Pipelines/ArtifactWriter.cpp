//===- ArtifactWriter.cpp - writes the artifact folder ----------------------===//
#include "ArtifactWriter.h"
#include "trc/Abi/ArtifactNames.h"

#include "runtime/formats/Bundle.h"
#include "runtime/formats/Checksum.h"
#include "runtime/formats/Manifest.h"
#include "runtime/formats/ProgramSignature.h"
#include "runtime/support/InterruptCleanup.h"
#include "runtime/support/Names.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace trc {

namespace {
constexpr int64_t kWeightAlignment = 64;
} // namespace

std::string manifestDType(mlir::Type t) {
  if (t.isF32()) return "f32";
  if (t.isF64()) return "f64";
  if (t.isF16()) return "f16";
  if (t.isBF16()) return "bf16";
  if (auto i = mlir::dyn_cast<mlir::IntegerType>(t)) {
    std::string bits = std::to_string(i.getWidth());
    if (i.getWidth() == 1) return "i1";
    return (i.isUnsigned() ? "u" : "i") + bits;
  }
  return "";
}

bool writeArtifactFile(const std::string &path, llvm::StringRef bytes, std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (!ec) {
    out << bytes;
    out.close();
    ec = out.error();
    out.clear_error(); // reported here, not as the stream's fatal error
  }
  if (ec)
    error = "cannot write " + path + ": " + ec.message();
  return !ec;
}

ArtifactWriter::~ArtifactWriter() {
  if (stage_.empty())
    return;
  rt::forgetOnInterrupt(stage_);
  llvm::sys::fs::remove_directories(stage_);
}

std::string ArtifactWriter::stage(std::string &error) {
  llvm::SmallString<256> path(outPath_);
  llvm::sys::fs::make_absolute(path);
  llvm::StringRef parent = llvm::sys::path::parent_path(path);
  if (!llvm::sys::fs::is_directory(parent)) {
    error = "cannot write artifact '" + outPath_ + "': folder '" + parent.str() +
            "' does not exist";
    return "";
  }
  bool bundle = rt::isBundlePath(outPath_);
  if (bundle ? llvm::sys::fs::is_directory(path)
             : llvm::sys::fs::exists(path) && !llvm::sys::fs::exists(path + "/" + trc::abi::kManifestFile)) {
    error = "refusing to overwrite '" + outPath_ + "': it exists and is not a trc artifact";
    return "";
  }
  // Staging carries the process id: a later run removes what a killed one
  // left (removeStaleStaging); an interrupted one removes its own.
  rt::removeStaleStaging(path.str().str());
  llvm::SmallString<256> staged;
  if (auto ec = llvm::sys::fs::createUniqueDirectory(rt::stagingName(path.str().str()), staged)) {
    error = "cannot create a staging folder next to '" + outPath_ + "': " + ec.message();
    return "";
  }
  stage_ = staged.str().str();
  rt::removeOnInterrupt(stage_);
  return stage_;
}

namespace {

// Where each param's bytes go in weights.bin: a 64-byte-aligned offset;
// params with equal bytes (e.g. each layer's causal mask) share one copy.
struct WeightsLayout {
  std::vector<int64_t> offsets; // per slot; -1: no bytes (input, output, `init`)
  int64_t bytes = 0;
};

WeightsLayout layoutWeights(const ArtifactContents &contents) {
  WeightsLayout layout;
  std::unordered_multimap<uint64_t, size_t> placed; // hash of bytes -> slot
  for (size_t i = 0; i < contents.slots.size(); ++i) {
    const ArtifactSlot &slot = contents.slots[i];
    if (slot.kind != ArtifactSlot::Kind::Param || slot.init) {
      layout.offsets.push_back(-1);
      continue;
    }
    llvm::ArrayRef<char> bytes = slot.initialBytes;
    uint64_t hash = rt::xxh3_64(bytes.data(), bytes.size()) ^ bytes.size();
    int64_t shared = -1;
    auto [first, last] = placed.equal_range(hash);
    for (auto it = first; it != last && shared < 0 && !bytes.empty(); ++it) {
      llvm::ArrayRef<char> other = contents.slots[it->second].initialBytes;
      if (other.size() == bytes.size() && std::memcmp(other.data(), bytes.data(), bytes.size()) == 0)
        shared = layout.offsets[it->second];
    }
    if (shared >= 0) {
      layout.offsets.push_back(shared);
      continue;
    }
    layout.bytes = (layout.bytes + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
    layout.offsets.push_back(layout.bytes);
    placed.emplace(hash, i);
    layout.bytes += int64_t(bytes.size());
  }
  return layout;
}

// manifest.trc (docs/ARTIFACT.md) for `contents` laid out as `layout`.
std::string manifestText(const ArtifactContents &contents, const WeightsLayout &layout,
                         uint64_t programBytes, const rt::Checksum &programHash,
                         const rt::Checksum &weightsHash) {
  std::string manifest;
  llvm::raw_string_ostream os(manifest);
  os << trc::abi::kManifestMagic << " " << trc::abi::kManifestVersion << "\n"
     << "target " << contents.target << "\n"
     << "program " << trc::abi::kProgramFile << " " << programBytes << " "
     << rt::formatChecksum(programHash) << "\n"
     << "entry " << trc::abi::kEntrySymbol << "\n"
     << "arena " << contents.arenaBytes << "\n";
  if (contents.hostArenaBytes > 0)
    os << "host_arena " << contents.hostArenaBytes << "\n";
  os << "weights " << trc::abi::kWeightsFile << " " << layout.bytes << " "
     << rt::formatChecksum(weightsHash) << "\n";
  for (const std::string &record : contents.records)
    os << record << "\n";
  for (size_t i = 0; i < contents.slots.size(); ++i) {
    const auto &slot = contents.slots[i];
    const char *kind = slot.kind == ArtifactSlot::Kind::Input    ? "input"
                       : slot.kind == ArtifactSlot::Kind::Output ? "output"
                                                                 : "param";
    os << "slot " << i << " " << kind << " " << rt::percentEncode(slot.name) << " "
       << manifestDType(slot.type.getElementType()) << " " << slot.type.getRank();
    for (int64_t d : slot.type.getShape())
      os << " " << d;
    if (slot.kind == ArtifactSlot::Kind::Param) {
      os << " ";
      if (slot.init)
        os << "-";
      else
        os << layout.offsets[i];
      os << " " << (slot.trainable ? "trainable" : "frozen");
    }
    os << "\n";
    if (slot.indexBound)
      os << "bound " << i << " " << slot.indexBound << "\n";
    if (slot.labelClasses) {
      os << "labels " << i << " " << slot.labelClasses;
      if (slot.labelIgnore)
        os << " " << *slot.labelIgnore;
      os << "\n";
    }
    if (slot.splitDegree) {
      os << "split " << i << " " << slot.splitDim << " " << slot.splitBlocks << " "
         << slot.splitDegree << " " << slot.splitShape.size();
      for (int64_t d : slot.splitShape)
        os << " " << d;
      os << (slot.splitMirrored ? " mirrored\n" : "\n");
    }
    if (slot.shardDegree) {
      os << "shard " << i << " " << slot.shardDegree << " " << slot.fullShape.size();
      for (int64_t d : slot.fullShape)
        os << " " << d;
      os << "\n";
    }
    if (slot.init)
      os << "init " << i << " " << rt::formatInitializer(*slot.init) << "\n";
  }
  os << "end\n";
  return manifest;
}

} // namespace

bool ArtifactWriter::signature(const ArtifactContents &contents, std::string &text,
                               std::string &error) {
  // The manifest as finish() will write it, less the program's and the
  // weights' checksums, which the signature does not contain.
  rt::Checksum none = rt::checksumOf(rt::ChecksumKind::Xxh3, nullptr, 0);
  rt::StatusOr<rt::Manifest> manifest =
      rt::parseManifest(manifestText(contents, layoutWeights(contents), 0, none, none));
  if (!manifest.ok()) {
    error = "the manifest to write does not parse: " + std::string(manifest.status().message());
    return false;
  }
  text = rt::programSignature(*manifest);
  return true;
}

bool ArtifactWriter::finish(const ArtifactContents &contents, std::string &error) {
  auto program = llvm::MemoryBuffer::getFile(stage_ + "/" + trc::abi::kProgramFile);
  if (!program) {
    error = "the program was not written";
    return false;
  }
  WeightsLayout layout = layoutWeights(contents);
  std::vector<char> weights(size_t(layout.bytes), 0);
  for (size_t i = 0; i < contents.slots.size(); ++i)
    if (layout.offsets[i] >= 0 && !contents.slots[i].initialBytes.empty())
      std::memcpy(weights.data() + layout.offsets[i], contents.slots[i].initialBytes.data(),
                  contents.slots[i].initialBytes.size());
  std::string manifest = manifestText(
      contents, layout, (*program)->getBufferSize(),
      rt::checksumOf(rt::ChecksumKind::Xxh3, (*program)->getBufferStart(),
                     (*program)->getBufferSize()),
      rt::checksumOf(rt::ChecksumKind::Xxh3, weights.data(), weights.size()));

  if (!writeArtifactFile(stage_ + "/" + trc::abi::kWeightsFile,
                         llvm::StringRef(weights.data(), weights.size()), error) ||
      !writeArtifactFile(stage_ + "/" + trc::abi::kManifestFile, manifest, error))
    return false;

  // A single-file artifact: pack the staged folder (atomically replacing
  // the file), then drop the stage.
  if (rt::isBundlePath(outPath_)) {
    if (rt::Status s = rt::packBundle(stage_, outPath_); !s) {
      error = s.message();
      return false;
    }
    return true; // the destructor removes the stage
  }
  // Publish: the old artifact (if any) steps aside only once the new one is whole.
  std::string old;
  if (llvm::sys::fs::exists(outPath_)) {
    old = outPath_ + ".old";
    llvm::sys::fs::remove_directories(old);
    if (auto ec = llvm::sys::fs::rename(outPath_, old)) {
      error = "cannot replace '" + outPath_ + "': " + ec.message();
      return false;
    }
  }
  if (auto ec = llvm::sys::fs::rename(stage_, outPath_)) {
    error = "cannot move the artifact to '" + outPath_ + "': " + ec.message();
    return false;
  }
  rt::forgetOnInterrupt(stage_);
  stage_.clear();
  if (!old.empty())
    llvm::sys::fs::remove_directories(old);
  return true;
}

} // namespace trc
