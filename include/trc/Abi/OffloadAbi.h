//===- OffloadAbi.h - the copy engine's entries and codes -------*- C++ -*-===//
//
// Shared by the compiler (trc-offload-to-runtime-call, trc-plan-memory) and
// the runtime (runtime/backends/Offload.cpp): the names of the two entries a
// program with offloaded activations calls, and the direction codes. No
// dependencies; see docs/ARTIFACT.md "Offloading".
//
//   void trc_rt_offload_start(int64_t copy, int64_t direction, int64_t bytes,
//                             int64_t device, int64_t host);
//   void trc_rt_offload_wait(int64_t copy, int64_t device, int64_t host);
//
// `copy` numbers the program's copies from 0; `device` is a buffer address
// in device memory, `host` a byte offset into the host arena (manifest
// record `host_arena`).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ABI_OFFLOADABI_H
#define TRC_ABI_OFFLOADABI_H

#include <cstdint>

namespace trc::abi {

inline constexpr const char kOffloadStartSymbol[] = "trc_rt_offload_start";
inline constexpr const char kOffloadWaitSymbol[] = "trc_rt_offload_wait";

enum OffloadDirectionCode : int64_t {
  kOffloadToHost = 0,   // device -> host arena (trc.offload)
  kOffloadToDevice = 1, // host arena -> device (trc.prefetch)
};

} // namespace trc::abi

#endif // TRC_ABI_OFFLOADABI_H
