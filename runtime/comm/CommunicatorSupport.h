//===- CommunicatorSupport.h - argument checks shared by the backends -------===//
//
// What every Communicator implementation checks the same way, with the same
// messages: byte counts that overflow, buffers that overlap where the
// interface forbids it, root/peer ranks out of range, and the Avg division
// of a host buffer. Internal to the runtime's communicators.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_COMMUNICATORSUPPORT_H
#define TRC_RUNTIME_COMMUNICATORSUPPORT_H

#include "runtime/comm/Communicator.h"

namespace trc::rt::comm {

// count * dtypeSize(dtype) * factor bytes, or an error "<what>: element
// count N overflows".
StatusOr<size_t> byteCount(const char *what, size_t count, DType dtype, size_t factor);

// Whether [a, a + aBytes) and [b, b + bBytes) share a byte.
bool overlaps(const void *a, size_t aBytes, const void *b, size_t bBytes);

// "<what>: <role> rank R is not in a communicator of size S".
Status checkRank(const char *what, const char *role, int rank, int size);

// Checks of each call's buffers (allGather: in place when send ==
// recv + rank * count; allReduce: send == recv; reduceScatter: none).
Status checkAllReduce(const void *send, void *recv, size_t count, DType dtype);
// Whether the allGather is in place.
StatusOr<bool> checkAllGather(const void *send, void *recv, size_t count, DType dtype,
                              int rank, int size);
Status checkReduceScatter(const void *send, void *recv, size_t count,
                          DType dtype, int size);
// A peer of send/recv: in range and not this rank.
Status checkPeer(const char *what, int peer, int rank, int size);

// buf[i] /= n for count elements of a host buffer (integers: truncating).
void divideHost(void *buf, size_t count, DType dtype, int n);

} // namespace trc::rt::comm

#endif // TRC_RUNTIME_COMMUNICATORSUPPORT_H
