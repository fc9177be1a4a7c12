//===- CommunicatorTest.cpp - the world-size-1 communicator -----------------===//
//
// SingleProcessCommunicator: rank 0 of 1, collectives copy (also in place),
// broadcast needs root 0, point-to-point has no peer.
//
//===----------------------------------------------------------------------===//
#include "runtime/SingleProcessCommunicator.h"

#include <gtest/gtest.h>

#include <vector>

using namespace trc::rt;

TEST(SingleProcessCommunicator, RankAndSize) {
  SingleProcessCommunicator comm;
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_TRUE(comm.barrier());
}

TEST(SingleProcessCommunicator, CollectivesAreCopies) {
  SingleProcessCommunicator comm;
  Communicator &c = comm;
  std::vector<float> send = {1, 2, 3, 4}, recv(4, 0);
  ASSERT_TRUE(c.allReduce(send.data(), recv.data(), 4, DType::F32, ReduceOp::Sum));
  EXPECT_EQ(recv, send);
  std::fill(recv.begin(), recv.end(), 0.f);
  ASSERT_TRUE(c.allReduce(send.data(), recv.data(), 4, DType::F32, ReduceOp::Avg));
  EXPECT_EQ(recv, send);
  std::fill(recv.begin(), recv.end(), 0.f);
  ASSERT_TRUE(c.allGather(send.data(), recv.data(), 4, DType::F32));
  EXPECT_EQ(recv, send);
  std::fill(recv.begin(), recv.end(), 0.f);
  ASSERT_TRUE(c.reduceScatter(send.data(), recv.data(), 4, DType::F32, ReduceOp::Max));
  EXPECT_EQ(recv, send);
  // In place.
  std::vector<int64_t> buf = {5, 6};
  ASSERT_TRUE(c.allReduce(buf.data(), buf.data(), 2, DType::I64, ReduceOp::Sum));
  EXPECT_EQ(buf, (std::vector<int64_t>{5, 6}));
  ASSERT_TRUE(c.broadcast(buf.data(), 2, DType::I64, 0));
  EXPECT_EQ(buf, (std::vector<int64_t>{5, 6}));
}

TEST(SingleProcessCommunicator, NoOtherRanks) {
  SingleProcessCommunicator comm;
  int x = 0;
  Status s = comm.broadcast(&x, 1, DType::I32, 1);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "broadcast: root rank 1 does not exist in a world of size 1");
  s = comm.send(&x, 1, DType::I32, 1);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "send: no peer rank 1 in a world of size 1");
  s = comm.recv(&x, 1, DType::I32, 0);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "recv: no peer rank 0 in a world of size 1");
  s = comm.allReduce(&x, &x, SIZE_MAX / 2, DType::I32, ReduceOp::Sum);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("overflows"), std::string::npos);
}
