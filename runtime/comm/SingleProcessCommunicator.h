//===- SingleProcessCommunicator.h - world size 1 ---------------------------===//
//
// The Communicator of a single process (rank 0 of 1), over host memory:
// every collective is a copy of send into recv (none when they alias; the
// reduction of one rank, Avg included, is the identity), broadcast needs
// root 0, barrier is a no-op, and the blocking send/recv fail (there is no
// other peer, and a blocking message to self could never be received).
// split gives another world-size-1 communicator (null for kNoGroup).
//
// isend/irecv with peer 0 are messages to self, matched by tag within this
// communicator (SelfMailbox): isend copies the message at once, straight
// into the oldest posted irecv of its tag or else into a queue, so a send
// is complete when isend returns; irecv takes the oldest queued message of
// its tag or stays posted until an isend brings one. Waiting for a receive
// that is still unmatched is an error ("... no isend to this rank with tag
// T was posted ..."), since nothing else could ever send it; test says
// false for it. Destroying an unmatched receive withdraws it.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SINGLEPROCESSCOMMUNICATOR_H
#define TRC_RUNTIME_SINGLEPROCESSCOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

namespace trc::rt {

// Queued messages and posted receives (SingleProcessCommunicator.cpp).
struct SelfMailbox;

class SingleProcessCommunicator final : public Communicator {
public:
  SingleProcessCommunicator();
  ~SingleProcessCommunicator() override;
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char *backendName() const override { return "single"; }
  Status allReduce(const void *send, void *recv, size_t count, DType dtype,
                   ReduceOp op) override;
  Status allGather(const void *send, void *recv, size_t count,
                   DType dtype) override;
  Status reduceScatter(const void *send, void *recv, size_t count, DType dtype,
                       ReduceOp op) override;
  Status broadcast(void *buf, size_t count, DType dtype, int root) override;
  Status send(const void *buf, size_t count, DType dtype, int peer) override;
  Status recv(void *buf, size_t count, DType dtype, int peer) override;
  Status barrier() override { return Status::success(); }
  int maxTag() const override;
  StatusOr<P2PRequest> isend(const void *buf, size_t count, DType dtype,
                             int peer, int tag) override;
  StatusOr<P2PRequest> irecv(void *buf, size_t count, DType dtype, int peer,
                             int tag) override;
  Status wait(P2PRequest &request) override;
  StatusOr<bool> test(P2PRequest &request) override;
  StatusOr<std::unique_ptr<Communicator>> split(int color, int key) override;

private:
  // Shared with this communicator's requests (which may outlive it).
  std::shared_ptr<SelfMailbox> mailbox_;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_SINGLEPROCESSCOMMUNICATOR_H
