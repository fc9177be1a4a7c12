//===- Safetensors.cpp - the safetensors tensor file format -----------------===//
//
// The reader validates the header completely before any tensor is touched;
// the writer computes the header first so the tensors' bytes can stream
// straight from the caller's buffers into a FileWriter. See Safetensors.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Safetensors.h"

#include "runtime/formats/Json.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <unistd.h>

namespace trc::rt {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the safetensors code assumes a little-endian host");

namespace {

struct StDType {
  const char *name;
  DType dtype;
};
// In the order of the reference implementation's layout (its dtype enum,
// descending): the writer sorts by position in this table, then by name.
constexpr StDType kStDTypes[] = {
    {"U64", DType::U64}, {"I64", DType::I64}, {"F64", DType::F64},
    {"F32", DType::F32}, {"U32", DType::U32}, {"I32", DType::I32},
    {"BF16", DType::BF16}, {"F16", DType::F16}, {"U16", DType::U16},
    {"I16", DType::I16}, {"I8", DType::I8},   {"U8", DType::U8},
    {"BOOL", DType::I1},
};

size_t layoutRank(DType dtype) {
  for (size_t i = 0; i < sizeof(kStDTypes) / sizeof(kStDTypes[0]); ++i)
    if (kStDTypes[i].dtype == dtype)
      return i;
  return SIZE_MAX;
}
// dtypes of the format that trc has no type for.
constexpr const char *kUnsupported[] = {
    "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
    "F4",      "F6_E2M3", "F6_E3M2", "C64",         "C128",
};

// A name or string as it may be shown in a message: control characters
// replaced, at most 64 bytes.
std::string shown(std::string_view s) {
  std::string out;
  for (char ch : s.substr(0, 64)) {
    unsigned char c = static_cast<unsigned char>(ch);
    out += c < 0x20 || c == 0x7f ? '?' : ch;
  }
  return s.size() > 64 ? out + "..." : out;
}

uint64_t readLE64(const char *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

StatusOr<SafetensorsEntry> parseEntry(const std::string &name, const std::string &tensorName,
                                      const JsonValue &v) {
  std::string where = name + ": tensor '" + shown(tensorName) + "': ";
  if (!v.isObject())
    return Status::error(where + "expected an object, got " +
                         JsonValue::kindName(v.kind()));
  for (const auto &m : v.members())
    if (m.first != "dtype" && m.first != "shape" && m.first != "data_offsets")
      return Status::error(where + "unexpected key '" + shown(m.first) +
                           "' (expected dtype, shape and data_offsets)");
  const JsonValue *dtype = v.find("dtype");
  const JsonValue *shape = v.find("shape");
  const JsonValue *offsets = v.find("data_offsets");
  if (!dtype || !shape || !offsets)
    return Status::error(where + "missing key '" +
                         std::string(!dtype   ? "dtype"
                                     : !shape ? "shape"
                                              : "data_offsets") +
                         "'");
  if (!dtype->isString())
    return Status::error(where + "dtype is not a string");
  SafetensorsEntry e;
  if (!parseSafetensorsDType(dtype->text(), e.dtype)) {
    for (const char *u : kUnsupported)
      if (dtype->text() == u)
        return Status::error(where + "dtype " + u + " is not supported");
    return Status::error(where + "unknown dtype '" + shown(dtype->text()) +
                         "'");
  }
  if (!shape->isArray())
    return Status::error(where + "shape is not an array");
  if (int64_t(shape->elements().size()) > kMaxRank)
    return Status::error(where + "shape has more than " +
                         std::to_string(kMaxRank) + " dimensions");
  for (const JsonValue &d : shape->elements()) {
    int64_t dim;
    if (!d.asInt64(dim) || dim < 0)
      return Status::error(where + "shape has a dimension that is not a "
                                   "non-negative integer");
    e.shape.push_back(dim);
  }
  int64_t count = 0;
  if (!elementCount(e.shape, count))
    return Status::error(where + "shape " + formatShape(e.shape) +
                         " has more than 2^40 elements");
  if (!offsets->isArray() || offsets->elements().size() != 2 ||
      !offsets->elements()[0].asUint64(e.begin) ||
      !offsets->elements()[1].asUint64(e.end))
    return Status::error(where + "data_offsets is not an array of two "
                                 "non-negative integers");
  if (e.begin > e.end)
    return Status::error(where + "data_offsets [" + std::to_string(e.begin) +
                         ", " + std::to_string(e.end) + "] end before they "
                         "begin");
  uint64_t bytes = uint64_t(count) * dtypeSize(e.dtype);
  if (e.end - e.begin != bytes)
    return Status::error(where + "data_offsets [" + std::to_string(e.begin) +
                         ", " + std::to_string(e.end) + "] span " +
                         std::to_string(e.end - e.begin) + " bytes but " +
                         safetensorsDTypeName(e.dtype) + " " +
                         formatShape(e.shape) + " needs " +
                         std::to_string(bytes));
  e.name = tensorName;
  return e;
}

} // namespace

const char *safetensorsDTypeName(DType dtype) {
  for (const StDType &d : kStDTypes)
    if (d.dtype == dtype)
      return d.name;
  return "?";
}

bool parseSafetensorsDType(std::string_view text, DType &out) {
  for (const StDType &d : kStDTypes) {
    if (text == d.name) {
      out = d.dtype;
      return true;
    }
  }
  return false;
}

const SafetensorsEntry *SafetensorsIndex::find(std::string_view name) const {
  for (const SafetensorsEntry &e : tensors)
    if (e.name == name)
      return &e;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

StatusOr<SafetensorsIndex> parseSafetensorsIndex(std::string_view file,
                                                 const std::string &name) {
  if (file.size() < 8)
    return Status::error(name + ": the file is " + std::to_string(file.size()) +
                         " bytes, shorter than the 8-byte header length");
  uint64_t n = readLE64(file.data());
  if (n > kMaxSafetensorsHeader)
    return Status::error(name + ": header length " + std::to_string(n) +
                         " is more than the limit of " +
                         std::to_string(kMaxSafetensorsHeader) + " bytes");
  if (n > file.size() - 8)
    return Status::error(name + ": header length " + std::to_string(n) +
                         " runs past the end of the file (" +
                         std::to_string(file.size()) + " bytes)");
  std::string_view header = file.substr(8, size_t(n));
  if (header.empty() || header[0] != '{')
    return Status::error(name + ": the header does not start with '{'");
  StatusOr<JsonValue> parsed = parseJson(header);
  if (!parsed.ok())
    return Status::error(name + ": header: " + std::string(parsed.status().message()));
  const JsonValue &root = *parsed;
  if (!root.isObject())
    return Status::error(name + ": the header is not a JSON object");

  SafetensorsIndex out;
  for (const auto &m : root.members()) {
    if (m.first == "__metadata__") {
      if (m.second.isNull())
        continue;
      if (!m.second.isObject())
        return Status::error(name + ": __metadata__ is not an object");
      for (const auto &kv : m.second.members()) {
        if (!kv.second.isString())
          return Status::error(name + ": __metadata__ value of '" +
                               shown(kv.first) + "' is not a string");
        out.metadata[kv.first] = kv.second.text();
      }
      continue;
    }
    if (m.first.empty())
      return Status::error(name + ": a tensor has an empty name");
    StatusOr<SafetensorsEntry> e = parseEntry(name, m.first, m.second);
    if (!e.ok())
      return e.status();
    out.tensors.push_back(*std::move(e));
  }

  // The tensors, in offset order, must tile the data exactly.
  std::stable_sort(out.tensors.begin(), out.tensors.end(),
                   [](const SafetensorsEntry &a, const SafetensorsEntry &b) {
                     return a.begin != b.begin ? a.begin < b.begin
                                               : a.end < b.end;
                   });
  uint64_t dataSize = file.size() - 8 - n;
  uint64_t expected = 0;
  const SafetensorsEntry *previous = nullptr;
  for (const SafetensorsEntry &e : out.tensors) {
    if (e.begin < expected)
      return Status::error(name + ": tensor '" + shown(e.name) +
                           "' (bytes " + std::to_string(e.begin) + " to " +
                           std::to_string(e.end) + ") overlaps tensor '" +
                           shown(previous->name) + "' (bytes " +
                           std::to_string(previous->begin) + " to " +
                           std::to_string(previous->end) + ")");
    if (e.begin > expected)
      return Status::error(name + ": " +
                           std::to_string(e.begin - expected) +
                           " bytes of data before tensor '" + shown(e.name) +
                           "' belong to no tensor");
    expected = e.end;
    previous = &e;
  }
  if (expected != dataSize)
    return Status::error(
        name + ": the tensors cover " + std::to_string(expected) +
        " bytes of data but the file has " + std::to_string(dataSize) +
        (expected > dataSize ? " (truncated)" : " (trailing bytes)"));
  out.dataStart = 8 + n;
  return out;
}

StatusOr<HostTensor> readSafetensorsTensor(std::string_view file, const std::string &name,
                                           const SafetensorsIndex &index,
                                           const SafetensorsEntry &entry) {
  HostTensor out;
  if (Status s = out.allocate(entry.dtype, entry.shape); !s)
    return s.withPrefix(name + ": tensor '" + shown(entry.name) + "': ");
  uint64_t size = entry.end - entry.begin;
  if (index.dataStart + entry.end > file.size())
    return Status::error(name + ": tensor '" + shown(entry.name) +
                         "' lies outside the file");
  const char *src = file.data() + index.dataStart + entry.begin;
  if (size)
    std::memcpy(out.data(), src, size_t(size));
  if (entry.dtype == DType::I1) {
    const unsigned char *p = out.as<unsigned char>();
    for (uint64_t i = 0; i < size; ++i)
      if (p[i] > 1)
        return Status::error(name + ": BOOL tensor '" + shown(entry.name) +
                             "' has the byte " + std::to_string(p[i]) +
                             " (element " + std::to_string(i) +
                             "), not 0 or 1");
  }
  return out;
}

StatusOr<SafetensorsContents> decodeSafetensors(std::string_view file,
                                                const std::string &name) {
  StatusOr<SafetensorsIndex> index = parseSafetensorsIndex(file, name);
  if (!index.ok())
    return index.status();
  SafetensorsContents result;
  result.tensors.resize(index->tensors.size());
  for (size_t i = 0; i < index->tensors.size(); ++i) {
    result.tensors[i].name = index->tensors[i].name;
    StatusOr<HostTensor> tensor = readSafetensorsTensor(file, name, *index, index->tensors[i]);
    if (!tensor.ok())
      return tensor.status();
    result.tensors[i].tensor = *std::move(tensor);
  }
  result.metadata = std::move(index->metadata);
  return result;
}

StatusOr<SafetensorsContents> readSafetensorsFile(const std::string &path) {
  MappedFile file;
  if (Status s = file.open(path); !s)
    return s;
  return decodeSafetensors(file.bytes(), path);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

StatusOr<SafetensorsHeader> encodeSafetensorsHeader(const std::vector<SafetensorsView> &tensors,
                                                    const SafetensorsMetadata &metadata) {
  SafetensorsHeader result;
  std::vector<size_t> &order = result.order;
  order.resize(tensors.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    size_t ra = layoutRank(tensors[a].dtype), rb = layoutRank(tensors[b].dtype);
    return ra != rb ? ra < rb : tensors[a].name < tensors[b].name;
  });
  for (size_t i = 0; i < order.size(); ++i) {
    const SafetensorsView &t = tensors[order[i]];
    if (layoutRank(t.dtype) == SIZE_MAX)
      return Status::error("tensor '" + shown(t.name) + "': dtype " +
                           dtypeName(t.dtype) + " has no safetensors dtype");
    if (t.name.empty())
      return Status::error("a tensor has an empty name");
    if (t.name == "__metadata__")
      return Status::error("a tensor may not be named __metadata__");
    if (i > 0 && tensors[order[i - 1]].name == t.name)
      return Status::error("duplicate tensor name '" + shown(t.name) + "'");
  }

  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto &kv : metadata) {
      if (!first)
        header += ',';
      first = false;
      appendJsonString(header, kv.first);
      header += ':';
      appendJsonString(header, kv.second);
    }
    header += '}';
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const SafetensorsView &t = tensors[order[i]];
    int64_t count = 0;
    if (!elementCount(t.shape, count))
      return Status::error("tensor '" + shown(t.name) + "': shape " +
                           formatShape(t.shape) +
                           " is invalid or has more than 2^40 elements");
    uint64_t bytes = uint64_t(count) * dtypeSize(t.dtype);
    if (bytes && !t.data)
      return Status::error("tensor '" + shown(t.name) + "' has no data");
    if (header.size() > 1)
      header += ',';
    appendJsonString(header, t.name);
    header += ":{\"dtype\":\"";
    header += safetensorsDTypeName(t.dtype);
    header += "\",\"shape\":[";
    for (size_t d = 0; d < t.shape.size(); ++d) {
      if (d)
        header += ',';
      appendJsonInt(header, t.shape[d]);
    }
    header += "],\"data_offsets\":[";
    appendJsonUint(header, offset);
    header += ',';
    appendJsonUint(header, offset + bytes);
    header += "]}";
    offset += bytes;
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');
  if (header.size() > kMaxSafetensorsHeader)
    return Status::error("the safetensors header would be " +
                         std::to_string(header.size()) +
                         " bytes, more than the limit of " +
                         std::to_string(kMaxSafetensorsHeader));
  uint64_t n = header.size();
  result.prefix.append(reinterpret_cast<const char *>(&n), 8);
  result.prefix += header;
  return result;
}

static uint64_t viewBytes(const SafetensorsView &t) {
  int64_t count = 0;
  elementCount(t.shape, count);
  return uint64_t(count) * dtypeSize(t.dtype);
}

StatusOr<std::string> encodeSafetensors(const std::vector<SafetensorsView> &tensors,
                                        const SafetensorsMetadata &metadata) {
  StatusOr<SafetensorsHeader> header = encodeSafetensorsHeader(tensors, metadata);
  if (!header.ok())
    return header.status();
  std::string out = std::move(header->prefix);
  for (size_t i : header->order)
    if (uint64_t bytes = viewBytes(tensors[i]))
      out.append(static_cast<const char *>(tensors[i].data), size_t(bytes));
  return out;
}

Status writeSafetensors(FileWriter &writer,
                        const std::vector<SafetensorsView> &tensors,
                        const SafetensorsMetadata &metadata) {
  StatusOr<SafetensorsHeader> header = encodeSafetensorsHeader(tensors, metadata);
  if (!header.ok())
    return Status(header.status()).withPrefix(writer.path() + ": ");
  if (Status s = writer.append(header->prefix); !s)
    return s;
  for (size_t i : header->order)
    if (Status s = writer.append(tensors[i].data, size_t(viewBytes(tensors[i])));
        !s)
      return s;
  return Status::success();
}

Status writeSafetensorsFile(const std::string &path,
                            const std::vector<SafetensorsView> &tensors,
                            const SafetensorsMetadata &metadata,
                            FileSystemHooks &fs) {
  return writeFileAtomicWith(path, fs, [&](FileWriter &w) {
    return writeSafetensors(w, tensors, metadata);
  });
}

} // namespace trc::rt
