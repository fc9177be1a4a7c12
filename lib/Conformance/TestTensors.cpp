//===- TestTensors.cpp - ONNX test data as runtime tensors, and comparison -===//
//
// See TestTensors.h.
//
//===----------------------------------------------------------------------===//
#include "trc/Conformance/TestTensors.h"

#include "trc/Import/OnnxDTypes.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace trc::conformance {

using rt::DType;
using rt::HostTensor;

namespace {

//===----------------------------------------------------------------------===//
// TensorProto -> HostTensor
//===----------------------------------------------------------------------===//

// Stores the low `size` bytes of `v` (little-endian host) at element `i`.
void storeElement(HostTensor &out, int64_t i, uint64_t v) {
  size_t size = rt::dtypeSize(out.dtype);
  std::memcpy(static_cast<char *>(out.data()) + i * size, &v, size);
}

// Copies the typed field that holds `tensor`'s elements (ONNX puts 8-, 16-
// and 32-bit integers, booleans and 16-bit floats' bits in int32_data).
std::string copyTypedField(const onnx::TensorProto &t, const import::OnnxDType &type,
                           HostTensor &out) {
  int64_t n = out.numElements();
  auto countError = [&](int64_t have) {
    return "holds " + std::to_string(have) + " values for " + std::to_string(n) +
           " elements";
  };
  switch (type.field) {
  case import::OnnxField::FloatData:
    if (t.float_data_size() != n)
      return countError(t.float_data_size());
    std::memcpy(out.data(), t.float_data().data(), n * sizeof(float));
    return "";
  case import::OnnxField::DoubleData:
    if (t.double_data_size() != n)
      return countError(t.double_data_size());
    std::memcpy(out.data(), t.double_data().data(), n * sizeof(double));
    return "";
  case import::OnnxField::Int64Data:
    if (t.int64_data_size() != n)
      return countError(t.int64_data_size());
    std::memcpy(out.data(), t.int64_data().data(), n * sizeof(int64_t));
    return "";
  case import::OnnxField::Uint64Data:
    if (t.uint64_data_size() != n)
      return countError(t.uint64_data_size());
    for (int64_t i = 0; i < n; ++i)
      storeElement(out, i, t.uint64_data(static_cast<int>(i)));
    return "";
  default:
    if (t.int32_data_size() != n)
      return countError(t.int32_data_size());
    for (int64_t i = 0; i < n; ++i)
      storeElement(out, i, static_cast<uint32_t>(t.int32_data(static_cast<int>(i))));
    return "";
  }
}

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

// 2^-7: the spacing of bfloat16 values in [1, 2).
constexpr double kBf16Epsilon = 1.0 / 128;

float halfToFloat(uint16_t h) {
  int sign = h >> 15, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  return sign ? -magnitude : magnitude;
}

bool isFloat(DType d) {
  return d == DType::F32 || d == DType::F64 || d == DType::F16 || d == DType::BF16;
}
bool isUnsigned(DType d) {
  return d == DType::U8 || d == DType::U16 || d == DType::U32 || d == DType::U64;
}

double floatAt(const HostTensor &t, int64_t i) {
  switch (t.dtype) {
  case DType::F32: return t.as<float>()[i];
  case DType::F64: return t.as<double>()[i];
  case DType::F16: return halfToFloat(t.as<uint16_t>()[i]);
  default: { // bf16
    uint32_t bits = uint32_t(t.as<uint16_t>()[i]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  }
}

// The element as a 64-bit pattern: sign-extended for signed types.
uint64_t bitsAt(const HostTensor &t, int64_t i) {
  size_t size = rt::dtypeSize(t.dtype);
  uint64_t v = 0;
  std::memcpy(&v, static_cast<const char *>(t.data()) + i * size, size);
  if (!isUnsigned(t.dtype) && size < 8 && (v >> (8 * size - 1)) & 1)
    v |= ~uint64_t(0) << (8 * size);
  return v;
}

std::string formatElement(const HostTensor &t, int64_t i) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (isFloat(t.dtype))
    os << llvm::format("%.9g", floatAt(t, i));
  else if (isUnsigned(t.dtype))
    os << bitsAt(t, i);
  else
    os << static_cast<int64_t>(bitsAt(t, i));
  return s;
}

bool closeEnough(double got, double want, const Tolerance &tol) {
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got);
  if (got == want) // also equal infinities
    return true;
  return std::fabs(got - want) <= tol.atol + tol.rtol * std::fabs(want);
}

// Row-major multi-index of flat element `i`.
std::vector<int64_t> unflatten(const std::vector<int64_t> &shape, int64_t i) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return index;
}
} // namespace

std::string parseTensorFile(const std::string &path, onnx::TensorProto &out) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return path + ": " + buffer.getError().message();
  if (!out.ParseFromArray((*buffer)->getBufferStart(),
                          static_cast<int>((*buffer)->getBufferSize())))
    return path + ": not a TensorProto";
  return "";
}

std::string toHostTensor(const onnx::TensorProto &tensor, HostTensor &out) {
  const import::OnnxDType *type = import::findOnnxDType(tensor.data_type());
  if (!type || !type->dtype)
    return "element type " + import::onnxTypeName(tensor.data_type()) + " is not supported";
  DType dtype = *type->dtype;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
    return "external data is not supported in test data";
  std::vector<int64_t> shape(tensor.dims().begin(), tensor.dims().end());
  if (rt::Status s = out.allocate(dtype, shape); !s)
    return s.message();
  if (!tensor.has_raw_data())
    return copyTypedField(tensor, *type, out);
  if (tensor.raw_data().size() != out.byteSize())
    return "raw_data has " + std::to_string(tensor.raw_data().size()) + " bytes for " +
           rt::formatType(dtype, shape) + " (" + std::to_string(out.byteSize()) + ")";
  std::memcpy(out.data(), tensor.raw_data().data(), out.byteSize());
  return "";
}

std::string compareTensors(const HostTensor &got, const HostTensor &want,
                           const Tolerance &tolerance) {
  if (got.dtype != want.dtype || got.shape != want.shape)
    return "got " + rt::formatType(got.dtype, got.shape) + ", want " +
           rt::formatType(want.dtype, want.shape);
  // A tolerance finer than the element type resolves is exactness: allow
  // bfloat16 one unit in the last place (f16's is already below 1e-3).
  Tolerance tol = tolerance;
  if (want.dtype == DType::BF16)
    tol.rtol = std::max(tol.rtol, kBf16Epsilon);
  int64_t first = -1, differing = 0, n = want.numElements();
  for (int64_t i = 0; i < n; ++i) {
    bool same = isFloat(want.dtype)
                    ? closeEnough(floatAt(got, i), floatAt(want, i), tol)
                    : bitsAt(got, i) == bitsAt(want, i);
    if (same)
      continue;
    if (first < 0)
      first = i;
    ++differing;
  }
  if (first < 0)
    return "";
  return "element " + rt::formatShape(unflatten(want.shape, first)) + ": got " +
         formatElement(got, first) + ", want " + formatElement(want, first) + " (" +
         std::to_string(differing) + " of " + std::to_string(n) + " elements differ)";
}

} // namespace trc::conformance
