//===- OnnxDTypes.h - ONNX element types, in one table ----------*- C++ -*-===//
//
// Every ONNX TensorProto data type trc knows, one row each: its enumerator
// value, its name, its kind, its bit width (hence its bytes, by trc's one
// storage rule, trc/Abi/ElementBytes.h), the typed field that holds its
// values when a tensor has no raw_data, the MLIR element type the importer
// gives it, and the runtime dtype (runtime/support/DType.h) where one
// exists. The importer, the tensor-data readers, trc-run (constant inputs,
// --export-onnx) and trc-onnx-conformance all map types through this table;
// only lib/Import/OnnxDTypes.cpp spells the TensorProto enumerators.
//
// The header needs no ONNX protobuf headers; TrcImport defines it.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_IMPORT_ONNXDTYPES_H
#define TRC_IMPORT_ONNXDTYPES_H

#include "trc/Abi/ElementBytes.h"

#include "runtime/support/DType.h"

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace trc::import {

enum class OnnxKind : uint8_t { Float, SignedInt, UnsignedInt, Bool, Complex, String };

/// The repeated field of a TensorProto that holds its values when it has no
/// raw_data (ONNX puts bool, 8- and 16-bit integers and 16-bit floats' bits
/// in int32_data; complex numbers are two values of float_data/double_data).
enum class OnnxField : uint8_t { Int32Data, FloatData, DoubleData, Int64Data, Uint64Data, StringData };

struct OnnxDType {
  int onnxType;     // TensorProto::DataType
  const char *name; // as TensorProto_DataType_Name spells it: "FLOAT", "INT64"...
  OnnxKind kind;
  int bits;         // of one element (of one part, for complex); 0 for STRING
  OnnxField field;
  /// The MLIR element type trc imports it as; null for types trc does not
  /// import (strings, complex, float8).
  mlir::Type (*buildElementType)(mlir::MLIRContext *);
  /// The runtime's dtype for tensors of this type, where the runtime has one.
  std::optional<rt::DType> dtype;

  /// Bytes per element in memory, in raw_data and in external data (BOOL:
  /// one byte). 0 for STRING, which is not fixed width.
  constexpr int64_t bytes() const {
    return abi::storageBytesPerElement(bits, kind == OnnxKind::Complex);
  }
  mlir::Type elementType(mlir::MLIRContext *context) const {
    return buildElementType ? buildElementType(context) : mlir::Type();
  }
  bool isInteger() const { return kind == OnnxKind::SignedInt || kind == OnnxKind::UnsignedInt; }
};

/// The table, ordered by onnxType.
llvm::ArrayRef<OnnxDType> onnxDTypes();

/// The row of a TensorProto::DataType value, or null for one trc does not
/// know (UNDEFINED, packed 4-bit types, values past the table).
const OnnxDType *findOnnxDType(int onnxType);

/// The row whose runtime dtype is `dtype` (every rt::DType has one).
const OnnxDType *findOnnxDType(rt::DType dtype);

/// The MLIR element type of a TensorProto::DataType, or null.
mlir::Type elementTypeOf(int onnxType, mlir::MLIRContext *context);

/// "FLOAT", "INT64", ... for messages ("type #N" for an unknown value).
std::string onnxTypeName(int onnxType);

/// The TensorProto::DataType values code names by themselves (an ONNX
/// attribute's default, shape-math initializers); OnnxDTypes.cpp checks
/// them against the ONNX enum.
constexpr int kOnnxFloat = 1;
constexpr int kOnnxInt32 = 6;
constexpr int kOnnxInt64 = 7;

} // namespace trc::import

#endif // TRC_IMPORT_ONNXDTYPES_H
