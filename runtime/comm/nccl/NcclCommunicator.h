//===- NcclCommunicator.h - the NCCL backend (CUDA device memory) -----------===//
//
// Communicators over NCCL for buffers in CUDA device memory. libnccl.so.2
// (TRC_NCCL_LIBRARY overrides) and the CUDA driver libcuda.so.1 are loaded
// at run time with dlopen; nothing links them and no CUDA header is needed
// (NcclAbi.h). Where either is missing, or no GPU is visible, asking for
// this backend fails with an error saying which ("... libnccl.so.2 not
// found", "no CUDA device"); nothing else changes.
//
// Bootstrap: rank 0 makes the ncclUniqueId and broadcasts it over a host
// communicator (MPI for more than one process; none for a single process),
// then every rank calls ncclCommInitRank. The host communicator is kept for
// split (split the host communicator, then bootstrap a new NCCL
// communicator over the part), so no NCCL 2.18 ncclCommSplit is needed.
//
// Device: the launch environment's local rank modulo the visible devices
// (CUDA_VISIBLE_DEVICES applies); buffers must be device memory of that
// device's primary context, which the communicator makes current on the
// calling thread. Each call is enqueued on the communicator's own stream
// and waited for (all calls are blocking), polling the stream and
// ncclCommGetAsyncError: an asynchronous NCCL error aborts the communicator
// (ncclCommAbort) and returns an error; the wait is watched (Watchdog.h).
//
// Datatypes: f32 f64 f16 bf16 i8 u8 i32 u32 i64 u64 natively; i1 as u8
// (min/max only); i16/u16 move as 16-bit words and refuse reductions.
// Avg is ncclAvg (integers: sum then truncating division, as MPI's).
// Needs NCCL >= 2.7 (send/recv); Avg and bf16 need 2.10.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_NCCLCOMMUNICATOR_H
#define TRC_RUNTIME_NCCLCOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

#include <memory>
#include <string>

namespace trc::rt {

/// A communicator over every process of the launch environment.
StatusOr<std::unique_ptr<Communicator>> createNcclCommunicator();

// TRC_NCCL_LIBRARY or libnccl.so.2.
std::string ncclLibraryName();

} // namespace trc::rt

#endif // TRC_RUNTIME_NCCLCOMMUNICATOR_H
