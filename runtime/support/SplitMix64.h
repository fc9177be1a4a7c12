//===- SplitMix64.h - the SplitMix64 mixing function -------------*- C++ -*-===//
//
// Sebastiano Vigna's SplitMix64 step (increment by the golden-ratio constant,
// then the finalizer): the one hash the runtime derives seeds and keys with
// (the data loader's shuffle, trc-run's dropout keys). No preconditions.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SPLITMIX64_H
#define TRC_RUNTIME_SPLITMIX64_H

#include <cstdint>

namespace trc::rt {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

} // namespace trc::rt

#endif // TRC_RUNTIME_SPLITMIX64_H
