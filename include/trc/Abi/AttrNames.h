//===- AttrNames.h - the trc.* attribute names, spelled once -----*- C++ -*-===//
//
// Every discardable `trc.*` attribute the importer and the passes attach to
// modules, functions, their arguments and results, and ops, declared once
// (like Shardy's constants.h): the passes that write and read them, the
// artifact writer, the tools, and the trc dialect's verifier
// (dialects/Trc/TrcAttrVerify.cpp, which checks each one's kind and rejects
// any other `trc.` name) all use these constants. A few other names that
// are spelled `trc.*` but are not attributes (an ONNX metadata key, op names
// matched by string) close the file. Slot names the runtime feeds
// ("trc.lr", ...) live in SlotNames.h; trc.lr and trc.step double as unit
// argument attributes there. No dependencies: plain constants, so the
// MLIR-free runtime may include it too.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ABI_ATTRNAMES_H
#define TRC_ABI_ATTRNAMES_H

namespace trc::abi {

//===-- Slot names: a function's arguments and results ---------------------===//

// Argument (string): the input slot the argument is fed from.
inline constexpr const char kInputAttr[] = "trc.input";
// Argument (string): the trc.parameter symbol the argument holds.
inline constexpr const char kParamAttr[] = "trc.param";
// Argument (string): an optimizer-state slot of the training step
// ("adam.m:<param>", "grad_accum:<param>", ...).
inline constexpr const char kStateAttr[] = "trc.state";
// Argument (unit): the memory-planned step's arena (trc-plan-memory).
inline constexpr const char kArenaAttr[] = "trc.arena";
// The next four are result attributes, found on arguments once the CPU or
// CUDA lowering has made the results out-parameters.
// Result (string): the output slot the result is returned in.
inline constexpr const char kOutputAttr[] = "trc.output";
// Result (string): the new value of the argument of that slot name.
inline constexpr const char kUpdateAttr[] = "trc.update";
// Result (string): trc-autodiff's gradient of that parameter.
inline constexpr const char kGradOfAttr[] = "trc.grad_of";
// Result (unit): a pipeline stage's gradient left out of the global norm
// (another stage counts it: tied parameters).
inline constexpr const char kNormExcludedAttr[] = "trc.norm_excluded";

//===-- Data and tensor parallelism ----------------------------------------===//

// Argument or result (i64): a ZeRO shard of this many ranks' shards.
inline constexpr const char kShardDegreeAttr[] = "trc.shard_degree";
// Argument or result (dense i64 array): the full tensor's shape of a shard.
inline constexpr const char kShardOfAttr[] = "trc.shard_of";
// Module (dictionary of i64 axis sizes): the device grid.
inline constexpr const char kGridAttr[] = "trc.grid";
// Argument (#trc.sharding) or op (array of #trc.sharding, one per result).
inline constexpr const char kShardingAttr[] = "trc.sharding";
// Argument (dense i64 array): a partitioned parameter's [dim, blocks, degree,
// mirrored] over the tensor axis, or a graph input's over the context axis
// (its sequence), and the logical tensor's shape (the artifact's `split`
// records).
inline constexpr const char kSplitAttr[] = "trc.split";
inline constexpr const char kSplitOfAttr[] = "trc.split_of";
// Op (i64) on trc.attention / trc.attention_grad: its mask is proven to hide
// every key in a later chunk of this many positions than the query's
// (trc-shard-context-parallel with balance; trc-ring-attention then skips
// those blocks of scores).
inline constexpr const char kCausalChunkAttr[] = "trc.causal_chunk";

//===-- Pipeline parallelism -----------------------------------------------===//

// Op, argument or result (i64): the pipeline stage it belongs to.
inline constexpr const char kStageAttr[] = "trc.stage";
// Op (unit): backward work of a staged op (trc-autodiff, trc-recompute).
inline constexpr const char kBackwardAttr[] = "trc.backward";
// Module (dictionary): {stages = S, virtual = V} as trc-pipeline-stages chose.
inline constexpr const char kPipelineAttr[] = "trc.pipeline";
// Module (array of dictionaries): trc-pipeline-split's stage-to-stage transfers.
inline constexpr const char kPipelineTransfersAttr[] = "trc.pipeline_transfers";
// Function (i64): the stage whose gradients @stage<N>_grads returns.
inline constexpr const char kPipelineGradsAttr[] = "trc.pipeline_grads";

// Function (unit): a lowering found an op this backend does not cover (an
// unsigned element type...); compileToArtifact reports it (CompileReport::
// unsupported) after the failure.
inline constexpr const char kUnsupportedAttr[] = "trc.unsupported";

//===-- Memory: arenas, recomputation, offloading --------------------------===//

// Module (i64): trc-plan-memory's arena size, its lower bound, the size
// without reuse, and the host arena's size (only when there is one).
inline constexpr const char kArenaBytesAttr[] = "trc.arena_bytes";
inline constexpr const char kArenaLowerBoundBytesAttr[] = "trc.arena_lower_bound_bytes";
inline constexpr const char kArenaNoReuseBytesAttr[] = "trc.arena_no_reuse_bytes";
inline constexpr const char kHostArenaBytesAttr[] = "trc.host_arena_bytes";
// Op (unit): a memref.alloc that belongs to the host arena.
inline constexpr const char kHostPoolAttr[] = "trc.host_pool";
// Op (i64): the recomputation group of an op trc-recompute made.
inline constexpr const char kRecomputeAttr[] = "trc.recompute";
// Module (dictionary): trc-recompute's decisions.
inline constexpr const char kRecomputePlanAttr[] = "trc.recompute_plan";
// Op (unit): recomputed by a composite's decomposition (not a kept value).
inline constexpr const char kRecomputedAttr[] = "trc.recomputed";
// scf.for in a kernel (i64): its mean trip count over the threads, where a
// bound depends on the thread (the attention kernels' causal loops), for
// trc-print-kernel-costs.
inline constexpr const char kMeanTripsAttr[] = "trc.mean_trips";
// bufferization.to_buffer (unit): the view of a started collective's operand
// its finish takes (trc-collectives-to-runtime-call{overlap}); set apart so
// that CSE does not merge it into the start's view, which would hide the
// read at the finish from one-shot bufferization.
inline constexpr const char kFinishViewAttr[] = "trc.finish_view";
// Module (dictionary): trc-offload-activations' decisions.
inline constexpr const char kOffloadPlanAttr[] = "trc.offload_plan";

//===-- Fusion, code generation, profiling ---------------------------------===//

// Function (dense i64 array): trc-fuse-ops' record of the unfused cost.
inline constexpr const char kUnfusedCostAttr[] = "trc.unfused_cost";
// Module (array of strings): the CUDA kernels the program launches.
inline constexpr const char kCudaKernelsAttr[] = "trc.cuda_kernels";
// Module (array of [name, node, function]; index = span id): the per-op
// spans of trc-profile-calls (ProfileSpans.h).
inline constexpr const char kProfileSpansAttr[] = "trc.profile_spans";
// Module (array of [op, node, phase, operands]; index = site id): the values
// trc-detect-anomaly checks (AnomalySites.h).
inline constexpr const char kAnomalySitesAttr[] = "trc.anomaly_sites";

//===-- The importer --------------------------------------------------------===//

// Module (i64): the ONNX opset the model was imported at.
inline constexpr const char kOpsetAttr[] = "trc.opset";
// Module (string): the ONNX producer's name and version.
inline constexpr const char kProducerAttr[] = "trc.producer";

//===-- Not attributes ------------------------------------------------------===//

// ONNX metadata_props key: comma-separated initializers that are frozen
// (non-trainable buffers a producer exports as initializers).
inline constexpr const char kFrozenMetadataKey[] = "trc.frozen";
// ONNX metadata_props keys the export helper (scripts/export_torch.py)
// writes for --save-model: the prefix its wrappers put before the model's
// own state-dict names ("model."), and a Hugging Face model's config.json.
inline constexpr const char kStateDictPrefixMetadataKey[] = "trc.state_dict_prefix";
inline constexpr const char kHfConfigMetadataKey[] = "trc.hf_config";
// Op names matched by string where the op classes are not included.
inline constexpr const char kConstantOpName[] = "trc.constant";
inline constexpr const char kReshapeOpName[] = "trc.reshape";

} // namespace trc::abi

#endif // TRC_ABI_ATTRNAMES_H
