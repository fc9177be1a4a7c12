//===- DType.cpp - element types of artifact tensors ------------------------===//
//
// Sizes, names and shape helpers for DType (see DType.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/support/DType.h"

#include "trc/Abi/ElementBytes.h"

namespace trc::rt {

namespace {
struct DTypeInfo {
  DType dtype;
  const char *name;
  int bits; // the element's bit width; its bytes follow trc's one storage rule
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", 32}, {DType::F64, "f64", 64}, {DType::F16, "f16", 16},
    {DType::BF16, "bf16", 16}, {DType::I1, "i1", 1},  {DType::I8, "i8", 8},
    {DType::I16, "i16", 16}, {DType::I32, "i32", 32}, {DType::I64, "i64", 64},
    {DType::U8, "u8", 8},     {DType::U16, "u16", 16}, {DType::U32, "u32", 32},
    {DType::U64, "u64", 64},
};
} // namespace

size_t dtypeSize(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return size_t(abi::storageBytesPerElement(info.bits));
  return 0;
}

const char *dtypeName(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.name;
  return "?";
}

bool parseDType(std::string_view text, DType &out) {
  for (const DTypeInfo &info : kDTypes) {
    if (text == info.name) {
      out = info.dtype;
      return true;
    }
  }
  return false;
}

const char *dtypeList() {
  return "f32 f64 f16 bf16 i1 i8 i16 i32 i64 u8 u16 u32 u64";
}

bool elementCount(const std::vector<int64_t> &shape, int64_t &count) {
  if (int64_t(shape.size()) > kMaxRank)
    return false;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxElements)
      return false;
    if (d != 0 && n > kMaxElements / d)
      return false;
    n *= d;
  }
  // A zero dim makes the product 0 even if other dims were checked above.
  count = n;
  return true;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string formatType(DType dtype, const std::vector<int64_t> &shape) {
  return std::string(dtypeName(dtype)) + " " + formatShape(shape);
}

} // namespace trc::rt
