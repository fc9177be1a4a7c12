//===- SelfMessagesTest.cpp - isend/irecv of the world-size-1 communicator --===//
//
// SingleProcessCommunicator's non-blocking point-to-point: messages to self
// are queued and matched by tag (oldest first within a tag, whatever the
// posting order), a receive posted first is filled by the later isend, a
// receive nothing was sent to is an error at wait (not a hang) and false
// at test, sizes must agree, and the argument and ownership errors name
// the peer and tag. (The MPI backend's: CommunicatorCheck.cpp.)
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/SingleProcessCommunicator.h"

#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <climits>
#include <vector>

using ::testing::HasSubstr;
using namespace trc::rt;

namespace {

// isend of `values` to self with `tag`, completed.
void sendToSelf(Communicator &c, std::vector<int32_t> values, int tag) {
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest r, c.isend(values.data(), values.size(), DType::I32, 0, tag));
  EXPECT_TRUE(r.active());
  // The message is copied: the buffer may change before wait.
  std::fill(values.begin(), values.end(), -1);
  ASSERT_TRUE(c.wait(r));
  EXPECT_FALSE(r.active());
}

} // namespace

TEST(SelfMessages, MatchedByTagOldestFirst) {
  SingleProcessCommunicator comm;
  Communicator &c = comm;
  sendToSelf(c, {1, 1}, 1);
  sendToSelf(c, {2, 2}, 2);
  sendToSelf(c, {3, 3}, 1);
  // Tag 2 first, although it was sent second; then tag 1 in sending order.
  std::vector<int32_t> a(2), b(2), d(2);
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest ra, c.irecv(a.data(), 2, DType::I32, 0, 2));
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest rb, c.irecv(b.data(), 2, DType::I32, 0, 1));
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest rd, c.irecv(d.data(), 2, DType::I32, 0, 1));
  EXPECT_EQ(rb.describe(), "irecv from rank 0 tag 1");
  std::vector<P2PRequest> all;
  all.push_back(std::move(rd));
  all.push_back(std::move(ra));
  all.push_back(std::move(rb));
  ASSERT_TRUE(c.waitAll(all));
  EXPECT_EQ(a, (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(b, (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(d, (std::vector<int32_t>{3, 3}));
  for (const P2PRequest &r : all)
    EXPECT_FALSE(r.active());
}

TEST(SelfMessages, ReceivePostedBeforeTheSend) {
  SingleProcessCommunicator comm;
  std::vector<double> in(3, 0), out = {1.5, 2.5, 3.5};
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest recv, comm.irecv(in.data(), 3, DType::F64, 0, 7));
  TRC_ASSERT_OK_AND_ASSIGN(bool done, comm.test(recv));
  EXPECT_FALSE(done); // nothing sent yet
  EXPECT_TRUE(recv.active());
  // A send with another tag does not match it.
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest other, comm.isend(out.data(), 3, DType::F64, 0, 8));
  TRC_ASSERT_OK_AND_ASSIGN(done, comm.test(recv));
  EXPECT_FALSE(done);
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest send, comm.isend(out.data(), 3, DType::F64, 0, 7));
  TRC_ASSERT_OK_AND_ASSIGN(done, comm.test(recv));
  EXPECT_TRUE(done);
  EXPECT_FALSE(recv.active());
  EXPECT_EQ(in, out);
  ASSERT_TRUE(comm.wait(send));
  // The tag-8 message is still queued.
  std::vector<double> late(3, 0);
  TRC_ASSERT_OK_AND_ASSIGN(recv, comm.irecv(late.data(), 3, DType::F64, 0, 8));
  ASSERT_TRUE(comm.wait(recv));
  EXPECT_EQ(late, out);
}

TEST(SelfMessages, UnmatchedReceiveIsAnErrorNotAHang) {
  SingleProcessCommunicator comm;
  int32_t x = 0;
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest recv, comm.irecv(&x, 1, DType::I32, 0, 5));
  Status s = comm.wait(recv);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "irecv from rank 0 tag 5: no isend to this rank with tag 5 was posted, "
                         "and in a world of size 1 none can come (waiting would never end)");
  EXPECT_FALSE(recv.active());
  // The failed receive was withdrawn: a later send stays queued for the
  // next receive instead of writing into x.
  int32_t seven = 7, y = 0;
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest send, comm.isend(&seven, 1, DType::I32, 0, 5));
  EXPECT_EQ(x, 0);
  TRC_ASSERT_OK_AND_ASSIGN(recv, comm.irecv(&y, 1, DType::I32, 0, 5));
  ASSERT_TRUE(comm.wait(recv));
  EXPECT_EQ(y, 7);
}

TEST(SelfMessages, DestroyedReceiveIsWithdrawn) {
  SingleProcessCommunicator comm;
  int32_t x = 0, y = 0, nine = 9;
  {
    TRC_ASSERT_OK_AND_ASSIGN(P2PRequest dropped, comm.irecv(&x, 1, DType::I32, 0, 3));
  }
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest send, comm.isend(&nine, 1, DType::I32, 0, 3));
  EXPECT_EQ(x, 0);
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest recv, comm.irecv(&y, 1, DType::I32, 0, 3));
  ASSERT_TRUE(comm.wait(recv));
  EXPECT_EQ(y, 9);
}

TEST(SelfMessages, SizesMustAgree) {
  SingleProcessCommunicator comm;
  int32_t three[3] = {1, 2, 3}, four[4] = {0, 0, 0, 0};
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest send, comm.isend(three, 3, DType::I32, 0, 1));
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest recv, comm.irecv(four, 4, DType::I32, 0, 1));
  Status s = comm.wait(recv);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "irecv from rank 0 tag 1: got 3 i32 elements, expected 4");
  // waitAll waits for every request and returns the first error.
  std::vector<int32_t> one(1), two(2);
  std::vector<P2PRequest> all;
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest s1, comm.isend(three, 2, DType::I32, 0, 2));
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest s2, comm.isend(three, 2, DType::I32, 0, 4));
  all.push_back(std::move(s1));
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest r1, comm.irecv(one.data(), 1, DType::I32, 0, 2));
  all.push_back(std::move(r1));
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest r2, comm.irecv(two.data(), 2, DType::I32, 0, 4));
  all.push_back(std::move(r2));
  s = comm.waitAll(all);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "irecv from rank 0 tag 2: got 2 i32 elements, expected 1");
  EXPECT_EQ(two, (std::vector<int32_t>{1, 2}));
  for (const P2PRequest &r : all)
    EXPECT_FALSE(r.active());
}

TEST(SelfMessages, ArgumentErrors) {
  SingleProcessCommunicator comm;
  int32_t x = 0;
  EXPECT_EQ(comm.maxTag(), INT_MAX);
  StatusOr<P2PRequest> r = comm.isend(&x, 1, DType::I32, 1, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "isend: peer rank 1 is not in a communicator of size 1");
  r = comm.irecv(&x, 1, DType::I32, 0, -1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "irecv with rank 0: tag -1 is outside 0..2147483647");
  r = comm.isend(&x, SIZE_MAX / 2, DType::I32, 0, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("overflows"));
  // The blocking send/recv still have no peer.
  EXPECT_FALSE(comm.recv(&x, 1, DType::I32, 0));
  // An inactive request waits for nothing.
  P2PRequest none;
  EXPECT_TRUE(comm.wait(none));
  TRC_ASSERT_OK_AND_ASSIGN(bool done, comm.test(none));
  EXPECT_TRUE(done);
}

TEST(SelfMessages, RequestsBelongToTheirCommunicator) {
  SingleProcessCommunicator a, b;
  int32_t x = 4, y = 0;
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest send, a.isend(&x, 1, DType::I32, 0, 6));
  Status s = b.wait(send);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "wait: isend to rank 0 tag 6 was made by another communicator");
  EXPECT_TRUE(send.active());
  // Each communicator matches its own messages only.
  TRC_ASSERT_OK_AND_ASSIGN(P2PRequest recv, b.irecv(&y, 1, DType::I32, 0, 6));
  EXPECT_FALSE(b.wait(recv));
  TRC_ASSERT_OK_AND_ASSIGN(recv, a.irecv(&y, 1, DType::I32, 0, 6));
  ASSERT_TRUE(a.wait(recv));
  EXPECT_EQ(y, 4);
  ASSERT_TRUE(a.wait(send));
}
