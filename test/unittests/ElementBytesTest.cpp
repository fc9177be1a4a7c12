//===- ElementBytesTest.cpp - one byte-size rule, one ONNX type table -------===//
//
// trc::elementBytes / storageBytes (include/trc/Analysis/ElementBytes.h), the
// compiler's side of the storage rule that rt::dtypeSize also follows (i1
// and i4 one byte per element, bf16 2, f64 8, complex<fN> 2*N/8), and the
// ONNX type table (include/trc/Import/OnnxDTypes.h) against libonnx and the
// runtime's dtypes.
//
//===----------------------------------------------------------------------===//
#include "trc/Analysis/ElementBytes.h"
#include "trc/Import/OnnxDTypes.h"

#include "runtime/support/DType.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include "onnx/onnx_pb.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

TEST(ElementBytes, OneRule) {
  MLIRContext context;
  Builder b(&context);
  EXPECT_EQ(trc::elementBytes(b.getI1Type()), 1);             // a whole byte
  EXPECT_EQ(trc::elementBytes(b.getIntegerType(4)), 1);       // not packed
  EXPECT_EQ(trc::elementBytes(b.getIntegerType(8, false)), 1);
  EXPECT_EQ(trc::elementBytes(b.getBF16Type()), 2);
  EXPECT_EQ(trc::elementBytes(b.getF16Type()), 2);
  EXPECT_EQ(trc::elementBytes(b.getF32Type()), 4);
  EXPECT_EQ(trc::elementBytes(b.getF64Type()), 8);
  EXPECT_EQ(trc::elementBytes(b.getI64Type()), 8);
  EXPECT_EQ(trc::elementBytes(b.getIndexType()), 8);
  EXPECT_EQ(trc::elementBytes(ComplexType::get(b.getF32Type())), 8);
  EXPECT_EQ(trc::elementBytes(ComplexType::get(b.getF64Type())), 16);
  EXPECT_EQ(trc::elementBytes(NoneType::get(&context)), 0);

  EXPECT_EQ(trc::storageBytes(RankedTensorType::get({3, 5}, b.getI1Type())), 15);
  EXPECT_EQ(trc::storageBytes(RankedTensorType::get({3}, b.getIntegerType(4))), 3);
  EXPECT_EQ(trc::storageBytes(MemRefType::get({2, 4}, b.getBF16Type())), 16);
  EXPECT_EQ(trc::storageBytes(RankedTensorType::get({}, b.getF64Type())), 8);
  EXPECT_EQ(trc::storageBytes(RankedTensorType::get({0, 7}, b.getF32Type())), 0);
  EXPECT_EQ(trc::storageBytes(
                RankedTensorType::get({2}, ComplexType::get(b.getF32Type()))),
            16);
}

// The compiler's bytes for an element type equal the runtime's for the
// dtype the artifact gives it, and the ONNX table's for the ONNX type.
TEST(OnnxDTypes, AgreeWithRuntimeAndOnnx) {
  MLIRContext context;
  int withDType = 0;
  for (const trc::import::OnnxDType &row : trc::import::onnxDTypes()) {
    SCOPED_TRACE(row.name);
    if (onnx::TensorProto_DataType_IsValid(row.onnxType))
      EXPECT_EQ(onnx::TensorProto_DataType_Name(
                    static_cast<onnx::TensorProto_DataType>(row.onnxType)),
                row.name);
    EXPECT_EQ(trc::import::findOnnxDType(row.onnxType), &row);
    EXPECT_EQ(trc::import::onnxTypeName(row.onnxType), row.name);
    Type elem = row.elementType(&context);
    EXPECT_EQ(trc::import::elementTypeOf(row.onnxType, &context), elem);
    if (elem)
      EXPECT_EQ(trc::elementBytes(elem), row.bytes());
    if (row.dtype) {
      ++withDType;
      EXPECT_TRUE(elem) << "a runtime dtype without an MLIR type";
      EXPECT_EQ(int64_t(trc::rt::dtypeSize(*row.dtype)), row.bytes());
      EXPECT_EQ(trc::import::findOnnxDType(*row.dtype), &row);
    }
  }
  EXPECT_EQ(withDType, 13); // every rt::DType: f32 f64 f16 bf16 i1 i8..i64 u8..u64
  EXPECT_EQ(trc::import::findOnnxDType(onnx::TensorProto::BOOL)->bytes(), 1);
  EXPECT_EQ(trc::import::findOnnxDType(onnx::TensorProto::COMPLEX64)->bytes(), 8);
  EXPECT_EQ(trc::import::findOnnxDType(onnx::TensorProto::COMPLEX128)->bytes(), 16);
  EXPECT_EQ(trc::import::findOnnxDType(onnx::TensorProto::STRING)->bytes(), 0);
  EXPECT_EQ(trc::import::findOnnxDType(0), nullptr);
  EXPECT_EQ(trc::import::onnxTypeName(0), "UNDEFINED");
  EXPECT_EQ(trc::import::onnxTypeName(99), "type #99");
}

} // namespace
