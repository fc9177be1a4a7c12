//===- HalfFloat.h - bf16 and IEEE f16 <-> f32 conversions -----------------===//
//
// Bit-level conversions used where the runtime touches 16-bit floats on the
// host (the bf16/f16 matmul entries, loss-scaling checks, tests). Narrowing
// rounds to nearest, ties to even, keeps NaN a (quiet) NaN and overflows to
// infinity, as the compiled programs and PyTorch do. No preconditions.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_HALFFLOAT_H
#define TRC_RUNTIME_HALFFLOAT_H

#include <cstdint>
#include <cstring>

namespace trc::rt {

inline float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet
    return uint16_t((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

inline float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu,
           mantissa = h & 0x3ffu, bits;
  if (exponent == 0x1f) { // inf or NaN
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else { // subnormal: normalize
    int shift = 0;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      ++shift;
    }
    bits = sign | (uint32_t(113 - shift) << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u)
    return uint16_t(sign | 0x7e00u);
  if (magnitude >= 0x477ff000u) // rounds to >= 65520: infinity
    return uint16_t(sign | 0x7c00u);
  if (magnitude < 0x38800000u) { // below the smallest normal: subnormal or 0
    if (magnitude < 0x33000000u)
      return sign;
    uint32_t exponent = magnitude >> 23;
    uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exponent; // 14 + (112 - (exponent - 127)) ...
    uint32_t value = mantissa >> (shift - 1 + 0);
    // value holds the result with one extra bit below; round half to even.
    uint32_t rest = mantissa & ((1u << (shift - 1)) - 1u);
    uint32_t result = value >> 1;
    if ((value & 1u) && (rest || (result & 1u)))
      ++result;
    return uint16_t(sign | result);
  }
  uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
  return uint16_t(sign | ((rounded - (112u << 23)) >> 13));
}

} // namespace trc::rt

#endif // TRC_RUNTIME_HALFFLOAT_H
