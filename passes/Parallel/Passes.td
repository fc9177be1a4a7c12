//===- Passes.td - trc passes: Parallel --------------------*- tablegen -*-===//
//
// Distribution over ranks: data parallelism and ZeRO.
// Implemented in passes/Parallel/<Name>.cpp; included by passes/Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_PARALLEL_PASSES_TD
#define TRC_PASSES_PARALLEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def DataParallel : Pass<"trc-data-parallel", "mlir::ModuleOp"> {
  let summary = "averages @main_grad's loss and gradients over the ranks (DDP, ZeRO 1-3)";
  let description = [{
    Inserts the collectives of data parallelism into @main_grad, before
    trc-build-train-step: gradients averaged in buckets of at most
    `bucket-mb` MiB, each right after its last gradient is computed; the
    loss averaged over the world. `zero-stage` 1 leaves each rank its shard
    of every gradient (optimizer state sharding), 2 reduce-scatters them
    (gradient sharding), 3 also takes trainable parameters as shards and
    all-gathers them before each use (FSDP). Shards span `shard-degree`
    consecutive ranks; `hybrid` adds an all-reduce over the replica groups
    (shard within groups, replicate across). Shards are 1-D, zero-padded
    (include/trc/Training/Sharding.h) and marked `trc.shard_degree` /
    `trc.shard_of`; trc-build-train-step keeps optimizer state in the same
    shape.
  }];
  let options = [
    Option<"zeroStage", "zero-stage", "int64_t", "0",
           "0: replicate everything; 1: shard optimizer state; 2: + gradients; "
           "3: + parameters">,
    Option<"shardDegree", "shard-degree", "int64_t", "1",
           "ranks a sharded tensor is split over (zero-stage >= 1)">,
    Option<"bucketMb", "bucket-mb", "double", "25.0",
           "largest gradient bucket, MiB">,
    Option<"hybrid", "hybrid", "bool", "false",
           "also average over the replica groups (shard-degree < world size)">,
  ];
  let dependentDialects = ["trc::TrcDialect", "mlir::func::FuncDialect"];
}

#endif // TRC_PASSES_PARALLEL_PASSES_TD
