//===- Checksum.cpp - FNV-1a 64-bit hashes of artifact files ----------------===//
//
// See Checksum.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Checksum.h"

namespace trc::rt {

void Fnv1a64::update(const void *data, size_t size) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint64_t h = hash_;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= kPrime;
  }
  hash_ = h;
}

uint64_t fnv1a64(const void *data, size_t size) {
  Fnv1a64 h;
  h.update(data, size);
  return h.value();
}

std::string toHex16(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i) {
    s[i] = digits[value & 0xf];
    value >>= 4;
  }
  return s;
}

bool parseHex16(std::string_view text, uint64_t &value) {
  if (text.size() != 16)
    return false;
  uint64_t v = 0;
  for (char c : text) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else
      return false;
    v = (v << 4) | uint64_t(d);
  }
  value = v;
  return true;
}

} // namespace trc::rt
