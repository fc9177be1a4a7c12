//===- SingleProcessCommunicator.h - world size 1 ---------------------------===//
//
// The Communicator of a single process (rank 0 of 1), over host memory:
// every collective is a copy of send into recv (none when they alias; the
// reduction of one rank, Avg included, is the identity), broadcast needs
// root 0, barrier is a no-op, and send/recv fail (there is no peer).
// split gives another world-size-1 communicator (null for kNoGroup).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SINGLEPROCESSCOMMUNICATOR_H
#define TRC_RUNTIME_SINGLEPROCESSCOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

namespace trc::rt {

class SingleProcessCommunicator final : public Communicator {
public:
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
  StatusOr<std::unique_ptr<Communicator>> split(int color, int key) override;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_SINGLEPROCESSCOMMUNICATOR_H
