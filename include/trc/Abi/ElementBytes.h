//===- ElementBytes.h - bytes one tensor element takes ----------*- C++ -*-===//
//
// The one rule for how many bytes an element of a tensor occupies, shared by
// the compiler (memory plan, fusion and cost models, importer, lowering) and
// the runtime (rt::dtypeSize, hence artifact slots, buffers and files):
// whole bytes, rounded up from the bit width. So i1 takes one byte per
// element (memrefs of i1 are laid out that way by the LLVM lowering: an i1's
// store size is a byte), as do sub-byte integers such as i4 (never packed);
// bf16 and f16 take 2, f64 8, and complex<fN> two N-bit parts, 2*N/8.
// No dependencies: a constexpr function.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ABI_ELEMENTBYTES_H
#define TRC_ABI_ELEMENTBYTES_H

#include <cstdint>

namespace trc::abi {

/// Bytes per element of a tensor whose elements are `bitWidth` bits wide
/// (for a complex element: the bits of one part). 0 for a width of 0.
constexpr int64_t storageBytesPerElement(int64_t bitWidth, bool isComplex = false) {
  int64_t part = (bitWidth + 7) / 8;
  return isComplex ? 2 * part : part;
}

} // namespace trc::abi

#endif // TRC_ABI_ELEMENTBYTES_H
