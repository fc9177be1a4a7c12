//===- ParallelConfig.h - trc-run --config: how training is parallelized -*- C++ -*-===//
//
// parseParallelConfig reads the value of `trc-run --config`: inline JSON
// (first non-space character '{'), the word "auto", or the path of a JSON
// file. The keys are SageMaker model parallelism's where it has one (ddp,
// shard_optimizer_state, sharded_data_parallel_degree, hybrid_shard_degree),
// PyTorch DDP's bucket_cap_mb, and ours (zero_stage, communicator).
//
// Preconditions: worldSize is the number of ranks of the run (>= 1; an
// error otherwise). The result is validated against it: shard degrees
// divide it, "single" needs one rank, every rank group trains one model.
// Contradictory keys are errors naming both; nothing is silently overridden.
// Every error message starts with "--config: ", then the file's path (when
// the spec is a file), then the offending key. On error `out` is untouched.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TOOLS_TRC_RUN_PARALLELCONFIG_H
#define TRC_TOOLS_TRC_RUN_PARALLELCONFIG_H

#include "runtime/support/Status.h"

#include <string>

namespace trc {

struct ParallelConfig {
  bool ddp = true;           // data parallelism over the world
  int zeroStage = 0;         // 0 none, 1 optimizer state, 2 + gradients, 3 + parameters
  // Ranks one sharded tensor spans (a divisor of the world size): the degree
  // key when given, else the world size when zeroStage >= 1, else 1.
  int shardDegree = 1;
  double bucketCapMb = 25.0; // gradient all-reduce bucket size in MiB (> 0)
  std::string communicator = "auto"; // auto | mpi | nccl | single
  int worldSize = 1;         // what the configuration was validated against

  // Ranks holding the same shard: worldSize / shardDegree.
  int replicas() const { return worldSize / shardDegree; }
  // One line for logs and checkpoints' config, e.g.
  // "ddp zero=3 shard_degree=2 replicas=2 bucket_cap_mb=25 communicator=auto".
  std::string describe() const;
};

// `spec` is inline JSON, "auto" or a file path (see above).
rt::Status parseParallelConfig(const std::string &spec, int worldSize,
                               ParallelConfig &out);

} // namespace trc

#endif // TRC_TOOLS_TRC_RUN_PARALLELCONFIG_H
