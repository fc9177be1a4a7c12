//===- Checksum.cpp - checksums of artifact and checkpoint files ------------===//
//
// See Checksum.h. XXH3 comes from libxxhash (Debian's libxxhash-dev); its
// streaming state lives on the heap so that this header need not include
// xxhash.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Checksum.h"

#include <xxhash.h>

#include <new>

namespace trc::rt {

const char *checksumKindName(ChecksumKind kind) {
  return kind == ChecksumKind::Xxh3 ? "xxh3" : "fnv1a64";
}

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

uint64_t xxh3_64(const void *data, size_t size) {
  return XXH3_64bits(data, size);
}

//===----------------------------------------------------------------------===//
// Hasher
//===----------------------------------------------------------------------===//

void Hasher::FreeState::operator()(XXH3_state_s *state) const {
  XXH3_freeState(state);
}

Hasher::Hasher(ChecksumKind kind) : kind_(kind) { reset(); }

Hasher::~Hasher() = default;
Hasher::Hasher(Hasher &&other) noexcept = default;
Hasher &Hasher::operator=(Hasher &&other) noexcept = default;

void Hasher::reset() {
  fnv_ = Fnv1a64();
  if (kind_ != ChecksumKind::Xxh3)
    return;
  if (!xxh3_) {
    xxh3_.reset(XXH3_createState());
    if (!xxh3_)
      throw std::bad_alloc();
  }
  XXH3_64bits_reset(xxh3_.get());
}

void Hasher::update(const void *data, size_t size) {
  if (kind_ == ChecksumKind::Xxh3)
    XXH3_64bits_update(xxh3_.get(), data, size);
  else
    fnv_.update(data, size);
}

Checksum Hasher::checksum() const {
  if (kind_ == ChecksumKind::Xxh3)
    return {kind_, XXH3_64bits_digest(xxh3_.get())};
  return {kind_, fnv_.value()};
}

Checksum checksumOf(ChecksumKind kind, const void *data, size_t size) {
  if (kind == ChecksumKind::Xxh3)
    return {kind, xxh3_64(data, size)};
  return {kind, fnv1a64(data, size)};
}

//===----------------------------------------------------------------------===//
// Spelling
//===----------------------------------------------------------------------===//

std::string formatChecksum(const Checksum &checksum) {
  return std::string(checksumKindName(checksum.kind)) + ":" +
         toHex16(checksum.value);
}

bool parseChecksum(std::string_view text, Checksum &out) {
  Checksum c;
  for (ChecksumKind kind : {ChecksumKind::Xxh3, ChecksumKind::Fnv1a64}) {
    std::string prefix = std::string(checksumKindName(kind)) + ":";
    if (text.substr(0, prefix.size()) == prefix) {
      c.kind = kind;
      text.remove_prefix(prefix.size());
      if (!parseHex16(text, c.value))
        return false;
      out = c;
      return true;
    }
  }
  // No prefix: the spelling of every hash before XXH3.
  c.kind = ChecksumKind::Fnv1a64;
  if (!parseHex16(text, c.value))
    return false;
  out = c;
  return true;
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
