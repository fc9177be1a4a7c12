//===- SingleProcessCommunicator.cpp - world size 1 -------------------------===//
//
// See SingleProcessCommunicator.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/SingleProcessCommunicator.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace trc::rt {

namespace {
Status copy(const void *send, void *recv, size_t count, DType dtype,
            const char *what) {
  size_t size = dtypeSize(dtype);
  if (count > SIZE_MAX / size)
    return Status::error(std::string(what) + ": element count " +
                         std::to_string(count) + " overflows");
  if (count && send != recv)
    std::memmove(recv, send, count * size);
  return Status::success();
}
} // namespace

Status SingleProcessCommunicator::allReduce(const void *send, void *recv,
                                            size_t count, DType dtype,
                                            ReduceOp) {
  return copy(send, recv, count, dtype, "allReduce");
}

Status SingleProcessCommunicator::allGather(const void *send, void *recv,
                                            size_t count, DType dtype) {
  return copy(send, recv, count, dtype, "allGather");
}

Status SingleProcessCommunicator::reduceScatter(const void *send, void *recv,
                                                size_t count, DType dtype,
                                                ReduceOp) {
  return copy(send, recv, count, dtype, "reduceScatter");
}

Status SingleProcessCommunicator::broadcast(void *, size_t, DType, int root) {
  if (root != 0)
    return Status::error("broadcast: root rank " + std::to_string(root) +
                         " does not exist in a world of size 1");
  return Status::success();
}

Status SingleProcessCommunicator::send(const void *, size_t, DType, int peer) {
  return Status::error("send: no peer rank " + std::to_string(peer) +
                       " in a world of size 1");
}

Status SingleProcessCommunicator::recv(void *, size_t, DType, int peer) {
  return Status::error("recv: no peer rank " + std::to_string(peer) +
                       " in a world of size 1");
}

StatusOr<std::unique_ptr<Communicator>> SingleProcessCommunicator::split(int color, int) {
  if (color < kNoGroup)
    return Status::error("split: color " + std::to_string(color) +
                         " is negative (kNoGroup is -1)");
  if (color == kNoGroup)
    return std::unique_ptr<Communicator>();
  return std::unique_ptr<Communicator>(std::make_unique<SingleProcessCommunicator>());
}

} // namespace trc::rt
