//===- CollectivesTest.cpp - the trc_rt_* collectives in one process ------===//
//
// Without registered groups every group is this process alone: collectives
// copy (an average over one rank is the value), shard_slice takes chunk 0;
// a program compiled for more ranks than its group has records an error
// that later collectives respect (they do nothing) and that is reported
// once. With a registered single-process communicator the same holds, for
// the data axis's groups (world, shard, replica) and the tensor group.
// Started collectives (the _start entries and trc_rt_collective_finish)
// complete in the start on host communicators and check their tickets.
// Multi-rank behaviour is tested end to end under mpirun
// (test/Training/data-parallel.test, the rings of context-ring.test); on a
// device communicator, against the fake driver and NCCL (CudaBackendTest).
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/Collectives.h"

#include "trc/Abi/CollectiveAbi.h"
#include "runtime/comm/SingleProcessCommunicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

using ::testing::HasSubstr;
using namespace trc::rt;

namespace {
int64_t address(const void *p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); }
} // namespace

TEST(Collectives, OneProcessCopies) {
  setCollectiveGroups(nullptr, nullptr, nullptr, nullptr);
  std::vector<float> in{1, 2, 3, 4}, out(4, 0);
  trc_rt_all_reduce(trc::abi::kGroupWorld, trc::abi::kF32, trc::abi::kReduceAvg, 4,
                    address(in.data()), address(out.data()));
  EXPECT_EQ(out, in);
  std::vector<float> gathered(4, 0);
  trc_rt_all_gather(trc::abi::kGroupShard, trc::abi::kF32, 1, 4, address(in.data()),
                    address(gathered.data()));
  EXPECT_EQ(gathered, in);
  std::vector<float> slice(4, 0);
  trc_rt_shard_slice(trc::abi::kGroupShard, trc::abi::kF32, 1, 4, address(in.data()),
                     address(slice.data()));
  EXPECT_EQ(slice, in);
  std::vector<double> wide{1.5, -2}, copy(2, 0);
  trc_rt_broadcast(trc::abi::kGroupWorld, trc::abi::kF64, 0, 2, address(wide.data()),
                   address(copy.data()));
  EXPECT_EQ(copy, wide);
  // The tensor group (code 3) is this process alone too.
  std::vector<float> summed(4, 0);
  trc_rt_all_reduce(trc::abi::kGroupTensor, trc::abi::kF32, trc::abi::kReduceSum, 4,
                    address(in.data()), address(summed.data()));
  EXPECT_EQ(summed, in);
  EXPECT_TRUE(takeCollectiveError());
  // Codes past the tensor group are refused.
  trc_rt_all_reduce(trc::abi::kNumGroups, trc::abi::kF32, trc::abi::kReduceSum, 4,
                    address(in.data()), address(summed.data()));
  Status s = takeCollectiveError();
  EXPECT_THAT(s.message(), HasSubstr("all-reduce: bad group or dtype code")) << s.message();
}

TEST(Collectives, WrongGroupSizeIsAnErrorReportedOnce) {
  SingleProcessCommunicator single;
  setCollectiveGroups(&single, &single, &single, &single);
  std::vector<float> in{1, 2, 3, 4}, out(2, -1);
  trc_rt_reduce_scatter(trc::abi::kGroupShard, trc::abi::kF32, trc::abi::kReduceAvg, 2, 2,
                        address(in.data()), address(out.data()));
  // Later collectives do nothing until the error is taken.
  std::vector<float> untouched(4, -1);
  trc_rt_all_reduce(trc::abi::kGroupWorld, trc::abi::kF32, trc::abi::kReduceSum, 4,
                    address(in.data()), address(untouched.data()));
  EXPECT_EQ(untouched, std::vector<float>(4, -1));
  Status s = takeCollectiveError();
  ASSERT_FALSE(s);
  EXPECT_THAT(
      s.message(),
      HasSubstr("reduce-scatter: the program splits tensors over 2 ranks, but "
                "its shard group has 1"))
      << s.message();
  EXPECT_TRUE(takeCollectiveError()); // reported once
  trc_rt_broadcast(trc::abi::kGroupWorld, trc::abi::kF32, 3, 4, address(in.data()),
                   address(untouched.data()));
  s = takeCollectiveError();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("root 3 is not a rank of the world group (1 ranks)"))
      << s.message();
  trc_rt_all_gather(trc::abi::kGroupTensor, trc::abi::kF32, 2, 2, address(in.data()),
                    address(untouched.data()));
  s = takeCollectiveError();
  EXPECT_THAT(s.message(), HasSubstr("all-gather: the program splits tensors over 2 ranks, but "
                                     "its tensor group has 1"))
      << s.message();
  setCollectiveGroups(nullptr, nullptr, nullptr, nullptr);
}

// Started collectives on host communicators run to completion in the start;
// the finish names the ticket. Alone and with a one-rank communicator, each
// kind copies; finishing a ticket never started, or starting one twice, is
// an error naming the ticket (a program defect), reported once.
TEST(Collectives, StartedCollectivesFinishByTicket) {
  SingleProcessCommunicator single;
  for (Communicator *comm : {static_cast<Communicator *>(nullptr),
                             static_cast<Communicator *>(&single)}) {
    setCollectiveGroups(comm, comm, comm, comm);
    std::vector<float> in{1, 2, 3, 4}, reduced(4, 0), gathered(4, 0), scattered(4, 0);
    trc_rt_all_reduce_start(trc::abi::kGroupWorld, trc::abi::kF32, trc::abi::kReduceSum, 4,
                            address(in.data()), address(reduced.data()), 0);
    trc_rt_all_gather_start(trc::abi::kGroupShard, trc::abi::kF32, 1, 4, address(in.data()),
                            address(gathered.data()), 1);
    trc_rt_reduce_scatter_start(trc::abi::kGroupShard, trc::abi::kF32, trc::abi::kReduceAvg, 1,
                                4, address(in.data()), address(scattered.data()), 2);
    for (int64_t ticket : {1, 0, 2})
      trc_rt_collective_finish(ticket, 0, 0);
    EXPECT_TRUE(takeCollectiveError());
    EXPECT_EQ(reduced, in);
    EXPECT_EQ(gathered, in);
    EXPECT_EQ(scattered, in);
  }
  trc_rt_collective_finish(9, 0, 0);
  Status s = takeCollectiveError();
  EXPECT_THAT(s.message(), HasSubstr("collective 9 finished but never started")) << s.message();
  std::vector<float> in{1, 2}, out(2, 0);
  trc_rt_all_reduce_start(trc::abi::kGroupWorld, trc::abi::kF32, trc::abi::kReduceSum, 2,
                          address(in.data()), address(out.data()), 4);
  trc_rt_all_reduce_start(trc::abi::kGroupWorld, trc::abi::kF32, trc::abi::kReduceSum, 2,
                          address(in.data()), address(out.data()), 4);
  s = takeCollectiveError();
  EXPECT_THAT(s.message(), HasSubstr("collective 4 started again before it finished"))
      << s.message();
  // A permute needs a ring of at least two ranks.
  trc_rt_collective_permute_start(trc::abi::kGroupWorld, trc::abi::kF32, 1, 1, 2,
                                  address(in.data()), address(out.data()), 5);
  s = takeCollectiveError();
  EXPECT_THAT(s.message(), HasSubstr("shift 1 is not a step of the world group's ring"))
      << s.message();
  setCollectiveGroups(nullptr, nullptr, nullptr, nullptr);
}
