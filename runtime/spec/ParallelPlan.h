//===- ParallelPlan.h - how a training step is split over ranks ------------===//
//
// A ParallelPlan is data (DESIGN.md, "Parallel plans"): the data, tensor and
// pipeline degrees, the ZeRO stage and its shard degree, sequence
// parallelism, microbatches, the pipeline schedule and virtual stages,
// activation offloading, and the auto-partitioner's objective. It is read from
// `trc-run --config`, written into checkpoints (describe()) and, later,
// produced by the auto-partitioner.
//
// parseParallelPlan reads inline JSON (first non-space character '{'), the
// word "auto", or the path of a JSON file. Key names are SageMaker model
// parallelism's where it has one (ddp, shard_optimizer_state,
// sharded_data_parallel_degree, hybrid_shard_degree, tensor_parallel_degree,
// pipeline_parallel_degree with `partitions` as an alias, microbatches,
// pipeline: simple|interleaved, active_microbatches, offload_activations,
// activation_loading_horizon, auto_partition, optimize, memory_weight),
// PyTorch DDP's bucket_cap_mb, and ours (zero_stage, communicator,
// sequence_parallel, pipeline_schedule, virtual_stages, recompute).
//
// Preconditions: worldSize is the number of ranks of the run (>= 1; an
// error otherwise). The result is validated against it: tensor x pipeline
// degrees divide it, shard degrees divide the data-parallel degree, "single"
// needs one rank, every rank group trains one model. Contradictory keys are
// errors naming both; nothing is silently overridden. Every error message
// starts with "--config: ", then the file's path (when the spec is a file),
// then the offending key.
//
// Which plans a trainer can run is the trainer's business (unsupported()):
// parsing accepts every well-formed plan.
//
#ifndef TRC_RUNTIME_TRAIN_PARALLELPLAN_H
#define TRC_RUNTIME_TRAIN_PARALLELPLAN_H

#include "runtime/support/Status.h"

#include <string>

namespace trc::rt {

struct ParallelPlan {
  // Data parallelism and ZeRO.
  bool ddp = true;           // data parallelism over the data-parallel ranks
  int zeroStage = 0;         // 0 none, 1 optimizer state, 2 + gradients, 3 + parameters
  // Ranks one sharded tensor spans (a divisor of the world size): the degree
  // key when given, else the world size when zeroStage >= 1, else 1.
  int shardDegree = 1;
  double bucketCapMb = 25.0; // gradient all-reduce bucket size in MiB (> 0)
  std::string communicator = "auto"; // auto | mpi | nccl | single

  // Model parallelism: world = pipeline x data x context x tensor.
  int tensorDegree = 1;
  bool sequenceParallel = false;     // needs tensorDegree > 1
  // Context parallelism: each row's sequence split over this many ranks
  // (attention gathers its keys and values over them: cp_comm_type
  // all_gather).
  int contextDegree = 1;
  std::string cpCommType = "all_gather";
  // Each sequence split head-tail (rank r holds chunks r and 2C-1-r), so
  // causal attention's work is equal on every rank; the default with p2p.
  bool cpLoadBalance = false;
  int pipelineDegree = 1;
  int microbatches = 1;              // per optimizer step, per data-parallel rank
  int activeMicrobatches = 0;        // in flight at once; 0: the schedule's own
  std::string pipelineSchedule = "1f1b"; // gpipe | 1f1b | interleaved_1f1b | zb_h1
  int virtualStages = 1;             // chunks per pipeline rank (interleaved_1f1b)

  // Memory: activations recomputed in the backward (none | selective: the
  // attention core | full: each layer from its input), and kept activations
  // copied to host memory, fetched back `horizon` layers ahead of their
  // backward use.
  std::string recompute = "none";
  bool offloadActivations = false;
  int activationLoadingHorizon = 4;

  // The auto-partitioner: speed or memory, memory_weight in [0, 1].
  bool autoPartition = false;
  std::string optimize = "speed";
  double memoryWeight = 0.8;

  int worldSize = 1;         // what the configuration was validated against

  // Ranks that each hold a whole model replica's share of the batch.
  int dataDegree() const { return worldSize / (tensorDegree * contextDegree * pipelineDegree); }
  // Ranks holding whole parameters alike, which ZeRO shards over: the data
  // ranks and, with context parallelism, the context ranks of each (they
  // split positions, not parameters).
  int shardSpan() const { return dataDegree() * contextDegree; }
  // Ranks holding the same shard: shardSpan / shardDegree.
  int replicas() const { return shardSpan() / shardDegree; }
  // Whether anything beyond data parallelism and ZeRO is asked for.
  bool modelParallel() const {
    return tensorDegree > 1 || contextDegree > 1 || pipelineDegree > 1;
  }
  // One line for logs and checkpoints' config, e.g.
  // "ddp zero=3 shard_degree=2 replicas=2 bucket_cap_mb=25 communicator=auto"
  // (model-parallel settings follow when they differ from the defaults).
  std::string describe() const;
};

/// The plan `spec` describes: inline JSON, "auto" or a file path (see
/// above).
rt::StatusOr<ParallelPlan> parseParallelPlan(const std::string &spec, int worldSize);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_PARALLELPLAN_H
