//===- Communicator.h - the collective-communication interface --------------===//
//
// What the distributed runtime needs from MPI or NCCL, on raw buffers of
// `count` elements of a DType, in the memory of the backend the communicator
// was made for (host memory for MPI/CPU, device memory for NCCL):
//   allReduce      recv[i] = op over ranks of send[i]            (count)
//   allGather      recv = concat over ranks of send   (send count; recv holds
//                  size() * count)
//   reduceScatter  recv = this rank's count-slice of op over ranks of send
//                  (recv count; send holds size() * count)
//   broadcast      buf on every rank = buf on `root`
//   send / recv    point-to-point with `peer`
//   barrier        every rank arrives before any leaves
// send == recv is allowed (in place) for allReduce, and send == recv +
// rank() * count elements for allGather; other overlaps are errors. Avg is
// the sum divided by size() (integer division for integer dtypes). All calls
// are blocking; a process's communicators are used by one thread at a time.
// Every rank of a communicator makes the same collective calls (all but
// send/recv) in the same order with the same count, dtype, op and root.
//
// Process groups: split(color, key) is collective over this communicator;
// the ranks passing the same color >= 0 form a new communicator, ranked by
// key (ties: by rank here); kNoGroup (-1) joins none (the result is null).
// subgroup(ranks) is split with color 0 for the listed ranks, ranked in list
// order (every rank passes the same list).
//
// Backends (createCommunicator): "single" (SingleProcessCommunicator.h,
// world size 1), "mpi" (MpiCommunicator.h, host memory, libmpi loaded at run
// time), "nccl" (NcclCommunicator.h, CUDA device memory, libnccl loaded at
// run time, bootstrapped over MPI), "auto" (MPI when the launch environment
// says more than one process, else single; LaunchEnvironment.h).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_COMMUNICATOR_H
#define TRC_RUNTIME_COMMUNICATOR_H

#include "runtime/support/DType.h"
#include "runtime/support/Status.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace trc::rt {

enum class ReduceOp { Sum, Prod, Min, Max, Avg };

// "sum", "prod", "min", "max", "avg".
const char *reduceOpName(ReduceOp op);

// The color of a rank that joins no group in Communicator::split.
constexpr int kNoGroup = -1;

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "single", "mpi", "nccl".
  virtual const char *backendName() const = 0;

  virtual Status allReduce(const void *send, void *recv, size_t count,
                           DType dtype, ReduceOp op) = 0;
  virtual Status allGather(const void *send, void *recv, size_t count,
                           DType dtype) = 0;
  virtual Status reduceScatter(const void *send, void *recv, size_t count,
                               DType dtype, ReduceOp op) = 0;
  virtual Status broadcast(void *buf, size_t count, DType dtype, int root) = 0;
  virtual Status send(const void *buf, size_t count, DType dtype, int peer) = 0;
  virtual Status recv(void *buf, size_t count, DType dtype, int peer) = 0;
  virtual Status barrier() = 0;

  /// The communicator of this rank's group (see above); null for kNoGroup.
  virtual StatusOr<std::unique_ptr<Communicator>> split(int color, int key) = 0;
  /// Collective over this communicator; `ranks` are distinct ranks of it.
  /// Null on a rank not listed.
  StatusOr<std::unique_ptr<Communicator>> subgroup(const std::vector<int> &ranks);
};

/// A communicator of the named backend ("auto", "single", "mpi", "nccl")
/// for this process's launch environment; errors name the missing library,
/// the bad environment variable or the missing device.
StatusOr<std::unique_ptr<Communicator>> createCommunicator(const std::string &backend);

} // namespace trc::rt

#endif // TRC_RUNTIME_COMMUNICATOR_H
