//===- TensorData.h - ONNX tensors and types as MLIR ------------*- C++ -*-===//
//
// Turns TensorProto contents (raw_data, typed fields, or external data in a
// side file) into MLIR ElementsAttrs, element types by the one ONNX type
// table (trc/Import/OnnxDTypes.h). Large float tensors become dense_resource
// blobs that borrow memory-mapped external data instead of copying it.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_TENSORDATA_H
#define TRC_LIB_IMPORT_TENSORDATA_H

#include "ExternalData.h"
#include "OnnxProto.h"
#include "trc/Import/OnnxDTypes.h" // elementTypeOf, onnxTypeName

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <string>

namespace trc::import {

/// Largest dimension and element count trc accepts (anything above is
/// "absurd": a corrupt or hostile file, not a model).
constexpr int64_t kMaxDimSize = int64_t(1) << 40;
constexpr int64_t kMaxElements = int64_t(1) << 40;

/// Checks dims are in [0, kMaxDimSize] with a product <= kMaxElements;
/// otherwise returns a message.
std::string checkDims(llvm::ArrayRef<int64_t> dims);

/// The `byteSize` bytes of a tensor's raw_data or external data (mapped, and
/// kept mapped by `out.owner`). False with `error` set when they are not
/// readable or not `byteSize` long; false with `error` empty when the tensor
/// keeps its values in typed fields instead.
bool tensorBytes(const onnx::TensorProto &tensor, int64_t byteSize, ExternalDataReader &external,
                 ExternalBytes &out, std::string &error);

/// Reads a tensor's contents. With `asResource`, floats become a
/// dense_resource blob named `blobName`; otherwise a DenseElementsAttr.
/// On error returns null and sets `error`.
mlir::ElementsAttr readTensor(const onnx::TensorProto &tensor,
                              mlir::RankedTensorType type, bool asResource,
                              llvm::StringRef blobName, ExternalDataReader &external,
                              std::string &error);

/// The bytes a dense or dense_resource attribute holds (one element for a
/// splat); empty for other kinds or an unloaded resource.
llvm::ArrayRef<char> elementsBytes(mlir::ElementsAttr value);

/// The static RankedTensorType of a TensorProto, or null with `error` set.
mlir::RankedTensorType tensorTypeOf(const onnx::TensorProto &tensor,
                                    mlir::MLIRContext *context, std::string &error);
/// Whether `tensor` holds an element type trc does not cover (no trc type,
/// or strings): its errors are ImportReport::unsupported, not malformations.
bool isUnsupportedTensorType(const onnx::TensorProto &tensor);

} // namespace trc::import

#endif
