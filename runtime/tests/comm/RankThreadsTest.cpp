//===- RankThreadsTest.cpp - a rank's share of the node's cores -----------===//
//
// threadsPerRank's arithmetic, and applyRankThreads setting both thread
// variables for ranks sharing a node while keeping what the user set.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/RankThreads.h"

#include "ScopedEnvironment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace trc::rt;

TEST(RankThreads, ShareOfTheNode) {
  EXPECT_EQ(threadsPerRank(1, 2, 2), 2);   // one rank: every core
  EXPECT_EQ(threadsPerRank(2, 16, 16), 8); // unbound: cores / ranks
  EXPECT_EQ(threadsPerRank(4, 2, 2), 1);   // oversubscribed: at least 1
  EXPECT_EQ(threadsPerRank(2, 2, 1), 1);   // bound to one core: that core
  EXPECT_EQ(threadsPerRank(2, 64, 8), 8);  // bound to 8 cores: those
}

TEST(RankThreads, SetsBothVariablesForRanksSharingANode) {
  test::ScopedEnvironment env;
  env.unset("TRC_NUM_THREADS");
  env.unset("OMP_NUM_THREADS");
  env.set("OMPI_COMM_WORLD_RANK", "0");
  env.set("OMPI_COMM_WORLD_SIZE", "4096");
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "4096"); // more ranks than any machine's cores
  StatusOr<int> n = applyRankThreads();
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, 1);
  ASSERT_NE(std::getenv("OMP_NUM_THREADS"), nullptr);
  EXPECT_EQ(std::string(std::getenv("OMP_NUM_THREADS")), "1");
  EXPECT_EQ(std::string(std::getenv("TRC_NUM_THREADS")), "1");
}

TEST(RankThreads, KeepsWhatTheUserSet) {
  test::ScopedEnvironment env;
  env.unset("TRC_NUM_THREADS");
  env.set("OMP_NUM_THREADS", "3");
  env.set("OMPI_COMM_WORLD_RANK", "0");
  env.set("OMPI_COMM_WORLD_SIZE", "4096");
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "4096");
  ASSERT_TRUE(applyRankThreads().ok());
  EXPECT_EQ(std::string(std::getenv("OMP_NUM_THREADS")), "3");
  EXPECT_EQ(std::getenv("TRC_NUM_THREADS"), nullptr);
}

TEST(RankThreads, BadLauncherVariableIsAnError) {
  test::ScopedEnvironment env;
  env.set("OMPI_COMM_WORLD_RANK", "0");
  env.set("OMPI_COMM_WORLD_SIZE", "two");
  StatusOr<int> n = applyRankThreads();
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("OMPI_COMM_WORLD_SIZE"), std::string::npos);
}
