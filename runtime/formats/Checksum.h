//===- Checksum.h - checksums of artifact and checkpoint files --------------===//
//
// A checksum is a 64-bit hash and the function that made it:
//   * xxh3     XXH3-64 (seed 0, libxxhash; its output is frozen since xxHash
//              0.8.0). What trc writes.
//   * fnv1a64  FNV-1a 64 (offset basis 0xcbf29ce484222325, prime
//              0x100000001b3), one byte at a time. What trc wrote before
//              XXH3; still read and verified, so old artifacts and
//              checkpoints load.
// Spelled (manifest.trc, state.json) as
//   xxh3:<16 lower-case hex digits>      what formatChecksum writes
//   fnv1a64:<16 lower-case hex digits>   read (old checkpoints' own checksum)
//   <16 lower-case hex digits>           read as fnv1a64 (old manifests and
//                                        old checkpoints' tensors record)
// Hasher computes either kind incrementally: feed chunks with update(),
// read checksum() at any point.
//
// fnv1a64() is also used for something that is not a checksum and must
// never change: the seeds of `init` records hash parameter names with it
// (docs/ARTIFACT.md).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CHECKSUM_H
#define TRC_RUNTIME_CHECKSUM_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct XXH3_state_s; // libxxhash's streaming state (xxhash.h)

namespace trc::rt {

enum class ChecksumKind { Xxh3, Fnv1a64 };

// "xxh3" or "fnv1a64": the prefix of the spelling and the name in messages.
const char *checksumKindName(ChecksumKind kind);

struct Checksum {
  ChecksumKind kind = ChecksumKind::Xxh3;
  uint64_t value = 0;

  bool operator==(const Checksum &o) const {
    return kind == o.kind && value == o.value;
  }
  bool operator!=(const Checksum &o) const { return !(*this == o); }
};

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
// The XXH3-64 hash (seed 0) of one buffer.
uint64_t xxh3_64(const void *data, size_t size);

// An incremental checksum of either kind.
class Hasher {
public:
  explicit Hasher(ChecksumKind kind = ChecksumKind::Xxh3);
  ~Hasher();
  Hasher(Hasher &&other) noexcept;
  Hasher &operator=(Hasher &&other) noexcept;
  Hasher(const Hasher &) = delete;
  Hasher &operator=(const Hasher &) = delete;

  // Back to the checksum of no bytes.
  void reset();
  void update(const void *data, size_t size);
  // The checksum of every byte given since construction or reset().
  Checksum checksum() const;
  ChecksumKind kind() const { return kind_; }

private:
  struct FreeState {
    void operator()(XXH3_state_s *state) const;
  };
  ChecksumKind kind_;
  Fnv1a64 fnv_;
  std::unique_ptr<XXH3_state_s, FreeState> xxh3_;
};

// The checksum of one buffer with the given function.
Checksum checksumOf(ChecksumKind kind, const void *data, size_t size);

// "xxh3:0123456789abcdef" (or "fnv1a64:..." for an fnv1a64 checksum).
std::string formatChecksum(const Checksum &checksum);
// Reads any of the spellings above; false for anything else.
bool parseChecksum(std::string_view text, Checksum &out);

// 16 lower-case hex digits.
std::string toHex16(uint64_t value);
// Parses exactly 16 lower-case hex digits; false otherwise.
bool parseHex16(std::string_view text, uint64_t &value);

} // namespace trc::rt

#endif // TRC_RUNTIME_CHECKSUM_H
