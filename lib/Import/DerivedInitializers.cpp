//===- DerivedInitializers.cpp - initializers folded from parameters -------===//
#include "DerivedInitializers.h"
#include "ExporterTags.h"
#include "TensorData.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/StringRef.h"

#include <cstring>
#include <map>
#include <optional>
#include <set>

namespace trc::import {

namespace {
// Whether the exporter made `name` (rather than the model declaring it):
// the TorchScript exporter's "onnx::" names, or an untagged initializer of an
// export that tags its parameters.
bool isExporterMade(const std::string &name, const ExporterTags &tags) {
  return llvm::StringRef(name).starts_with("onnx::") ||
         (tags.tagged() && !tags.kinds.count(name));
}

// Bytes per element of a float type the importer makes parameters of; 0
// for other types.
int64_t elementBytes(int type) {
  const OnnxDType *row = findOnnxDType(type);
  return row && row->kind == OnnxKind::Float && row->buildElementType ? row->bytes() : 0;
}

std::string transposedBytes(llvm::StringRef src, int64_t rows, int64_t cols, int64_t width) {
  std::string out(src.size(), '\0');
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(&out[(c * rows + r) * width], src.data() + (r * cols + c) * width,
                  static_cast<size_t>(width));
  return out;
}

// A key identifying (type, shape, contents) cheaply; equal keys are then
// confirmed byte by byte.
size_t contentKey(int type, llvm::ArrayRef<int64_t> dims, llvm::StringRef bytes) {
  return llvm::hash_combine(type, llvm::hash_combine_range(dims.begin(), dims.end()),
                            llvm::hash_value(bytes));
}

struct Compared {
  const onnx::TensorProto *tensor;
  std::vector<int64_t> dims;
  llvm::StringRef bytes;
};
} // namespace

bool isFill(llvm::StringRef bytes, int64_t width) {
  for (size_t i = width; i < bytes.size(); i += width)
    if (bytes.substr(i, width) != bytes.substr(0, width))
      return false;
  return true;
}

std::vector<DerivedInitializer> findDerivedInitializers(const onnx::GraphProto &graph,
                                                        const ExporterTags &tags,
                                                        TensorBytes bytesOf) {
  // Reads `t`'s bytes when it is a float tensor with sane dims.
  auto compared = [&](const onnx::TensorProto &t) -> std::optional<Compared> {
    int64_t width = elementBytes(t.data_type());
    if (!width)
      return std::nullopt;
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    if (!checkDims(dims).empty())
      return std::nullopt; // negative or absurd dimensions; the importer reports them
    int64_t count = 1;
    for (int64_t d : dims)
      count *= d; // cannot overflow: checkDims bounds the product by 2^40
    llvm::ArrayRef<char> bytes;
    if (!count || !bytesOf(t, count * width, bytes) ||
        static_cast<int64_t>(bytes.size()) != count * width)
      return std::nullopt; // no data to compare, or malformed (the importer reports it)
    return Compared{&t, dims, llvm::StringRef(bytes.data(), bytes.size())};
  };

  // The exporter's copies first; then only originals of a shape a copy (or
  // its transpose) has are read, so a model without copies reads nothing.
  std::vector<Compared> candidates;
  std::set<std::pair<int, std::vector<int64_t>>> wanted;
  for (const auto &t : graph.initializer()) {
    if (!isExporterMade(t.name(), tags))
      continue;
    std::optional<Compared> c = compared(t);
    if (!c || isFill(c->bytes, elementBytes(t.data_type())))
      continue;
    candidates.push_back(*c);
    wanted.insert({t.data_type(), c->dims});
    if (c->dims.size() == 2)
      wanted.insert({t.data_type(), {c->dims[1], c->dims[0]}});
  }
  std::multimap<size_t, Compared> originals;
  for (const auto &t : graph.initializer()) {
    if (candidates.empty() || isExporterMade(t.name(), tags) ||
        !wanted.count({t.data_type(), std::vector<int64_t>(t.dims().begin(), t.dims().end())}))
      continue;
    if (std::optional<Compared> c = compared(t))
      originals.emplace(contentKey(t.data_type(), c->dims, c->bytes), *c);
  }

  std::vector<DerivedInitializer> found;
  for (const Compared &copy : candidates) {
    int type = copy.tensor->data_type();
    auto matches = [&](llvm::ArrayRef<int64_t> shape, llvm::StringRef bytes) {
      std::vector<const onnx::TensorProto *> out;
      auto range = originals.equal_range(contentKey(type, shape, bytes));
      for (auto it = range.first; it != range.second; ++it)
        if (it->second.bytes == bytes)
          out.push_back(it->second.tensor);
      return out;
    };
    auto same = matches(copy.dims, copy.bytes);
    if (same.size() == 1) {
      found.push_back({copy.tensor->name(), same[0]->name(), false});
      continue;
    }
    if (copy.dims.size() == 2 && same.empty()) {
      // copy == transpose(source)  <=>  transpose(copy) == source
      std::string back = transposedBytes(copy.bytes, copy.dims[0], copy.dims[1],
                                         elementBytes(type));
      auto transposed = matches({copy.dims[1], copy.dims[0]}, back);
      if (transposed.size() == 1)
        found.push_back({copy.tensor->name(), transposed[0]->name(), true});
    }
  }
  return found;
}

std::vector<DerivedInitializer> findDerivedInitializers(const onnx::GraphProto &graph) {
  return findDerivedInitializers(
      graph, readExporterTags(graph),
      [](const onnx::TensorProto &t, int64_t, llvm::ArrayRef<char> &bytes) {
        if (!t.has_raw_data() || t.data_location() == onnx::TensorProto::EXTERNAL)
          return false;
        bytes = {t.raw_data().data(), t.raw_data().size()};
        return true;
      });
}

} // namespace trc::import
