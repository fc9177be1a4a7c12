//===- Artifact.cpp - a loaded trc artifact folder --------------------------===//
//
// See Artifact.h. Files are opened, checked to be regular files of the
// announced size, and hashed before anything uses them.
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Artifact.h"
#include "trc/Abi/ArtifactNames.h"
#include "runtime/formats/Bundle.h"
#include "runtime/backends/cuda/CudaProgram.h"
#include "runtime/formats/FileOps.h"
#include "runtime/formats/ProgramSignature.h"

#include <cstdlib>

#include "runtime/formats/Checksum.h"

#include <algorithm>
#include <filesystem>
#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace trc::rt {

namespace {

std::string joinPath(const std::string &dir, const std::string &file) {
  if (!dir.empty() && dir.back() == '/')
    return dir + file;
  return dir + "/" + file;
}

class FileHandle {
public:
  ~FileHandle() {
    if (fd >= 0)
      ::close(fd);
  }
  int fd = -1;
};

// Opens `path` read-only into `file` and checks it is a regular file;
// returns its size.
StatusOr<size_t> openRegular(const std::string &path, FileHandle &file) {
  struct stat st;
  StatusOr<int> fd = openRegularFile(path, &st);
  if (!fd.ok())
    return fd.status();
  file.fd = *fd;
  return size_t(st.st_size);
}

Status checkSize(const std::string &path, size_t actual, uint64_t expected) {
  if (actual != expected)
    return Status::error(path + ": size is " + std::to_string(actual) +
                         " bytes, the manifest says " +
                         std::to_string(expected) +
                         " (truncated or corrupt artifact)");
  return Status::success();
}

// `actual` is computed with the function the manifest names (`expected`'s
// kind), so an old manifest's FNV-1a 64 is checked as such.
Status checkHash(const std::string &path, const Checksum &actual,
                 const Checksum &expected) {
  if (actual != expected)
    return Status::error(path + ": checksum mismatch: " +
                         checksumKindName(expected.kind) + " is " +
                         toHex16(actual.value) + ", the manifest says " +
                         toHex16(expected.value) + " (corrupt artifact)");
  return Status::success();
}

// Hashes a whole file with `kind` by reading it in chunks.
StatusOr<Checksum> hashFile(const std::string &path, int fd, size_t size,
                            ChecksumKind kind) {
  Hasher h(kind);
  std::string chunk(size_t(1) << 20, '\0');
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, &chunk[0], std::min(chunk.size(), size - done),
                        off_t(done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Status::error(path + ": read error: " + std::strerror(errno));
    if (n == 0)
      return Status::error(path + ": the file shrank while being read");
    h.update(chunk.data(), size_t(n));
    done += size_t(n);
  }
  return h.checksum();
}

} // namespace

Artifact::~Artifact() {
  if (cudaProgram_)
    unregisterCudaProgram(entry_, cudaProgram_->id);
  if (dlHandle_)
    ::dlclose(dlHandle_);
  if (weights_)
    ::munmap(weights_, weightsSize_);
}

StatusOr<std::unique_ptr<Artifact>> Artifact::loadBundle(const std::string &bundle,
                                                         const std::string &target) {
  // Unpacked into a private folder that is removed again once loaded: the
  // program stays loaded and the weights mapped after their files go.
  std::string pattern = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  pattern += "/trc-bundle-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!::mkdtemp(buffer.data()))
    return Status::error(bundle + ": cannot create a temporary folder: " +
                         std::strerror(errno));
  std::string dir = buffer.data();
  std::vector<std::string> members;
  std::unique_ptr<Artifact> loaded;
  Status s = unpackBundle(bundle, dir, &members);
  if (s) {
    StatusOr<std::unique_ptr<Artifact>> folder = loadFolder(dir, target, bundle);
    if (folder.ok())
      loaded = *std::move(folder);
    else
      s = folder.status();
  }
  if (!s) {
    // Name the bundle (and its member), not the private folder.
    std::string message = s.message();
    for (size_t at = message.find(dir); at != std::string::npos;
         at = message.find(dir, at + bundle.size()))
      message.replace(at, dir.size(), bundle);
    s = Status::error(message);
  }
  for (const std::string &member : members)
    ::unlink((dir + "/" + member).c_str());
  ::rmdir(dir.c_str());
  if (!s)
    return s;
  loaded->dir_ = bundle;
  return loaded;
}

StatusOr<std::unique_ptr<Artifact>> Artifact::load(const std::string &dir,
                                                   const std::string &target) {
  struct stat bundleStat;
  if (isBundlePath(dir) && ::stat(dir.c_str(), &bundleStat) == 0 &&
      S_ISREG(bundleStat.st_mode))
    return loadBundle(dir, target);
  return loadFolder(dir, target, "");
}

StatusOr<std::unique_ptr<Artifact>> Artifact::loadFolder(const std::string &dir,
                                                         const std::string &target,
                                                         const std::string &bundle) {
  std::unique_ptr<Artifact> a(new Artifact());
  a->dir_ = dir;

  struct stat st;
  if (::stat(dir.c_str(), &st) != 0)
    return Status::error(dir + ": cannot open artifact folder: " +
                         std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return Status::error(dir + ": not an artifact folder (expected a folder "
                               "with manifest.trc, program.so and weights.bin)");

  // The manifest.
  std::string manifestPath = joinPath(dir, abi::kManifestFile);
  StatusOr<std::string> text = readSmallFile(manifestPath, kMaxManifestBytes);
  if (!text.ok())
    return text.status();
  StatusOr<Manifest> manifest = parseManifest(*text);
  if (!manifest.ok())
    return Status(manifest.status()).withPrefix(manifestPath + ": ");
  a->manifest_ = *std::move(manifest);
  const Manifest &m = a->manifest_;

  if (m.target != target)
    return Status::error("artifact " + dir + " was built for target " +
                         m.target + ", not " + target);

  // The program: size and hash before it is loaded.
  std::string programPath = joinPath(dir, m.programFile);
  {
    FileHandle file;
    StatusOr<size_t> size = openRegular(programPath, file);
    if (!size.ok())
      return size.status();
    if (Status s = checkSize(programPath, *size, m.programBytes); !s)
      return s;
    StatusOr<Checksum> hash = hashFile(programPath, file.fd, *size, m.programHash.kind);
    if (!hash.ok())
      return hash.status();
    if (Status s = checkHash(programPath, *hash, m.programHash); !s)
      return s;
  }

  // The weights: mapped read-only, then hashed.
  std::string weightsPath = joinPath(dir, m.weightsFile);
  {
    FileHandle file;
    StatusOr<size_t> opened = openRegular(weightsPath, file);
    if (!opened.ok())
      return opened.status();
    size_t size = *opened;
    if (Status s = checkSize(weightsPath, size, m.weightsBytes); !s)
      return s;
    if (size > 0) {
      void *p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd, 0);
      if (p == MAP_FAILED)
        return Status::error(weightsPath + ": cannot map: " +
                             std::strerror(errno));
      a->weights_ = static_cast<unsigned char *>(p);
      a->weightsSize_ = size;
    }
    if (Status s = checkHash(weightsPath,
                             checksumOf(m.weightsHash.kind, a->weights_,
                                        a->weightsSize_),
                             m.weightsHash);
        !s)
      return s;
  }

  // Target cuda: the kernel files, read whole and checked before use.
  std::shared_ptr<CudaProgram> cuda;
  if (m.target == "cuda") {
    cuda = std::make_shared<CudaProgram>();
    cuda->id = newCudaProgramId();
    cuda->origin = bundle.empty() ? dir : bundle;
    cuda->kernels = m.kernels;
    cuda->numSlots = m.slots.size();
    for (const KernelFile &k : m.kernelFiles) {
      std::string path = joinPath(dir, k.file);
      FileHandle file;
      StatusOr<size_t> opened = openRegular(path, file);
      if (!opened.ok())
        return opened.status();
      size_t size = *opened;
      if (Status s = checkSize(path, size, k.bytes); !s)
        return s;
      CudaImage image;
      image.ptx = k.ptx;
      image.chip = k.chip;
      image.major = k.major;
      image.minor = k.minor;
      image.file = path;
      image.bytes.resize(size);
      size_t done = 0;
      while (done < size) {
        ssize_t n = ::pread(file.fd, &image.bytes[done], size - done, off_t(done));
        if (n < 0 && errno == EINTR)
          continue;
        if (n <= 0)
          return Status::error(path + ": " +
                               (n < 0 ? std::string("read error: ") + std::strerror(errno)
                                      : std::string("the file shrank while being read")));
        done += size_t(n);
      }
      if (Status s = checkHash(path, checksumOf(k.hash.kind, image.bytes.data(), size),
                               k.hash);
          !s)
        return s;
      cuda->images.push_back(std::move(image));
    }
  }

  // Load the program. A path with a '/' makes dlopen take it as a file, never
  // a library search.
  std::string loadPath = programPath;
  if (loadPath.find('/') == std::string::npos)
    loadPath = "./" + loadPath;
  ::dlerror();
  a->dlHandle_ = ::dlopen(loadPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!a->dlHandle_) {
    const char *why = ::dlerror();
    return Status::error(programPath + ": cannot load the program: " +
                         (why ? why : "unknown dlopen error"));
  }
  // What the program was compiled for must be what the manifest says, or
  // it would read and write outside the buffers the runtime makes.
  ::dlerror();
  auto *signature = static_cast<const char *>(::dlsym(a->dlHandle_, abi::kSignatureSymbol));
  if (Status s = checkProgramSignature(m, signature, programPath); !s)
    return s;
  ::dlerror();
  void *sym = ::dlsym(a->dlHandle_, m.entry.c_str());
  if (!sym)
    return Status::error(programPath + ": the program has no entry symbol '" +
                         m.entry + "'");
  a->entry_ = reinterpret_cast<EntryFn>(sym);
  if (cuda) {
    registerCudaProgram(a->entry_, cuda);
    a->cudaProgram_ = std::move(cuda);
  }
  return a;
}

std::string Artifact::targetOf(const std::string &path) {
  bool bundle = path.size() >= 4 && path.compare(path.size() - 4, 4, ".trc") == 0;
  StatusOr<std::string> text = bundle ? readBundleManifest(path)
                                      : readSmallFile(path + "/" + abi::kManifestFile, kMaxManifestBytes);
  if (!text.ok())
    return "auto";
  StatusOr<Manifest> manifest = parseManifest(*text);
  if (!manifest.ok())
    return "auto";
  return manifest->target;
}

TemporaryArtifact::~TemporaryArtifact() {
  std::error_code ignored;
  if (!artifactDir.empty())
    std::filesystem::remove_all(std::filesystem::path(artifactDir).parent_path(), ignored);
}

} // namespace trc::rt
