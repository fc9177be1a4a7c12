//===- PointToPointTest.cpp - send / recv as profiled spans ----------------===//
//
// PointToPoint.h over a communicator whose recv waits 5 ms for its peer:
// while the profiler records, each call is one p2p span on the comm lane
// named by the peer, with its bytes, and the recv's span includes the wait;
// while it does not, the calls still go through and nothing is recorded.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/PointToPoint.h"
#include "runtime/support/Profiler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace {
using namespace trc::rt;

/// Two ranks' worth of a communicator: counts sends, and a recv that waits.
class WaitingCommunicator : public Communicator {
public:
  int sends = 0, recvs = 0;
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const char *backendName() const override { return "test"; }
  Status allReduce(const void *, void *, size_t, DType, ReduceOp) override { return unused(); }
  Status allGather(const void *, void *, size_t, DType) override { return unused(); }
  Status reduceScatter(const void *, void *, size_t, DType, ReduceOp) override {
    return unused();
  }
  Status broadcast(void *, size_t, DType, int) override { return unused(); }
  Status send(const void *, size_t, DType, int) override {
    ++sends;
    return Status::success();
  }
  Status recv(void *, size_t, DType, int) override {
    ++recvs;
    std::this_thread::sleep_for(std::chrono::milliseconds(5)); // the peer is late
    return Status::success();
  }
  Status barrier() override { return unused(); }
  int maxTag() const override { return 0; }
  StatusOr<P2PRequest> isend(const void *, size_t, DType, int, int) override { return unused(); }
  StatusOr<P2PRequest> irecv(void *, size_t, DType, int, int) override { return unused(); }
  Status wait(P2PRequest &) override { return unused(); }
  StatusOr<bool> test(P2PRequest &) override { return unused(); }
  StatusOr<std::unique_ptr<Communicator>> split(int, int) override { return unused(); }

private:
  static Status unused() { return Status::error("not used by this test"); }
};

TEST(PointToPointTest, RecvSpanIncludesTheWait) {
  WaitingCommunicator comm;
  float data[16] = {};
  Profiler::instance().start();
  EXPECT_TRUE(sendTo(comm, data, 16, DType::F32, 1).ok());
  EXPECT_TRUE(recvFrom(comm, data, 16, DType::F32, 1).ok());
  Profiler::instance().stop();
  std::vector<Span> spans = Profiler::instance().takeSpans();
  EXPECT_EQ(comm.sends, 1);
  EXPECT_EQ(comm.recvs, 1);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].name, "send to rank 1");
  EXPECT_EQ(spans[1].name, "recv from rank 1");
  for (const Span &s : spans) {
    EXPECT_EQ(s.category, profile::kP2p);
    EXPECT_EQ(s.lane, profile::kCommLane);
    ASSERT_EQ(s.args.size(), 2u);
    EXPECT_EQ(s.args[1], (SpanArg{"bytes", "64", true}));
  }
  EXPECT_GE(spans[1].durationNs, 5'000'000);

  // Off: the calls still happen, nothing is recorded.
  EXPECT_TRUE(recvFrom(comm, data, 16, DType::F32, 1).ok());
  EXPECT_EQ(comm.recvs, 2);
  EXPECT_TRUE(Profiler::instance().takeSpans().empty());
}

} // namespace
