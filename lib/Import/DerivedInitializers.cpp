//===- DerivedInitializers.cpp - initializers folded from parameters -------===//
#include "DerivedInitializers.h"
#include "TensorData.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/StringRef.h"

#include <cstring>
#include <map>

namespace trc::import {

namespace {
bool isExporterName(llvm::StringRef name) { return name.starts_with("onnx::"); }

// Bytes per element of a float type the importer makes parameters of; 0
// for other types.
int64_t elementBytes(int type) {
  const OnnxDType *row = findOnnxDType(type);
  return row && row->kind == OnnxKind::Float && row->buildElementType ? row->bytes() : 0;
}

std::string transposedBytes(const onnx::TensorProto &t, int64_t width) {
  int64_t rows = t.dims(0), cols = t.dims(1);
  const std::string &src = t.raw_data();
  std::string out(src.size(), '\0');
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(&out[(c * rows + r) * width], &src[(r * cols + c) * width],
                  static_cast<size_t>(width));
  return out;
}

// A key identifying (type, shape, contents) cheaply; equal keys are then
// confirmed byte by byte.
size_t contentKey(int type, llvm::ArrayRef<int64_t> dims, llvm::StringRef bytes) {
  return llvm::hash_combine(type, llvm::hash_combine_range(dims.begin(), dims.end()),
                            llvm::hash_value(bytes));
}
} // namespace

std::vector<DerivedInitializer> findDerivedInitializers(const onnx::GraphProto &graph) {
  std::multimap<size_t, const onnx::TensorProto *> originals;
  std::vector<const onnx::TensorProto *> candidates;
  for (const auto &t : graph.initializer()) {
    int64_t width = elementBytes(t.data_type());
    if (!width || !t.has_raw_data() || t.raw_data().empty())
      continue;
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    if (!checkDims(dims).empty())
      continue; // negative or absurd dimensions; the importer reports them
    int64_t count = 1;
    for (int64_t d : dims)
      count *= d; // cannot overflow: checkDims bounds the product by 2^40
    if (count * width != static_cast<int64_t>(t.raw_data().size()))
      continue; // malformed; the importer reports it
    if (isExporterName(t.name()))
      candidates.push_back(&t);
    else
      originals.emplace(contentKey(t.data_type(), dims, t.raw_data()), &t);
  }

  std::vector<DerivedInitializer> found;
  for (const auto *copy : candidates) {
    int64_t width = elementBytes(copy->data_type());
    std::vector<int64_t> dims(copy->dims().begin(), copy->dims().end());
    auto matches = [&](llvm::ArrayRef<int64_t> shape, const std::string &bytes) {
      std::vector<const onnx::TensorProto *> out;
      auto range = originals.equal_range(contentKey(copy->data_type(), shape, bytes));
      for (auto it = range.first; it != range.second; ++it)
        if (it->second->raw_data() == bytes)
          out.push_back(it->second);
      return out;
    };
    auto same = matches(dims, copy->raw_data());
    if (same.size() == 1) {
      found.push_back({copy->name(), same[0]->name(), false});
      continue;
    }
    if (dims.size() == 2 && same.empty()) {
      // copy == transpose(source)  <=>  transpose(copy) == source
      auto transposed = matches({dims[1], dims[0]}, transposedBytes(*copy, width));
      if (transposed.size() == 1)
        found.push_back({copy->name(), transposed[0]->name(), true});
    }
  }
  return found;
}

} // namespace trc::import
