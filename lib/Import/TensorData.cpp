//===- TensorData.cpp - ONNX tensors and types as MLIR ---------------------===//
#include "TensorData.h"
#include "trc/Analysis/ElementBytes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>
#include <vector>

using namespace mlir;

namespace trc::import {

std::string checkDims(llvm::ArrayRef<int64_t> dims) {
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d < 0)
      return "negative dimension " + std::to_string(d);
    if (d > kMaxDimSize)
      return "absurd dimension " + std::to_string(d);
    if (d != 0 && elements > kMaxElements / d)
      return "absurd element count (the dimensions multiply past 2^40)";
    elements *= d;
  }
  return "";
}

bool isUnsupportedTensorType(const onnx::TensorProto &tensor) {
  const OnnxDType *row = findOnnxDType(tensor.data_type());
  return !row || !row->buildElementType || row->kind == OnnxKind::String;
}

RankedTensorType tensorTypeOf(const onnx::TensorProto &tensor, MLIRContext *context,
                              std::string &error) {
  Type elem = elementTypeOf(tensor.data_type(), context);
  if (!elem) {
    error = "element type " + onnxTypeName(tensor.data_type()) + " is not supported";
    return {};
  }
  std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  error = checkDims(dims);
  if (!error.empty())
    return {};
  return RankedTensorType::get(dims, elem);
}

namespace {
// Copies the typed-field contents of `tensor` into little-endian bytes of
// the element width; false if the field holding them has the wrong count.
bool typedFieldBytes(const onnx::TensorProto &t, Type elem, int64_t count,
                     std::vector<char> &out, std::string &error) {
  int64_t width = elementBytes(elem);
  auto fill = [&](const auto &field, const char *fieldName) {
    // Checked before allocating: the shape alone may declare terabytes.
    if (static_cast<int64_t>(field.size()) != count) {
      error = std::string(fieldName) + " holds " + std::to_string(field.size()) +
              " values, the shape needs " + std::to_string(count);
      return false;
    }
    out.resize(static_cast<size_t>(count * width));
    for (int64_t i = 0; i < count; ++i) {
      auto v = field.Get(static_cast<int>(i));
      // Narrow to the element width (little endian: the low bytes come first).
      uint64_t bits = 0;
      if constexpr (std::is_floating_point_v<decltype(v)>) {
        if (width == 4) {
          float f = static_cast<float>(v);
          std::memcpy(&bits, &f, 4);
        } else {
          double d = static_cast<double>(v);
          std::memcpy(&bits, &d, 8);
        }
      } else {
        bits = static_cast<uint64_t>(v);
      }
      std::memcpy(out.data() + i * width, &bits, static_cast<size_t>(width));
    }
    return true;
  };
  const OnnxDType *row = findOnnxDType(t.data_type());
  switch (row ? row->field : OnnxField::Int32Data) {
  case OnnxField::FloatData: return fill(t.float_data(), "float_data");
  case OnnxField::DoubleData: return fill(t.double_data(), "double_data");
  case OnnxField::Int64Data: return fill(t.int64_data(), "int64_data");
  case OnnxField::Uint64Data: return fill(t.uint64_data(), "uint64_data");
  default: return fill(t.int32_data(), "int32_data");
  }
}
} // namespace

bool tensorBytes(const onnx::TensorProto &tensor, int64_t byteSize, ExternalDataReader &external,
                 ExternalBytes &out, std::string &error) {
  error.clear();
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &entry : tensor.external_data()) {
      if (entry.key() == "location") {
        location = entry.value();
        continue;
      }
      if (entry.key() != "offset" && entry.key() != "length")
        continue; // "checksum" and unknown keys are ignored
      // The whole value must be a decimal integer ("12abc" is not 12).
      int64_t &field = entry.key() == "offset" ? offset : length;
      if (llvm::StringRef(entry.value()).getAsInteger(10, field) || field < 0) {
        error = "external data key '" + entry.key() + "' has the value '" +
                entry.value() + "', not a non-negative integer";
        return false;
      }
    }
    return external.read(location, offset, length, byteSize, out, error);
  }
  if (!tensor.has_raw_data())
    return false;
  if (static_cast<int64_t>(tensor.raw_data().size()) != byteSize) {
    error = "raw_data holds " + std::to_string(tensor.raw_data().size()) +
            " bytes, the shape and type need " + std::to_string(byteSize);
    return false;
  }
  out = {{tensor.raw_data().data(), tensor.raw_data().size()}, nullptr};
  return true;
}

ElementsAttr readTensor(const onnx::TensorProto &tensor, RankedTensorType type,
                        bool asResource, llvm::StringRef blobName,
                        ExternalDataReader &external, std::string &error) {
  Type elem = type.getElementType();
  int64_t count = type.getNumElements();
  int64_t width = elementBytes(elem);
  int64_t byteSize = count * width;

  llvm::ArrayRef<char> bytes;
  std::vector<char> converted;
  std::shared_ptr<MappedFile> owner;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL || tensor.has_raw_data()) {
    ExternalBytes held;
    if (!tensorBytes(tensor, byteSize, external, held, error))
      return {};
    bytes = held.bytes;
    owner = held.owner;
  } else {
    if (const OnnxDType *row = findOnnxDType(tensor.data_type());
        row && row->kind == OnnxKind::String) {
      error = "string tensors are not supported";
      return {};
    }
    if (!typedFieldBytes(tensor, elem, count, converted, error))
      return {};
    bytes = converted;
  }

  if (elem.isInteger(1)) {
    std::vector<bool> values(bytes.size());
    for (size_t i = 0; i < bytes.size(); ++i)
      values[i] = bytes[i] != 0;
    llvm::SmallVector<bool> flags(values.begin(), values.end());
    return DenseElementsAttr::get(type, llvm::ArrayRef<bool>(flags));
  }

  if (asResource && isa<FloatType>(elem)) {
    size_t align = static_cast<size_t>(width);
    bool aligned = reinterpret_cast<uintptr_t>(bytes.data()) % align == 0;
    AsmResourceBlob blob =
        owner && aligned
            // Borrow the mapped file; the deleter keeps it mapped until then.
            ? UnmanagedAsmResourceBlob::allocateWithAlign(
                  bytes, align, [owner](void *, size_t, size_t) mutable { owner.reset(); })
            // A zero-element tensor has no bytes (and maybe a null data
            // pointer, which allocateAndCopyWithAlign would pass to memcpy).
            : bytes.empty() ? HeapAsmResourceBlob::allocate(0, align)
                            : HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, align);
    return DenseResourceElementsAttr::get(type, blobName, std::move(blob));
  }
  if (count == 0)
    return DenseElementsAttr::get(type, llvm::ArrayRef<Attribute>());
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}

llvm::ArrayRef<char> elementsBytes(mlir::ElementsAttr value) {
  if (auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(value))
    return dense.getRawData();
  if (auto resource = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(value))
    if (mlir::AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
  return {};
}

} // namespace trc::import
