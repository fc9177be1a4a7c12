//===- ExternalData.cpp - ONNX external data, read safely ------------------===//
#include "ExternalData.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace trc::import {

std::shared_ptr<MappedFile> MappedFile::open(const std::string &path,
                                             std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    error = "'" + path + "' is not a regular file";
    return nullptr;
  }
  size_t size = static_cast<size_t>(st.st_size);
  const char *data = "";
  if (size > 0) {
    void *p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      error = "cannot map '" + path + "': " + std::strerror(errno);
      return nullptr;
    }
    data = static_cast<const char *>(p);
  }
  ::close(fd);
  return std::shared_ptr<MappedFile>(new MappedFile(data, size));
}

MappedFile::~MappedFile() {
  if (size_ > 0)
    munmap(const_cast<char *>(data_), size_);
}

namespace {
// The canonical (symlink-free) form of `path`, or "" if it does not exist.
std::string realPath(const std::string &path) {
  char buffer[PATH_MAX];
  if (!::realpath(path.c_str(), buffer))
    return "";
  return buffer;
}
} // namespace

bool ExternalDataReader::read(llvm::StringRef location, int64_t offset,
                              int64_t length, int64_t expectedLength,
                              ExternalBytes &out, std::string &error) {
  if (modelDir_.empty()) {
    error = "external data '" + location.str() +
            "' cannot be read for a model that is not in a file";
    return false;
  }
  if (location.empty()) {
    error = "external data has no location";
    return false;
  }
  if (llvm::sys::path::is_absolute(location)) {
    error = "external data location '" + location.str() +
            "' is an absolute path; it must be relative to the model's folder";
    return false;
  }
  for (auto it = llvm::sys::path::begin(location),
            end = llvm::sys::path::end(location);
       it != end; ++it)
    if (*it == "..") {
      error = "external data location '" + location.str() +
              "' leaves the model's folder ('..')";
      return false;
    }
  std::string joined = modelDir_ + "/" + location.str();
  std::string resolved = realPath(joined);
  std::string root = realPath(modelDir_);
  if (resolved.empty()) {
    error = "external data file '" + joined + "' does not exist";
    return false;
  }
  if (root.empty() || resolved.compare(0, root.size() + 1, root + "/") != 0) {
    error = "external data location '" + location.str() +
            "' resolves (through a symlink) to '" + resolved +
            "', outside the model's folder";
    return false;
  }
  auto &file = files_[resolved];
  if (!file && !(file = MappedFile::open(resolved, error)))
    return false;
  int64_t fileSize = static_cast<int64_t>(file->bytes().size());
  if (offset < 0 || (length >= 0 && length != expectedLength)) {
    error = "external data of '" + location.str() + "' declares offset " +
            std::to_string(offset) + " and length " + std::to_string(length) +
            ", but the tensor needs " + std::to_string(expectedLength) + " bytes";
    return false;
  }
  if (offset > fileSize || fileSize - offset < expectedLength) {
    error = "external data file '" + location.str() + "' is shorter than declared: " +
            std::to_string(fileSize) + " bytes, needs " +
            std::to_string(offset + expectedLength);
    return false;
  }
  out.bytes = file->bytes().slice(offset, expectedLength);
  out.owner = file;
  return true;
}

} // namespace trc::import
