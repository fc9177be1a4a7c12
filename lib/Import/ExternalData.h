//===- ExternalData.h - ONNX external data, read safely ---------*- C++ -*-===//
//
// Resolves a tensor's external-data location against the model's folder and
// memory-maps the file. Rejects locations that leave the folder (absolute
// paths, `..`, symlinks pointing outside), ranges past the end of the file,
// and files shorter than the declared length. Mappings are shared between
// tensors of one file and live as long as any blob borrowing them.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_EXTERNALDATA_H
#define TRC_LIB_IMPORT_EXTERNALDATA_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <memory>
#include <string>

namespace trc::import {

/// A read-only mapping of a whole file; unmapped when the last user lets go.
class MappedFile {
public:
  static std::shared_ptr<MappedFile> open(const std::string &path, std::string &error);
  ~MappedFile();
  llvm::ArrayRef<char> bytes() const { return {data_, size_}; }

private:
  MappedFile(const char *data, size_t size) : data_(data), size_(size) {}
  const char *data_;
  size_t size_;
};

/// A view of external bytes plus the mapping that keeps them alive.
struct ExternalBytes {
  llvm::ArrayRef<char> bytes;
  std::shared_ptr<MappedFile> owner;
};

class ExternalDataReader {
public:
  /// `modelDir` is the folder of the .onnx file (empty: external data is
  /// refused, as for a model read from memory).
  explicit ExternalDataReader(std::string modelDir) : modelDir_(std::move(modelDir)) {}

  /// Returns `expectedLength` bytes at (location, offset); `length` < 0 means
  /// "not declared". On error returns false and sets `error`.
  bool read(llvm::StringRef location, int64_t offset, int64_t length,
            int64_t expectedLength, ExternalBytes &out, std::string &error);

private:
  std::string modelDir_;
  std::map<std::string, std::shared_ptr<MappedFile>> files_;
};

} // namespace trc::import

#endif
