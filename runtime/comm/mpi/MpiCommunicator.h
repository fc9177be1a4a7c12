//===- MpiCommunicator.h - the MPI backend (host memory) --------------------===//
//
// Communicators over Open MPI for buffers in host memory. libmpi is loaded
// at run time with dlopen (RTLD_GLOBAL, which Open MPI's plugins need):
// TRC_MPI_LIBRARY names it, else libmpi.so.40 (Debian's Open MPI); nothing
// links it at build time and mpi.h is not needed (MpiAbi.h declares the ABI).
// A build therefore runs where MPI is absent; only asking for the MPI
// backend fails there, with an error naming the library.
//
// createMpiCommunicator initializes MPI once per process
// (MPI_Init_thread, MPI_THREAD_SERIALIZED; every call is also serialized by
// a process-wide mutex) and returns a communicator on MPI_COMM_WORLD with
// MPI_ERRORS_RETURN, so MPI failures come back as Status. MPI is finalized
// when the last MPI communicator (world or split) is destroyed; it cannot be
// initialized again in the same process. If something else in the process
// initialized MPI, it is used as is and not finalized. The world size MPI
// reports must match the launch environment's (LaunchEnvironment.h): a
// mismatch means this Open MPI cannot talk to the launcher (e.g. srun
// without --mpi=pmix) and is an error rather than N independent runs.
//
// Datatypes: f32 f64 i8 u8 i16 u16 i32 u32 i64 u64 map to MPI's; f16 and
// bf16 move as 16-bit words (allGather, broadcast, send/recv) and refuse
// reductions; i1 moves as bytes and reduces only with Min/Max (and / or).
// Avg is MPI_SUM then a division by size(). Counts above INT_MAX are sent in
// pieces (allReduce, broadcast, send/recv, isend/irecv) or refused
// (allGather, reduceScatter). send/recv use tag 0, and recv checks the
// element count.
//
// isend/irecv are MPI_Isend/MPI_Irecv (one MPI request per piece; messages
// to self allowed; tags up to MPI_TAG_UB, read at start-up); wait is
// MPI_Wait per piece (waitAll waits for each in turn: MPI progresses every
// pending request in any of them, and each wait names its own peer and
// tag to the watchdog), test is MPI_Test, and a receive checks the
// element count that arrived. Destroying an incomplete request cancels a
// receive (MPI_Cancel) and waits for the rest. A request keeps MPI
// initialized until it is gone.
//
// Failures: every blocking call, and every wait for a request, is watched
// (Watchdog.h): a local peer that dies, or a call exceeding
// TRC_COLLECTIVE_TIMEOUT_S, ends the process with an error naming the
// rank(s). Under mpirun, Open MPI also aborts the
// whole job as soon as any rank is killed or exits non-zero.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_MPICOMMUNICATOR_H
#define TRC_RUNTIME_MPICOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

#include <memory>

namespace trc::rt {

/// A communicator on MPI_COMM_WORLD (initializing MPI on first use).
StatusOr<std::unique_ptr<Communicator>> createMpiCommunicator();

/// This process leaves on an error of its own: MPI is not finalized when
/// its last communicator goes (MPI_Finalize waits for every rank, and the
/// others wait for this one in their next collective). The launcher ends
/// the job when this process exits non-zero, or the others' watchdog names
/// it gone. One way: for a process about to exit.
void leaveMpiWithoutFinalize();

/// For a tool's main that prints the job's error itself: MPI_Finalize,
/// when this process initialized MPI, waits for finishMpi() instead of
/// running when the last communicator goes. Open MPI's finalize is a fence
/// and mpirun ends the job at the first non-zero exit, so a rank 0 that
/// finalized before printing the job's error could be killed by a rank
/// that left after the same fence, the error unprinted.
void deferMpiFinalize();
/// The MPI_Finalize deferMpiFinalize() held back, if any (watched).
void finishMpi();

// The library createMpiCommunicator loads: TRC_MPI_LIBRARY or libmpi.so.40.
std::string mpiLibraryName();

} // namespace trc::rt

#endif // TRC_RUNTIME_MPICOMMUNICATOR_H
