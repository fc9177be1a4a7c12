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
// send == recv is allowed (in place) for allReduce; all calls are blocking.
// SingleProcessCommunicator.h is the world-size-1 implementation; MPI and
// NCCL communicators come with the distributed runtime.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_COMMUNICATOR_H
#define TRC_RUNTIME_COMMUNICATOR_H

#include "runtime/DType.h"
#include "runtime/Status.h"

#include <cstddef>

namespace trc::rt {

enum class ReduceOp { Sum, Prod, Min, Max, Avg };

class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

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
};

} // namespace trc::rt

#endif // TRC_RUNTIME_COMMUNICATOR_H
