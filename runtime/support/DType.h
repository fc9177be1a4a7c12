//===- DType.h - element types of artifact tensors --------------------------===//
//
// The dtypes of ARTIFACT.md (f32 f64 f16 bf16 i1 i8 i16 i32 i64 u8 u16 u32
// u64), their byte sizes and manifest spellings. i1 is one byte per element.
// Shapes are vectors of non-negative int64; elementCount() enforces the
// runtime's cap of 2^40 elements per tensor.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_DTYPE_H
#define TRC_RUNTIME_DTYPE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trc::rt {

enum class DType : uint8_t {
  F32, F64, F16, BF16, I1, I8, I16, I32, I64, U8, U16, U32, U64,
};

// Largest number of elements one tensor may have (2^40).
constexpr int64_t kMaxElements = int64_t(1) << 40;
// Largest rank the runtime accepts.
constexpr int64_t kMaxRank = 64;

// Bytes per element (i1: 1).
size_t dtypeSize(DType dtype);
// Manifest spelling: "f32", "bf16", ...
const char *dtypeName(DType dtype);
// Parses a manifest spelling; false if unknown.
bool parseDType(std::string_view text, DType &out);
// "f32 f64 f16 bf16 i1 ..." for error messages.
const char *dtypeList();

// Product of dims; false if a dim is negative or the product passes
// kMaxElements (checked without overflow).
bool elementCount(const std::vector<int64_t> &shape, int64_t &count);
// "[2, 3]" ("[]" for a scalar).
std::string formatShape(const std::vector<int64_t> &shape);
// "f32 [2, 3]".
std::string formatType(DType dtype, const std::vector<int64_t> &shape);

} // namespace trc::rt

#endif // TRC_RUNTIME_DTYPE_H
