//===- Artifact.h - a loaded trc artifact folder ----------------------------===//
//
// Artifact::load(dir, target) reads DIR/manifest.trc (at most 64 MiB),
// parses it, refuses an artifact built for another target ("artifact DIR was
// built for target cuda, not cpu"), checks the size and checksum (XXH3, or
// FNV-1a 64 in manifests written before it: Checksum.h) of the program and
// the weights against the manifest, maps the weights read-only,
// dlopens the program (RTLD_NOW | RTLD_LOCAL: every trc_rt_* reference must
// resolve against the process now), checks its signature against the
// manifest (ProgramSignature.h: a program compiled for another manifest is
// refused before it runs) and looks up the entry symbol. Every
// failure is a message naming the file and the problem. The Artifact keeps
// the program loaded and the weights mapped until it is destroyed.
// Target cuda: every `cubin`/`ptx` file is read and its size and hash
// checked too, and the kernels (CudaProgram.h) are registered under the
// entry point for the CUDA backend until the Artifact is destroyed.
// Preconditions: the process exports the trc_rt_* functions (ENABLE_EXPORTS).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_ARTIFACT_H
#define TRC_RUNTIME_ARTIFACT_H

#include "runtime/backends/Backend.h"
#include "runtime/formats/Manifest.h"
#include "runtime/support/Status.h"

#include <cstddef>
#include <memory>
#include <string>

namespace trc::rt {

// Largest manifest.trc accepted.
constexpr size_t kMaxManifestBytes = size_t(64) << 20;

struct CudaProgram;

class Artifact {
public:
  /// The loaded artifact folder or .trc bundle `dir` (see above).
  static StatusOr<std::unique_ptr<Artifact>> load(const std::string &dir,
                                                  const std::string &target);
  /// The target (cpu, cuda) an artifact folder or .trc bundle was built for,
  /// read from its manifest; "auto" when that cannot be read (loading it
  /// then reports the problem).
  static std::string targetOf(const std::string &path);
  ~Artifact();
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  const std::string &dir() const { return dir_; }
  const Manifest &manifest() const { return manifest_; }
  EntryFn entry() const { return entry_; }
  // The weights file's bytes (null when it is empty).
  const unsigned char *weights() const { return weights_; }
  size_t weightsSize() const { return weightsSize_; }
  // Target cuda: the kernel table and files (null for other targets).
  std::shared_ptr<const CudaProgram> cudaProgram() const { return cudaProgram_; }

private:
  Artifact() = default;
  static StatusOr<std::unique_ptr<Artifact>> loadBundle(const std::string &bundle,
                                                        const std::string &target);
  // `bundle`: the single-file artifact `dir` was unpacked from, or empty.
  static StatusOr<std::unique_ptr<Artifact>> loadFolder(const std::string &dir,
                                                        const std::string &target,
                                                        const std::string &bundle);

  std::string dir_;
  Manifest manifest_;
  void *dlHandle_ = nullptr;
  EntryFn entry_ = nullptr;
  unsigned char *weights_ = nullptr;
  size_t weightsSize_ = 0;
  std::shared_ptr<const CudaProgram> cudaProgram_;
};

/// Removes the temporary folder around an artifact compiled in-process (the
/// artifact's parent) at scope exit; an empty path removes nothing.
struct TemporaryArtifact {
  std::string artifactDir;
  TemporaryArtifact(std::string dir = "") : artifactDir(std::move(dir)) {}
  TemporaryArtifact(const TemporaryArtifact &) = delete;
  TemporaryArtifact &operator=(const TemporaryArtifact &) = delete;
  ~TemporaryArtifact();
};

} // namespace trc::rt

#endif // TRC_RUNTIME_ARTIFACT_H
