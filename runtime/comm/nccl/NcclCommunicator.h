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
// Told the compute stream (setComputeStream, shared by the process's
// communicators), every call first orders the communicator's stream after
// it (an event and cuStreamWaitEvent), and start (Communicator.h) returns
// once the call is enqueued, recording an event that finish makes the
// compute stream wait for; a started permute is a grouped ncclSend/ncclRecv
// on the collective stream. An asynchronous error of a started call shows
// at its finish (ncclCommGetAsyncError, not waited for).
//
// Non-blocking point-to-point (isend/irecv, wait/waitAll/test; untested:
// written and compiled without a GPU). NCCL has no tags and its send and
// receive are only safe together: a lone ncclSend of a large message waits
// for its receiver inside the kernel, and a communicator's kernels run one
// after another, so two ranks each sending first would deadlock. Hence
// isend/irecv only record the operation (they never block and launch
// nothing); the first wait, waitAll or test of any recorded request
// launches every operation recorded on this communicator so far as one
// ncclGroupStart/ncclGroupEnd group on the communicator's own p2p stream
// and records a CUDA event after it; wait then polls that event (and
// ncclCommGetAsyncError), watched like every call. What this asks of the
// caller: before waiting, a rank posts every send and receive its peers'
// corresponding group needs (as Megatron's batch_isend_irecv: post the
// step's exchange, then waitAll); and between a pair of ranks the messages
// are matched in posting order, not by tag (tags only name requests in
// errors). Messages to self are refused. A recorded request destroyed
// before launch is simply dropped; a launched one is waited for. The
// blocking send/recv and collectives do not launch recorded operations.
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
