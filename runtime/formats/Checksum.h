//===- Checksum.h - FNV-1a 64-bit hashes of artifact files ------------------===//
//
// FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3) over
// bytes, incrementally: feed chunks with update(), read value(). The manifest
// spells a hash as 16 lower-case hex digits (toHex16 / parseHex16).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CHECKSUM_H
#define TRC_RUNTIME_CHECKSUM_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trc::rt {

class Fnv1a64 {
public:
  static constexpr uint64_t kOffsetBasis = 0xcbf29ce484222325ULL;
  static constexpr uint64_t kPrime = 0x100000001b3ULL;

  void update(const void *data, size_t size);
  uint64_t value() const { return hash_; }

private:
  uint64_t hash_ = kOffsetBasis;
};

// The FNV-1a 64 hash of one buffer.
uint64_t fnv1a64(const void *data, size_t size);

// 16 lower-case hex digits.
std::string toHex16(uint64_t value);
// Parses exactly 16 lower-case hex digits; false otherwise.
bool parseHex16(std::string_view text, uint64_t &value);

} // namespace trc::rt

#endif // TRC_RUNTIME_CHECKSUM_H
