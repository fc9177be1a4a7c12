//===- ParallelPlanTest.cpp - trc-run --config's parser -------------------===//
//
// parseParallelPlan (runtime/spec/ParallelPlan.h): every key, the stage
// and shard degree derived from them, contradictions, divisibility against
// the world size, unknown keys, type errors, inline JSON vs files vs "auto",
// and describe().
//
//===----------------------------------------------------------------------===//
#include "runtime/spec/EngineSupport.h"
#include "runtime/spec/ParallelPlan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using trc::rt::ParallelPlan;
using trc::rt::parseParallelPlan;

namespace {
using ::testing::HasSubstr;

class ParallelPlanTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "trc-parallel-config-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir = pattern;
  }
  void TearDown() override {
    for (const std::string &f : files)
      std::remove(f.c_str());
    rmdir(dir.c_str());
  }

  std::string writeFile(const std::string &name, const std::string &text) {
    std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    files.push_back(path);
    return path;
  }

  // The configuration of a spec that must parse.
  static ParallelPlan ok(const std::string &spec, int world) {
    trc::rt::StatusOr<ParallelPlan> c = parseParallelPlan(spec, world);
    EXPECT_TRUE(c.ok()) << spec << " (world " << world << "): " << c.status().message();
    return c.ok() ? *c : ParallelPlan();
  }
  // The message of a spec that must fail.
  static std::string error(const std::string &spec, int world) {
    trc::rt::StatusOr<ParallelPlan> c = parseParallelPlan(spec, world);
    EXPECT_FALSE(c.ok()) << spec << " (world " << world << ") parsed: " << c->describe();
    trc::rt::Status s = c.status();
    EXPECT_EQ(s.message().rfind("--config: ", 0), 0u) << s.message();
    return s.message();
  }
  std::string dir;
  std::vector<std::string> files;
};


TEST_F(ParallelPlanTest, AutoIsPlainDataParallelism) {
  for (int world : {1, 8}) {
    ParallelPlan c = ok("auto", world);
    EXPECT_TRUE(c.ddp);
    EXPECT_EQ(c.zeroStage, 0);
    EXPECT_EQ(c.shardDegree, 1);
    EXPECT_EQ(c.replicas(), world);
    EXPECT_EQ(c.bucketCapMb, 25.0);
    EXPECT_EQ(c.communicator, "auto");
  }
}

TEST_F(ParallelPlanTest, EmptyObjectIsTheDefaults) {
  ParallelPlan c = ok("{}", 4);
  EXPECT_EQ(c.describe(), "ddp zero=0 shard_degree=1 replicas=4 bucket_cap_mb=25 communicator=auto");
  EXPECT_EQ(ok("  \n{ }", 4).describe(), c.describe());
}

TEST_F(ParallelPlanTest, EmptySpecAndBadWorldSize) {
  EXPECT_THAT(error("", 1), HasSubstr("empty"));
  EXPECT_THAT(error("  \t", 1), HasSubstr("empty"));
  EXPECT_THAT(error("{}", 0), HasSubstr("world size must be at least 1, got 0"));
}

TEST_F(ParallelPlanTest, Ddp) {
  EXPECT_TRUE(ok(R"({"ddp": true})", 4).ddp);
  EXPECT_FALSE(ok(R"({"ddp": false})", 1).ddp);
  // More than one rank and nothing sharded: the ranks would diverge.
  std::string m = error(R"({"ddp": false})", 4);
  EXPECT_THAT(m, HasSubstr("'ddp'"));
  EXPECT_THAT(m, HasSubstr("different models"));
  EXPECT_THAT(error(R"({"ddp": false, "hybrid_shard_degree": 1})", 4), HasSubstr("different models"));
  // Sharding over the whole world is one model.
  ParallelPlan c = ok(R"({"ddp": false, "zero_stage": 3})", 4);
  EXPECT_EQ(c.shardDegree, 4);
  EXPECT_EQ(c.describe(), "no_ddp zero=3 shard_degree=4 replicas=1 bucket_cap_mb=25 communicator=auto");
  // Replica groups of a hybrid shard would diverge too.
  m = error(R"({"ddp": false, "hybrid_shard_degree": 2})", 4);
  EXPECT_THAT(m, HasSubstr("'ddp': false"));
  EXPECT_THAT(m, HasSubstr("'hybrid_shard_degree': 2"));
}

TEST_F(ParallelPlanTest, ShardOptimizerState) {
  ParallelPlan c = ok(R"({"shard_optimizer_state": true})", 8);
  EXPECT_EQ(c.zeroStage, 1);
  EXPECT_EQ(c.shardDegree, 8);
  EXPECT_EQ(c.replicas(), 1);
  c = ok(R"({"shard_optimizer_state": false})", 8);
  EXPECT_EQ(c.zeroStage, 0);
  EXPECT_EQ(c.shardDegree, 1);
  // At least stage 1: a sharding degree raises it to 3.
  c = ok(R"({"shard_optimizer_state": true, "sharded_data_parallel_degree": 4})", 8);
  EXPECT_EQ(c.zeroStage, 3);
  EXPECT_EQ(c.shardDegree, 4);
  c = ok(R"({"shard_optimizer_state": true, "zero_stage": 2})", 8);
  EXPECT_EQ(c.zeroStage, 2);
}

TEST_F(ParallelPlanTest, ShardedDataParallelDegree) {
  ParallelPlan c = ok(R"({"sharded_data_parallel_degree": 8})", 8);
  EXPECT_EQ(c.zeroStage, 3);
  EXPECT_EQ(c.shardDegree, 8);
  EXPECT_EQ(c.replicas(), 1);
  c = ok(R"({"sharded_data_parallel_degree": 2})", 8);
  EXPECT_EQ(c.zeroStage, 3);
  EXPECT_EQ(c.shardDegree, 2);
  EXPECT_EQ(c.replicas(), 4);
  c = ok(R"({"sharded_data_parallel_degree": 2, "zero_stage": 3})", 8);
  EXPECT_EQ(c.shardDegree, 2);
  // 1 shards nothing (SageMaker's default).
  c = ok(R"({"sharded_data_parallel_degree": 1})", 8);
  EXPECT_EQ(c.zeroStage, 0);
  EXPECT_EQ(c.shardDegree, 1);
}

TEST_F(ParallelPlanTest, HybridShardDegree) {
  ParallelPlan c = ok(R"({"hybrid_shard_degree": 2})", 8);
  EXPECT_EQ(c.zeroStage, 3);
  EXPECT_EQ(c.shardDegree, 2);
  EXPECT_EQ(c.replicas(), 4);
  for (int stage : {1, 2}) {
    c = ok(R"({"hybrid_shard_degree": 4, "zero_stage": )" + std::to_string(stage) + "}", 8);
    EXPECT_EQ(c.zeroStage, stage);
    EXPECT_EQ(c.shardDegree, 4);
  }
  c = ok(R"({"hybrid_shard_degree": 8})", 8);
  EXPECT_EQ(c.replicas(), 1);
  c = ok(R"({"hybrid_shard_degree": 1, "zero_stage": 0})", 8);
  EXPECT_EQ(c.shardDegree, 1);
  // The same degree under both names is fine.
  c = ok(R"({"hybrid_shard_degree": 4, "sharded_data_parallel_degree": 4})", 8);
  EXPECT_EQ(c.zeroStage, 3);
  EXPECT_EQ(c.shardDegree, 4);
}

TEST_F(ParallelPlanTest, ZeroStage) {
  for (int stage = 0; stage <= 3; ++stage) {
    ParallelPlan c = ok(R"({"zero_stage": )" + std::to_string(stage) + "}", 4);
    EXPECT_EQ(c.zeroStage, stage);
    EXPECT_EQ(c.shardDegree, stage == 0 ? 1 : 4);
  }
  EXPECT_THAT(error(R"({"zero_stage": 4})", 4), HasSubstr("key 'zero_stage': expected 0, 1, 2 or 3, got 4"));
  EXPECT_THAT(error(R"({"zero_stage": -1})", 4), HasSubstr("got -1"));
  // One rank: stage 3 shards over that rank.
  EXPECT_EQ(ok(R"({"zero_stage": 3})", 1).shardDegree, 1);
}

TEST_F(ParallelPlanTest, Divisibility) {
  for (const char *key : {"sharded_data_parallel_degree", "hybrid_shard_degree"}) {
    std::string k = std::string("\"") + key + "\": ";
    EXPECT_THAT(error("{" + k + "3}", 8), HasSubstr(std::string("key '") + key + "': 3 does not divide the world size 8"));
    EXPECT_THAT(error("{" + k + "16}", 8), HasSubstr("16 does not divide the world size 8"));
    EXPECT_THAT(error("{" + k + "0}", 8), HasSubstr("expected an integer >= 1, got 0"));
    EXPECT_THAT(error("{" + k + "-2}", 8), HasSubstr("expected an integer >= 1, got -2"));
    EXPECT_EQ(ok("{" + k + "3}", 6).replicas(), 2);
  }
}

TEST_F(ParallelPlanTest, Contradictions) {
  std::string m = error(R"({"shard_optimizer_state": true, "zero_stage": 0})", 4);
  EXPECT_THAT(m, HasSubstr("contradictory keys 'shard_optimizer_state': true and 'zero_stage': 0"));
  for (int stage : {1, 2, 3}) {
    m = error(R"({"shard_optimizer_state": false, "zero_stage": )" + std::to_string(stage) + "}", 4);
    EXPECT_THAT(m, HasSubstr("'shard_optimizer_state': false and 'zero_stage': " + std::to_string(stage)));
  }
  for (int stage : {0, 1, 2}) {
    m = error(R"({"sharded_data_parallel_degree": 2, "zero_stage": )" + std::to_string(stage) + "}", 4);
    EXPECT_THAT(m, HasSubstr("'sharded_data_parallel_degree': 2 and 'zero_stage': " + std::to_string(stage)));
  }
  m = error(R"({"hybrid_shard_degree": 2, "zero_stage": 0})", 4);
  EXPECT_THAT(m, HasSubstr("'hybrid_shard_degree': 2 and 'zero_stage': 0"));
  m = error(R"({"hybrid_shard_degree": 2, "sharded_data_parallel_degree": 4})", 8);
  EXPECT_THAT(m, HasSubstr("'sharded_data_parallel_degree': 4 and 'hybrid_shard_degree': 2"));
  // A degree > 1 without zero_stage means stage 3, which shards the optimizer state.
  m = error(R"({"shard_optimizer_state": false, "hybrid_shard_degree": 2})", 4);
  EXPECT_THAT(m, HasSubstr("'shard_optimizer_state': false and 'hybrid_shard_degree': 2"));
  m = error(R"({"shard_optimizer_state": false, "sharded_data_parallel_degree": 4})", 4);
  EXPECT_THAT(m, HasSubstr("'shard_optimizer_state': false and 'sharded_data_parallel_degree': 4"));
  // Degree 1 shards nothing: no contradiction with stage 0.
  EXPECT_EQ(ok(R"({"sharded_data_parallel_degree": 1, "zero_stage": 0})", 4).zeroStage, 0);
  EXPECT_EQ(ok(R"({"shard_optimizer_state": false, "hybrid_shard_degree": 1})", 4).zeroStage, 0);
}

TEST_F(ParallelPlanTest, BucketCapMb) {
  EXPECT_EQ(ok(R"({"bucket_cap_mb": 50})", 2).bucketCapMb, 50.0);
  EXPECT_EQ(ok(R"({"bucket_cap_mb": 2.5})", 2).bucketCapMb, 2.5);
  EXPECT_EQ(ok(R"({"bucket_cap_mb": 1e-3})", 2).bucketCapMb, 1e-3);
  EXPECT_THAT(error(R"({"bucket_cap_mb": 0})", 2), HasSubstr("key 'bucket_cap_mb': expected a number > 0"));
  EXPECT_THAT(error(R"({"bucket_cap_mb": -1})", 2), HasSubstr("got -1"));
  EXPECT_THAT(error(R"({"bucket_cap_mb": 1e300})", 2), HasSubstr("<= 1048576, got 1e+300"));
  EXPECT_THAT(error(R"({"bucket_cap_mb": 1e400})", 2), HasSubstr("key 'bucket_cap_mb': 1e400 is out of range"));
}

TEST_F(ParallelPlanTest, Communicator) {
  for (const char *name : {"auto", "mpi", "nccl"})
    EXPECT_EQ(ok(std::string(R"({"communicator": ")") + name + "\"}", 4).communicator, name);
  EXPECT_EQ(ok(R"({"communicator": "single"})", 1).communicator, "single");
  EXPECT_THAT(error(R"({"communicator": "single"})", 2), HasSubstr("key 'communicator': 'single' is for one rank"));
  EXPECT_THAT(error(R"({"communicator": "gloo"})", 2), HasSubstr("key 'communicator': expected auto, mpi, nccl or single, got 'gloo'"));
}

TEST_F(ParallelPlanTest, UnknownKeys) {
  EXPECT_EQ(error(R"({"ddp": true, "foo": 1})", 2),
            "--config: unknown key 'foo' (known: ddp, shard_optimizer_state, "
            "sharded_data_parallel_degree, hybrid_shard_degree, zero_stage, bucket_cap_mb, "
            "communicator, tensor_parallel_degree, sequence_parallel, context_parallel_degree, "
            "cp_comm_type, cp_load_balance, pipeline_parallel_degree, "
            "partitions, microbatches, active_microbatches, pipeline, pipeline_schedule, "
            "virtual_stages, offload_activations, activation_loading_horizon, recompute, "
            "auto_partition, "
            "optimize, memory_weight)");
  // Keys are case-sensitive; odd bytes are escaped in the message.
  EXPECT_THAT(error(R"({"DDP": true})", 2), HasSubstr("unknown key 'DDP'"));
  EXPECT_THAT(error(R"({"a\nb": true})", 2), HasSubstr("unknown key 'a\\x0ab'"));
  std::string path = writeFile("unknown.json", R"({"tensor_parallelism": 2})");
  EXPECT_THAT(error(path, 2), HasSubstr("--config: " + path + ": unknown key 'tensor_parallelism'"));
}

// SageMaker's model-parallel keys: degrees split the world into data x
// tensor x pipeline, the rest is read as given.
TEST_F(ParallelPlanTest, ModelParallelKeys) {
  ParallelPlan c = ok(R"({"tensor_parallel_degree": 2, "pipeline_parallel_degree": 2,
                          "microbatches": 8, "pipeline": "interleaved", "virtual_stages": 2,
                          "active_microbatches": 4, "sequence_parallel": true})", 8);
  EXPECT_EQ(c.tensorDegree, 2);
  EXPECT_EQ(c.pipelineDegree, 2);
  EXPECT_EQ(c.dataDegree(), 2);
  EXPECT_EQ(c.replicas(), 2);
  EXPECT_TRUE(c.modelParallel());
  EXPECT_TRUE(c.sequenceParallel);
  EXPECT_EQ(c.microbatches, 8);
  EXPECT_EQ(c.activeMicrobatches, 4);
  EXPECT_EQ(c.pipelineSchedule, "1f1b");
  EXPECT_EQ(c.virtualStages, 2);
  EXPECT_EQ(c.describe(), "ddp zero=0 shard_degree=1 replicas=2 bucket_cap_mb=25 "
                          "communicator=auto tensor=2 sequence_parallel pipeline=2 "
                          "schedule=1f1b virtual_stages=2 microbatches=8 active_microbatches=4");
  // `partitions` is SMP's other name for the pipeline degree; simple = GPipe.
  c = ok(R"({"partitions": 4, "pipeline": "simple"})", 4);
  EXPECT_EQ(c.pipelineDegree, 4);
  EXPECT_EQ(c.pipelineSchedule, "gpipe");
  EXPECT_EQ(c.dataDegree(), 1);
  // ZeRO shards over the data-parallel ranks only.
  c = ok(R"({"tensor_parallel_degree": 2, "shard_optimizer_state": true})", 8);
  EXPECT_EQ(c.shardDegree, 4);
  c = ok(R"({"offload_activations": true, "activation_loading_horizon": 2,
             "auto_partition": true, "optimize": "memory", "memory_weight": 0.5})", 1);
  EXPECT_TRUE(c.offloadActivations);
  EXPECT_EQ(c.activationLoadingHorizon, 2);
  EXPECT_TRUE(c.autoPartition);
  EXPECT_EQ(c.optimize, "memory");
  EXPECT_EQ(c.memoryWeight, 0.5);
  // trc-plan's recomputation policy is a plan key too.
  EXPECT_EQ(ok(R"({"recompute": "selective"})", 1).recompute, "selective");
  EXPECT_THAT(ok(R"({"recompute": "full"})", 1).describe(), HasSubstr(" recompute=full"));
  // A data-parallel plan describes itself as before.
  EXPECT_EQ(ok("{}", 2).describe(),
            "ddp zero=0 shard_degree=1 replicas=2 bucket_cap_mb=25 communicator=auto");
}

TEST_F(ParallelPlanTest, ModelParallelErrors) {
  EXPECT_THAT(error(R"({"tensor_parallel_degree": 3})", 4), HasSubstr("keys 'tensor_parallel_degree' x 'pipeline_parallel_degree': 3 x 1 does not "
             "divide the world size 4"));
  EXPECT_THAT(error(R"({"tensor_parallel_degree": 2, "pipeline_parallel_degree": 4})", 4), HasSubstr("2 x 4 does not divide the world size 4"));
  EXPECT_THAT(error(R"({"tensor_parallel_degree": 0})", 4), HasSubstr("key 'tensor_parallel_degree': expected an integer >= 1, got 0"));
  EXPECT_THAT(error(R"({"pipeline_parallel_degree": 2, "partitions": 4})", 4), HasSubstr("contradictory keys 'pipeline_parallel_degree': 2 and 'partitions': 4"));
  EXPECT_THAT(error(R"({"pipeline": "fancy"})", 4), HasSubstr("key 'pipeline': expected one of simple, interleaved, got 'fancy'"));
  EXPECT_THAT(error(R"({"pipeline_schedule": "2f2b"})", 4), HasSubstr("key 'pipeline_schedule': expected one of gpipe, 1f1b, interleaved_1f1b, zb_h1"));
  EXPECT_THAT(error(R"({"pipeline": "simple", "pipeline_schedule": "1f1b"})", 4), HasSubstr("contradictory keys 'pipeline': 'simple' and 'pipeline_schedule': '1f1b'"));
  EXPECT_THAT(error(R"({"sequence_parallel": true})", 4), HasSubstr("contradictory keys 'sequence_parallel': true and 'tensor_parallel_degree': 1"));
  EXPECT_THAT(error(R"({"microbatches": 2, "active_microbatches": 3})", 4), HasSubstr("key 'active_microbatches': 3 is more than 'microbatches' (2)"));
  EXPECT_THAT(error(R"({"virtual_stages": 2})", 4), HasSubstr("contradictory keys 'virtual_stages': 2 and 'pipeline_parallel_degree': 1"));
  EXPECT_THAT(error(R"({"memory_weight": 1.5})", 4), HasSubstr("key 'memory_weight': expected a number in [0, 1], got 1.5"));
  EXPECT_THAT(error(R"({"recompute": "some"})", 4),
              HasSubstr("key 'recompute': expected one of none, selective, full, auto, got 'some'"));
  EXPECT_THAT(error(R"({"optimize": "cost"})", 4), HasSubstr("key 'optimize': expected one of speed, memory, got 'cost'"));
  // Shard degrees divide the data-parallel degree, not the world.
  EXPECT_THAT(error(R"({"tensor_parallel_degree": 2, "sharded_data_parallel_degree": 4})", 4), HasSubstr("key 'sharded_data_parallel_degree': 4 does not divide the data-parallel degree 2 "
             "(world size 4 over 'tensor_parallel_degree' 2 x 'pipeline_parallel_degree' 1)"));
  EXPECT_THAT(error(R"({"tensor_parallel_degree": 2, "hybrid_shard_degree": 2})", 6),
              HasSubstr("key 'hybrid_shard_degree': 2 does not divide the data-parallel degree 3 "
                        "(world size 6 over 'tensor_parallel_degree' 2 x "
                        "'pipeline_parallel_degree' 1)"));
}

// Tensor parallelism alone: world = data x tensor, ZeRO over the data axis.
TEST_F(ParallelPlanTest, TensorParallelGrid) {
  for (auto [world, tp] : {std::pair(4, 2), std::pair(4, 4), std::pair(8, 2), std::pair(2, 1)}) {
    ParallelPlan c = ok("{\"tensor_parallel_degree\": " + std::to_string(tp) + "}", world);
    EXPECT_EQ(c.tensorDegree, tp);
    EXPECT_EQ(c.dataDegree() * c.tensorDegree, world);
    EXPECT_EQ(c.shardDegree, 1);
    EXPECT_FALSE(c.sequenceParallel);
  }
  ParallelPlan c = ok(R"({"tensor_parallel_degree": 2, "zero_stage": 1, "sequence_parallel": true})", 4);
  EXPECT_EQ(c.dataDegree(), 2);
  EXPECT_EQ(c.shardDegree, 2); // the data axis, not the world
  EXPECT_EQ(c.replicas(), 1);
  EXPECT_TRUE(c.sequenceParallel);
  EXPECT_EQ(c.describe(), "ddp zero=1 shard_degree=2 replicas=1 bucket_cap_mb=25 "
                          "communicator=auto tensor=2 sequence_parallel");
  // A degree that does not divide the world names both degree keys.
  EXPECT_THAT(error(R"({"tensor_parallel_degree": 3})", 4),
              HasSubstr("keys 'tensor_parallel_degree' x 'pipeline_parallel_degree': 3 x 1 does not "
                        "divide the world size 4"));
  EXPECT_THAT(error(R"({"tensor_parallel_degree": 8})", 4), HasSubstr("8 x 1 does not divide"));
}

// Context parallelism: world = data x context (x tensor), ZeRO over data x
// context (the ranks holding whole parameters); the degree must divide the
// world with the others.
TEST_F(ParallelPlanTest, ContextParallelGrid) {
  ParallelPlan c = ok(R"({"context_parallel_degree": 2, "zero_stage": 1})", 4);
  EXPECT_EQ(c.contextDegree, 2);
  EXPECT_EQ(c.cpCommType, "all_gather");
  EXPECT_EQ(c.dataDegree(), 2);
  EXPECT_EQ(c.shardSpan(), 4);
  EXPECT_EQ(c.shardDegree, 4); // data x context
  EXPECT_TRUE(c.modelParallel());
  EXPECT_EQ(c.describe(), "ddp zero=1 shard_degree=4 replicas=1 bucket_cap_mb=25 "
                          "communicator=auto context=2 cp_comm_type=all_gather");
  // The head-tail layout is the ring's default, not the all-gather form's;
  // either can be asked for.
  EXPECT_FALSE(c.cpLoadBalance);
  ParallelPlan ring = ok(R"({"context_parallel_degree": 2, "cp_comm_type": "p2p"})", 2);
  EXPECT_TRUE(ring.cpLoadBalance);
  EXPECT_EQ(ring.describe(), "ddp zero=0 shard_degree=1 replicas=2 bucket_cap_mb=25 "
                             "communicator=auto context=2 cp_comm_type=p2p cp_load_balance");
  EXPECT_FALSE(ok(R"({"context_parallel_degree": 2, "cp_comm_type": "p2p", )"
                  R"("cp_load_balance": false})", 2).cpLoadBalance);
  EXPECT_TRUE(ok(R"({"context_parallel_degree": 2, "cp_load_balance": true})", 2).cpLoadBalance);
  EXPECT_THAT(error(R"({"cp_load_balance": "yes"})", 2),
              HasSubstr("key 'cp_load_balance'"));
  // Without data parallelism nothing is averaged: ddp false is fine.
  EXPECT_FALSE(ok(R"({"context_parallel_degree": 2, "ddp": false})", 2).ddp);
  // ZeRO over the context ranks alone (no data parallelism), and hybrid.
  EXPECT_EQ(ok(R"({"context_parallel_degree": 4, "zero_stage": 1})", 4).shardDegree, 4);
  ParallelPlan hybrid =
      ok(R"({"context_parallel_degree": 2, "zero_stage": 2, "hybrid_shard_degree": 2})", 4);
  EXPECT_EQ(hybrid.shardDegree, 2);
  EXPECT_EQ(hybrid.replicas(), 2);
  EXPECT_THAT(error(R"({"context_parallel_degree": 2, "tensor_parallel_degree": 2, "zero_stage": 1, "hybrid_shard_degree": 3})", 8),
              HasSubstr("key 'hybrid_shard_degree': 3 does not divide the data x context degree "
                        "4 (the ranks that hold whole parameters: world size 8 over "
                        "'tensor_parallel_degree' 2 x 'pipeline_parallel_degree' 1)"));
  EXPECT_EQ(ok(R"({"context_parallel_degree": 4})", 4).dataDegree(), 1);
  EXPECT_THAT(error(R"({"context_parallel_degree": 3})", 4),
              HasSubstr("keys 'tensor_parallel_degree' x 'pipeline_parallel_degree' x "
                        "'context_parallel_degree': 1 x 1 x 3 does not divide the world size 4"));
  EXPECT_THAT(error(R"({"context_parallel_degree": 2, "tensor_parallel_degree": 2})", 2),
              HasSubstr("2 x 1 x 2 does not divide the world size 2"));
  EXPECT_THAT(error(R"({"context_parallel_degree": 0})", 4),
              HasSubstr("key 'context_parallel_degree': expected an integer >= 1, got 0"));
  EXPECT_THAT(error(R"({"cp_comm_type": "ring"})", 4),
              HasSubstr("key 'cp_comm_type': expected one of all_gather, p2p, got 'ring'"));
  EXPECT_THAT(error(R"({"context_parallel_degree": 2, "sharded_data_parallel_degree": 8})", 4),
              HasSubstr("key 'sharded_data_parallel_degree': 8 does not divide the world size 4"));
  // What the engines do not run yet is refused by key (EngineSupport.h).
  EXPECT_TRUE(engineRuns(c).ok());
  EXPECT_TRUE(
      engineRuns(ok(R"({"context_parallel_degree": 2, "cp_comm_type": "p2p"})", 2)).ok());
  EXPECT_TRUE(
      engineRuns(ok(R"({"context_parallel_degree": 2, "tensor_parallel_degree": 2})", 4)).ok());
  EXPECT_THAT(engineRuns(ok(R"({"context_parallel_degree": 2, "tensor_parallel_degree": 2, )"
                            R"("sequence_parallel": true})",
                            4))
                  .message(),
              HasSubstr("and 'sequence_parallel': true: both split the positions"));
  // Pipeline stages run context-parallel programs (one stage's ranks form
  // its context groups).
  EXPECT_TRUE(
      engineRuns(ok(R"({"context_parallel_degree": 2, "pipeline_parallel_degree": 2})", 4)).ok());
}

TEST_F(ParallelPlanTest, TypeErrors) {
  EXPECT_THAT(error(R"({"ddp": 1})", 2), HasSubstr("key 'ddp': expected a boolean, got a number"));
  EXPECT_THAT(error(R"({"shard_optimizer_state": "true"})", 2), HasSubstr("key 'shard_optimizer_state': expected a boolean, got a string"));
  EXPECT_THAT(error(R"({"sharded_data_parallel_degree": "2"})", 2), HasSubstr("key 'sharded_data_parallel_degree': expected an integer, got a string"));
  EXPECT_THAT(error(R"({"hybrid_shard_degree": 2.5})", 2), HasSubstr("key 'hybrid_shard_degree': expected an integer, got 2.5"));
  EXPECT_THAT(error(R"({"zero_stage": null})", 2), HasSubstr("key 'zero_stage': expected an integer, got null"));
  EXPECT_THAT(error(R"({"zero_stage": 99999999999999999999})", 2), HasSubstr("expected an integer, got 99999999999999999999"));
  EXPECT_THAT(error(R"({"bucket_cap_mb": "25"})", 2), HasSubstr("key 'bucket_cap_mb': expected a number, got a string"));
  EXPECT_THAT(error(R"({"communicator": ["mpi"]})", 2), HasSubstr("key 'communicator': expected a string, got an array"));
}

TEST_F(ParallelPlanTest, JsonSyntaxAndTopLevel) {
  EXPECT_THAT(error(R"({"ddp": })", 2), HasSubstr("--config: invalid JSON: "));
  EXPECT_THAT(error(R"({"ddp": true,})", 2), HasSubstr("--config: invalid JSON: "));
  EXPECT_THAT(error(R"({"ddp": true, "ddp": false})", 2), HasSubstr("--config: invalid JSON: "));
  std::string path = writeFile("bad.json", "{\"ddp\" true}");
  EXPECT_THAT(error(path, 2), HasSubstr("--config: " + path + ": invalid JSON: expected ':'"));
  path = writeFile("array.json", "[1]");
  EXPECT_EQ(error(path, 2), "--config: " + path + ": expected a JSON object at the top level, got an array");
  path = writeFile("string.json", "\"auto\"");
  EXPECT_THAT(error(path, 2), HasSubstr("got a string"));
}

TEST_F(ParallelPlanTest, FileAndInline) {
  std::string json = R"({"hybrid_shard_degree": 2, "zero_stage": 2, "bucket_cap_mb": 10,
                         "communicator": "mpi"})";
  std::string path = writeFile("hybrid.json", json);
  EXPECT_EQ(ok(path, 8).describe(), ok(json, 8).describe());
  EXPECT_EQ(ok(path, 8).describe(),
            "ddp zero=2 shard_degree=2 replicas=4 bucket_cap_mb=10 communicator=mpi");
  // Errors about a file name it.
  std::string missing = dir + "/missing.json";
  std::string m = error(missing, 2);
  EXPECT_THAT(m, HasSubstr("--config: " + missing + ": cannot open"));
  EXPECT_THAT(error(dir, 2), HasSubstr("--config: " + dir + ": not a regular file"));
  path = writeFile("divides.json", R"({"sharded_data_parallel_degree": 3})");
  EXPECT_THAT(error(path, 8), HasSubstr("--config: " + path + ": key 'sharded_data_parallel_degree'"));
}

TEST_F(ParallelPlanTest, Describe) {
  EXPECT_EQ(ok(R"({"sharded_data_parallel_degree": 2})", 4).describe(),
            "ddp zero=3 shard_degree=2 replicas=2 bucket_cap_mb=25 communicator=auto");
  EXPECT_EQ(ok(R"({"shard_optimizer_state": true, "bucket_cap_mb": 2.5, "communicator": "nccl"})", 8)
                .describe(),
            "ddp zero=1 shard_degree=8 replicas=1 bucket_cap_mb=2.5 communicator=nccl");
  EXPECT_EQ(ok("auto", 1).describe(),
            "ddp zero=0 shard_degree=1 replicas=1 bucket_cap_mb=25 communicator=auto");
}

} // namespace
