//===- PointToPoint.h - send and recv as profiled spans ----------*- C++ -*-===//
//
// Communicator::send / recv with a `p2p` span each while --profile records
// (runtime/support/Profiler.h): "send to rank P" and "recv from rank P" on
// the comm lane, with the peer and the bytes in the args. A recv's span
// starts when it is posted, so it includes the time spent waiting for the
// peer, which is what a pipeline's bubble looks like on a timeline.
// Preconditions: those of Communicator::send / recv.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_COMM_POINTTOPOINT_H
#define TRC_RUNTIME_COMM_POINTTOPOINT_H

#include "runtime/comm/Communicator.h"

namespace trc::rt {

Status sendTo(Communicator &comm, const void *buf, size_t count, DType dtype, int peer);
Status recvFrom(Communicator &comm, void *buf, size_t count, DType dtype, int peer);

} // namespace trc::rt

#endif // TRC_RUNTIME_COMM_POINTTOPOINT_H
