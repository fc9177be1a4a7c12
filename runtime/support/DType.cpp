//===- DType.cpp - element types of artifact tensors ------------------------===//
//
// Sizes, names and shape helpers for DType (see DType.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/support/DType.h"

namespace trc::rt {

namespace {
struct DTypeInfo {
  DType dtype;
  const char *name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", 4}, {DType::F64, "f64", 8}, {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2}, {DType::I1, "i1", 1}, {DType::I8, "i8", 1},
    {DType::I16, "i16", 2}, {DType::I32, "i32", 4}, {DType::I64, "i64", 8},
    {DType::U8, "u8", 1},   {DType::U16, "u16", 2}, {DType::U32, "u32", 4},
    {DType::U64, "u64", 8},
};
} // namespace

size_t dtypeSize(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.size;
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
