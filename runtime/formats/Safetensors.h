//===- Safetensors.h - the safetensors tensor file format -------------------===//
//
// Reads and writes the safetensors format (the one of Hugging Face's
// `safetensors` package):
//
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   a JSON object: for each tensor
//               "NAME": {"dtype": "F32", "shape": [2, 3],
//                        "data_offsets": [BEGIN, END]}
//             and optionally "__metadata__": {"key": "value", ...}
//             (string values only); may end in spaces (padding)
//   the rest  the tensors' bytes, little-endian, row-major; BEGIN and END
//             are relative to the first byte after the header
//
// dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL (one byte, 0
// or 1). The format's other dtypes (F8_E4M3, F8_E5M2, ...) are recognised
// and refused as unsupported.
//
// The reader is strict and bounded, for hostile files: the header length is
// at most 100,000,000 bytes and inside the file; the header is one JSON
// object (see Json.h: UTF-8, no duplicate keys, bounded nesting) starting
// with '{'; every tensor entry has exactly the keys dtype, shape and
// data_offsets; shapes are at most 64 non-negative dims of at most 2^40
// elements in all; END - BEGIN is exactly the shape's byte size; the
// tensors, sorted by offset, tile the data without gap or overlap, from 0
// to the end of the file. Every message starts with the file name.
//
// The writer writes what the Python package writes, byte for byte: compact
// JSON, "__metadata__" first (omitted when empty), then the tensors in data
// order: by dtype (U64 I64 F64 F32 U32 I32 BF16 F16 U16 I16 I8 U8 BOOL),
// then by name, so each is aligned to its element size; the header is
// padded with spaces to a multiple of 8 bytes. (i1 is written as BOOL;
// every DType has a safetensors dtype.)
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SAFETENSORS_H
#define TRC_RUNTIME_SAFETENSORS_H

#include "runtime/support/DType.h"
#include "runtime/formats/FileOps.h"
#include "runtime/support/Status.h"
#include "runtime/support/Tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace trc::rt {

// Largest header accepted (the limit of the reference implementation).
constexpr uint64_t kMaxSafetensorsHeader = 100000000;

// The safetensors spelling of a dtype ("F32", "BOOL" for i1, ...).
const char *safetensorsDTypeName(DType dtype);
// Parses a safetensors dtype; false if it is not one trc supports.
bool parseSafetensorsDType(std::string_view text, DType &out);

using SafetensorsMetadata = std::map<std::string, std::string>;

// A tensor to write: `data` holds the dense row-major bytes of dtype/shape.
struct SafetensorsView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
};

// One tensor of a parsed header. Offsets are relative to the data start.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct SafetensorsIndex {
  std::vector<SafetensorsEntry> tensors; // in data order
  SafetensorsMetadata metadata;
  uint64_t dataStart = 0; // 8 + header length
  const SafetensorsEntry *find(std::string_view name) const;
};

/// Every tensor of a file, in data order, and its metadata.
struct SafetensorsContents {
  std::vector<NamedTensor> tensors;
  SafetensorsMetadata metadata;
};

/// The start of a file: the 8-byte length and padded header, and the order
/// (indices into the tensors written) in which their bytes must follow it.
struct SafetensorsHeader {
  std::string prefix;
  std::vector<size_t> order;
};

/// Validates a whole file image held in memory (header and sizes) and
/// returns its index; `name` starts every message.
StatusOr<SafetensorsIndex> parseSafetensorsIndex(std::string_view file,
                                                 const std::string &name);
/// A copy of one tensor of a validated image (BOOL bytes checked).
StatusOr<HostTensor> readSafetensorsTensor(std::string_view file, const std::string &name,
                                           const SafetensorsIndex &index,
                                           const SafetensorsEntry &entry);
/// Every tensor of an image, in data order, and its metadata.
StatusOr<SafetensorsContents> decodeSafetensors(std::string_view file,
                                                const std::string &name);
/// Maps and decodes a file.
StatusOr<SafetensorsContents> readSafetensorsFile(const std::string &path);

/// The header for `tensors` (see SafetensorsHeader). Fails on duplicate,
/// empty or "__metadata__" names, null data with a non-empty shape, and
/// invalid shapes.
StatusOr<SafetensorsHeader> encodeSafetensorsHeader(const std::vector<SafetensorsView> &tensors,
                                                    const SafetensorsMetadata &metadata);
/// The whole file image in memory.
StatusOr<std::string> encodeSafetensors(const std::vector<SafetensorsView> &tensors,
                                        const SafetensorsMetadata &metadata);
// Appends the whole file to an open writer (the caller finishes it).
Status writeSafetensors(FileWriter &writer,
                        const std::vector<SafetensorsView> &tensors,
                        const SafetensorsMetadata &metadata);
// Writes `path` atomically (temp file, fsync, rename, fsync of the folder).
Status writeSafetensorsFile(const std::string &path,
                            const std::vector<SafetensorsView> &tensors,
                            const SafetensorsMetadata &metadata = {},
                            FileSystemHooks &fs = systemFileSystem());

} // namespace trc::rt

#endif // TRC_RUNTIME_SAFETENSORS_H
