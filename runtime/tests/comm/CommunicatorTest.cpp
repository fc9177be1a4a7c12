//===- CommunicatorTest.cpp - the world-size-1 communicator, backend choice -===//
//
// SingleProcessCommunicator: rank 0 of 1, collectives copy (also in place),
// broadcast needs root 0, point-to-point has no peer, split and subgroup.
// createCommunicator in a plain process: auto is the single process; MPI
// and NCCL asked for where their library cannot be loaded fail with errors
// naming it. (Multi-process runs: MpiLaunchTest.cpp.)
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/SingleProcessCommunicator.h"

#include "ScopedEnvironment.h"
#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

using ::testing::AnyOf;
using ::testing::HasSubstr;
using namespace trc::rt;
using trc::rt::test::ScopedEnvironment;

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
  EXPECT_THAT(s.message(), HasSubstr("overflows"));
}

TEST(SingleProcessCommunicator, SplitAndSubgroup) {
  SingleProcessCommunicator comm;
  EXPECT_STREQ(comm.backendName(), "single");
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Communicator> part, comm.split(3, 7));
  ASSERT_TRUE(part);
  EXPECT_EQ(part->size(), 1);
  EXPECT_EQ(part->rank(), 0);
  TRC_ASSERT_OK_AND_ASSIGN(part, comm.split(kNoGroup, 0));
  EXPECT_FALSE(part);
  Status s = comm.split(-2, 0).status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "split: color -2 is negative (kNoGroup is -1)");
  TRC_ASSERT_OK_AND_ASSIGN(part, comm.subgroup({0}));
  ASSERT_TRUE(part);
  EXPECT_EQ(part->size(), 1);
  s = comm.subgroup({}).status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "subgroup: the list of ranks is empty");
  s = comm.subgroup({1}).status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "subgroup: listed rank 1 is not in a communicator of size 1");
  s = comm.subgroup({0, 0}).status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "subgroup: rank 0 is listed twice");
}

TEST(CreateCommunicator, PlainProcessIsASingleProcess) {
  ScopedEnvironment e;
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Communicator> comm, createCommunicator("auto"));
  ASSERT_TRUE(comm);
  EXPECT_STREQ(comm->backendName(), "single");
  EXPECT_EQ(comm->size(), 1);
  TRC_ASSERT_OK_AND_ASSIGN(comm, createCommunicator("single"));
  EXPECT_STREQ(comm->backendName(), "single");
  // mpirun -np 1 is still one process: no MPI needed.
  e.set("OMPI_COMM_WORLD_RANK", "0");
  e.set("OMPI_COMM_WORLD_SIZE", "1");
  e.set("TRC_MPI_LIBRARY", "/nonexistent/libmpi.so.40");
  TRC_ASSERT_OK_AND_ASSIGN(comm, createCommunicator("auto"));
  EXPECT_STREQ(comm->backendName(), "single");
  Status s = createCommunicator("gloo").status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "unknown communicator backend 'gloo' (expected auto, "
                         "single, mpi or nccl)");
}

TEST(CreateCommunicator, MissingMpiLibraryIsNamed) {
  ScopedEnvironment e;
  e.set("TRC_MPI_LIBRARY", "/nonexistent/libmpi.so.40");
  Status s = createCommunicator("mpi").status();
  ASSERT_FALSE(s);
  EXPECT_THAT(
      s.message(),
      HasSubstr("cannot load the MPI library '/nonexistent/libmpi.so.40' "
                "(named by TRC_MPI_LIBRARY): "))
      << s.message();
  // auto under a launcher that says 2 processes needs MPI.
  e.set("OMPI_COMM_WORLD_RANK", "0");
  e.set("OMPI_COMM_WORLD_SIZE", "2");
  s = createCommunicator("auto").status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("this process is rank 0 of 2 under Open "
                                     "MPI: cannot load the MPI library "
                                     "'/nonexistent/libmpi.so.40'"))
      << s.message();
  // A malformed launch variable is reported before any loading.
  e.set("OMPI_COMM_WORLD_SIZE", "two");
  s = createCommunicator("auto").status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("OMPI_COMM_WORLD_SIZE='two'"));
}

TEST(CreateCommunicator, NonMpiLibraryIsRefused) {
  ScopedEnvironment e;
  e.set("TRC_MPI_LIBRARY", "libm.so.6");
  Status s = createCommunicator("mpi").status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "the MPI library libm.so.6 has no symbol "
                         "MPI_Init_thread: it is not an MPI library");
}

TEST(CreateCommunicator, BadTimeoutIsNamed) {
  ScopedEnvironment e;
  e.set("TRC_COLLECTIVE_TIMEOUT_S", "soon");
  Status s = createCommunicator("mpi").status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "environment variable TRC_COLLECTIVE_TIMEOUT_S='soon' "
                         "is not a number of seconds >= 0");
}

TEST(CreateCommunicator, NcclFailsCleanlyWithoutLibraryOrDevice) {
  ScopedEnvironment e;
  e.set("TRC_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
  Status s = createCommunicator("nccl").status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("nccl: /nonexistent/libnccl.so.2 (named "
                                     "by TRC_NCCL_LIBRARY) not found"))
      << s.message();
  e.unset("TRC_NCCL_LIBRARY");
  StatusOr<std::unique_ptr<Communicator>> comm = createCommunicator("nccl");
  s = comm.status();
  if (s) {
    // A machine with NCCL and a GPU: a world of one on device 0.
    EXPECT_STREQ((*comm)->backendName(), "nccl");
    EXPECT_EQ((*comm)->size(), 1);
    return;
  }
  EXPECT_THAT(s.message(),
              AnyOf(HasSubstr("libnccl.so.2"), HasSubstr("no CUDA device")));
}
