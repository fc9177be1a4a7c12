//===- Offload.h - the copy entries compiled programs call -----------------===//
//
// A step with offloaded activations (trc-offload-activations) calls
//
//   trc_rt_offload_start(copy, direction, bytes, device, host)
//   trc_rt_offload_wait(copy, device, host)
//
// (include/trc/Abi/OffloadAbi.h; docs/ARTIFACT.md "Offloading"): `device` is
// a device address, `host` a byte offset into the host arena. While an
// OffloadScope is alive (Session::run makes one around a program that has a
// host arena) they run the copies on its copy engine, checking each call:
// the offset range lies in the arena, a copy is not started twice before
// its wait, a wait names the buffers of its start. A C entry cannot return
// a Status: the first failure is kept, later calls do nothing, and
// takeOffloadError() reports it; the scope's end drains the engine and
// counts a copy never waited for as a failure.
// Preconditions: one program runs at a time (one scope).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_OFFLOAD_H
#define TRC_RUNTIME_OFFLOAD_H

#include "runtime/backends/CopyEngine.h"

#include <cstdint>

extern "C" {
void trc_rt_offload_start(int64_t copy, int64_t direction, int64_t bytes, int64_t device,
                          int64_t host);
void trc_rt_offload_wait(int64_t copy, int64_t device, int64_t host);
}

namespace trc::rt {

class OffloadScope {
public:
  /// The entries copy through `engine` between device memory and the host
  /// arena [hostArena, hostArena + hostBytes).
  OffloadScope(CopyEngine &engine, void *hostArena, size_t hostBytes);
  /// Drains the engine; a copy still in flight is an error.
  ~OffloadScope();
  OffloadScope(const OffloadScope &) = delete;
  OffloadScope &operator=(const OffloadScope &) = delete;
};

/// The first failure of the entries since the last call (then cleared).
Status takeOffloadError();

/// Addresses of the entries above (keeps them linked; see runtimeExports).
const void *const *offloadExports();

} // namespace trc::rt

#endif // TRC_RUNTIME_OFFLOAD_H
