//===- SingleProcessCommunicator.cpp - world size 1 -------------------------===//
//
// See SingleProcessCommunicator.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/SingleProcessCommunicator.h"
#include "runtime/comm/CommunicatorSupport.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

namespace trc::rt {

namespace {
struct SelfRequest;
} // namespace

struct SelfMailbox {
  struct Message {
    int tag;
    std::vector<uint8_t> bytes;
  };
  std::deque<Message> queued;         // sent, not yet received (oldest first)
  std::vector<SelfRequest *> posted;  // unmatched irecvs (oldest first)
};

namespace {

struct SelfRequest final : P2PState {
  SelfRequest(const Communicator *owner, bool isSend, int tag,
              std::shared_ptr<SelfMailbox> box)
      : P2PState(owner, isSend, 0, tag), box(std::move(box)) {}
  ~SelfRequest() override {
    // Withdraw an unmatched receive: no later isend may write its buffer.
    auto it = std::find(box->posted.begin(), box->posted.end(), this);
    if (it != box->posted.end())
      box->posted.erase(it);
  }
  // A receive gets `bytes`: copied (as much as fits), and an error at wait
  // when the sizes differ.
  void deliver(const std::vector<uint8_t> &bytes) {
    size_t elem = dtypeSize(dtype), want = count * elem;
    if (!bytes.empty())
      std::memcpy(buf, bytes.data(), std::min(want, bytes.size()));
    if (bytes.size() != want)
      result = comm::countMismatch(*this, bytes.size() / elem, count, dtype);
    done = true;
  }

  std::shared_ptr<SelfMailbox> box;
  void *buf = nullptr; // irecv
  size_t count = 0;
  DType dtype = DType::U8;
  bool done = false;
  Status result;
};

} // namespace

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

SingleProcessCommunicator::SingleProcessCommunicator()
    : mailbox_(std::make_shared<SelfMailbox>()) {}

SingleProcessCommunicator::~SingleProcessCommunicator() = default;

int SingleProcessCommunicator::maxTag() const { return INT_MAX; }

StatusOr<P2PRequest> SingleProcessCommunicator::isend(const void *buf, size_t count,
                                                      DType dtype, int peer, int tag) {
  if (Status s = comm::checkP2P("isend", count, dtype, peer, tag, 0, 1, maxTag(), true); !s)
    return s;
  const uint8_t *p = static_cast<const uint8_t *>(buf);
  std::vector<uint8_t> bytes(p, p + count * dtypeSize(dtype));
  auto request = std::make_unique<SelfRequest>(this, true, tag, mailbox_);
  request->done = true; // copied: the caller's buffer is free already
  auto &posted = mailbox_->posted;
  auto match = std::find_if(posted.begin(), posted.end(),
                            [&](SelfRequest *r) { return r->tag == tag; });
  if (match != posted.end()) {
    SelfRequest *recv = *match;
    posted.erase(match);
    recv->deliver(bytes);
  } else {
    mailbox_->queued.push_back({tag, std::move(bytes)});
  }
  return P2PRequest(std::move(request));
}

StatusOr<P2PRequest> SingleProcessCommunicator::irecv(void *buf, size_t count, DType dtype,
                                                      int peer, int tag) {
  if (Status s = comm::checkP2P("irecv", count, dtype, peer, tag, 0, 1, maxTag(), true); !s)
    return s;
  auto request = std::make_unique<SelfRequest>(this, false, tag, mailbox_);
  request->buf = buf;
  request->count = count;
  request->dtype = dtype;
  auto &queued = mailbox_->queued;
  auto match = std::find_if(queued.begin(), queued.end(),
                            [&](const SelfMailbox::Message &m) { return m.tag == tag; });
  if (match != queued.end()) {
    request->deliver(match->bytes);
    queued.erase(match);
  } else {
    mailbox_->posted.push_back(request.get());
  }
  return P2PRequest(std::move(request));
}

Status SingleProcessCommunicator::wait(P2PRequest &request) {
  StatusOr<P2PState *> state = comm::ownState("wait", *this, request);
  if (!state.ok())
    return state.status();
  if (!*state)
    return Status::success();
  auto *self = static_cast<SelfRequest *>(*state);
  Status result = self->result;
  if (!self->done)
    result = Status::error(self->describe() + ": no isend to this rank with tag " +
                           std::to_string(self->tag) +
                           " was posted, and in a world of size 1 none can come (waiting "
                           "would never end)");
  request.finish(); // withdraws an unmatched receive
  return result;
}

StatusOr<bool> SingleProcessCommunicator::test(P2PRequest &request) {
  StatusOr<P2PState *> state = comm::ownState("test", *this, request);
  if (!state.ok())
    return state.status();
  if (*state && !static_cast<SelfRequest *>(*state)->done)
    return false; // a later isend may still match it
  if (Status s = wait(request); !s)
    return s;
  return true;
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
