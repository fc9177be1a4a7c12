//===- CommunicatorSupport.h - argument checks shared by the backends -------===//
//
// What every Communicator implementation checks the same way, with the same
// messages: byte counts that overflow, buffers that overlap where the
// interface forbids it, root/peer ranks out of range, and the Avg division
// of a host buffer; and the part of a non-blocking request every backend
// shares (P2PState). Internal to the runtime's communicators.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_COMMUNICATORSUPPORT_H
#define TRC_RUNTIME_COMMUNICATORSUPPORT_H

#include "runtime/comm/Communicator.h"

namespace trc::rt {

// What every backend's isend/irecv state holds; a backend derives from it,
// and its destructor completes an operation still in flight (cancels a
// receive not yet matched, waits for a send) so that the caller's buffer
// is free once the request is gone.
struct P2PState {
  P2PState(const Communicator *owner, bool isSend, int peer, int tag)
      : owner(owner), isSend(isSend), peer(peer), tag(tag) {}
  virtual ~P2PState() = default;
  // "isend to rank P tag T" / "irecv from rank P tag T".
  std::string describe() const;

  const Communicator *owner; // the communicator that must complete it
  bool isSend;
  int peer, tag; // rank in the owner
};

} // namespace trc::rt

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

// The arguments of isend/irecv (`what`): count fits, peer in range (and
// not this rank unless `selfAllowed`), 0 <= tag <= maxTag.
Status checkP2P(const char *what, size_t count, DType dtype, int peer, int tag,
                int rank, int size, int maxTag, bool selfAllowed);
// The state of a request `self` may complete: null when the request is
// inactive, an error "<what>: <request> was made by another communicator".
StatusOr<P2PState *> ownState(const char *what, const Communicator &self,
                              const P2PRequest &request);
// "irecv from rank P tag T: got N <dtype> elements, expected M".
Status countMismatch(const P2PState &state, size_t got, size_t expected, DType dtype);

// buf[i] /= n for count elements of a host buffer (integers: truncating).
void divideHost(void *buf, size_t count, DType dtype, int n);

} // namespace trc::rt::comm

#endif // TRC_RUNTIME_COMMUNICATORSUPPORT_H
