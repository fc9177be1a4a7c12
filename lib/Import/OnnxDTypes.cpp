//===- OnnxDTypes.cpp - ONNX element types, in one table ------------------===//
//
// See trc/Import/OnnxDTypes.h. The only file that spells the TensorProto
// data type enumerators.
//
//===----------------------------------------------------------------------===//
#include "trc/Import/OnnxDTypes.h"

#include "OnnxProto.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

using namespace mlir;

namespace trc::import {

namespace {
using K = OnnxKind;
using F = OnnxField;
using rt::DType;

template <unsigned Bits> Type si(MLIRContext *c) { return IntegerType::get(c, Bits); }
template <unsigned Bits> Type ui(MLIRContext *c) {
  return IntegerType::get(c, Bits, IntegerType::Unsigned);
}
Type f32(MLIRContext *c) { return Float32Type::get(c); }
Type f64(MLIRContext *c) { return Float64Type::get(c); }
Type f16(MLIRContext *c) { return Float16Type::get(c); }
Type bf16(MLIRContext *c) { return BFloat16Type::get(c); }
constexpr std::nullopt_t kNone = std::nullopt;

// ONNX >= 1.14's float8 types, unknown to Debian's libonnx 1.12: by value.
constexpr int kFloat8E4M3FN = 17, kFloat8E4M3FNUZ = 18, kFloat8E5M2 = 19,
              kFloat8E5M2FNUZ = 20;
// Not in the table: UNDEFINED (0), and UINT4 (21) and INT4 (22), which
// ONNX packs two to a byte (trc would store a 4-bit element in a byte).

// clang-format off
const OnnxDType kTable[] = {
  // ONNX enumerator             name              kind          bits  typed field   MLIR     runtime
  {onnx::TensorProto::FLOAT,      "FLOAT",          K::Float,       32, F::FloatData,  f32,     DType::F32},
  {onnx::TensorProto::UINT8,      "UINT8",          K::UnsignedInt,  8, F::Int32Data,  ui<8>,   DType::U8},
  {onnx::TensorProto::INT8,       "INT8",           K::SignedInt,    8, F::Int32Data,  si<8>,   DType::I8},
  {onnx::TensorProto::UINT16,     "UINT16",         K::UnsignedInt, 16, F::Int32Data,  ui<16>,  DType::U16},
  {onnx::TensorProto::INT16,      "INT16",          K::SignedInt,   16, F::Int32Data,  si<16>,  DType::I16},
  {onnx::TensorProto::INT32,      "INT32",          K::SignedInt,   32, F::Int32Data,  si<32>,  DType::I32},
  {onnx::TensorProto::INT64,      "INT64",          K::SignedInt,   64, F::Int64Data,  si<64>,  DType::I64},
  {onnx::TensorProto::STRING,     "STRING",         K::String,       0, F::StringData, nullptr, kNone},
  {onnx::TensorProto::BOOL,       "BOOL",           K::Bool,         1, F::Int32Data,  si<1>,   DType::I1},
  {onnx::TensorProto::FLOAT16,    "FLOAT16",        K::Float,       16, F::Int32Data,  f16,     DType::F16},
  {onnx::TensorProto::DOUBLE,     "DOUBLE",         K::Float,       64, F::DoubleData, f64,     DType::F64},
  {onnx::TensorProto::UINT32,     "UINT32",         K::UnsignedInt, 32, F::Uint64Data, ui<32>,  DType::U32},
  {onnx::TensorProto::UINT64,     "UINT64",         K::UnsignedInt, 64, F::Uint64Data, ui<64>,  DType::U64},
  {onnx::TensorProto::COMPLEX64,  "COMPLEX64",      K::Complex,     32, F::FloatData,  nullptr, kNone},
  {onnx::TensorProto::COMPLEX128, "COMPLEX128",     K::Complex,     64, F::DoubleData, nullptr, kNone},
  {onnx::TensorProto::BFLOAT16,   "BFLOAT16",       K::Float,       16, F::Int32Data,  bf16,    DType::BF16},
  {kFloat8E4M3FN,                 "FLOAT8E4M3FN",   K::Float,        8, F::Int32Data,  nullptr, kNone},
  {kFloat8E4M3FNUZ,               "FLOAT8E4M3FNUZ", K::Float,        8, F::Int32Data,  nullptr, kNone},
  {kFloat8E5M2,                   "FLOAT8E5M2",     K::Float,        8, F::Int32Data,  nullptr, kNone},
  {kFloat8E5M2FNUZ,               "FLOAT8E5M2FNUZ", K::Float,        8, F::Int32Data,  nullptr, kNone},
};
// clang-format on

static_assert(kOnnxFloat == onnx::TensorProto::FLOAT &&
                  kOnnxInt32 == onnx::TensorProto::INT32 &&
                  kOnnxInt64 == onnx::TensorProto::INT64,
              "OnnxDTypes.h's named types must match the ONNX enum");
} // namespace

llvm::ArrayRef<OnnxDType> onnxDTypes() { return kTable; }

const OnnxDType *findOnnxDType(int onnxType) {
  for (const OnnxDType &row : kTable)
    if (row.onnxType == onnxType)
      return &row;
  return nullptr;
}

const OnnxDType *findOnnxDType(rt::DType dtype) {
  for (const OnnxDType &row : kTable)
    if (row.dtype == dtype)
      return &row;
  return nullptr;
}

Type elementTypeOf(int onnxType, MLIRContext *context) {
  const OnnxDType *row = findOnnxDType(onnxType);
  return row ? row->elementType(context) : Type();
}

std::string onnxTypeName(int onnxType) {
  if (const OnnxDType *row = findOnnxDType(onnxType))
    return row->name;
  if (onnx::TensorProto_DataType_IsValid(onnxType)) // UNDEFINED, or a later libonnx's
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(onnxType));
  return "type #" + std::to_string(onnxType);
}

} // namespace trc::import
