//===- TrcSharding.td - how a value is split over the device grid -*- tablegen -*-===//
//
// The one attribute kind for sharding (DESIGN.md, "Parallel plans"): for
// each dim of a tensor, the grid axis it is split over (or none), and
// whether the value is a pending partial result over an axis. MLIR's
// `shard` dialect names these `split_axes` and (formerly) `partial`; trc
// keeps its own attribute because it also needs block-split dims and
// partial sums, which the shard dialect dropped (research/parallelism.md).
//
// A block-split dim (`3 x {tensor}`) is BLOCKS equal contiguous blocks,
// each cut into one chunk per rank of the axis: rank r holds chunk r of
// every block. GPT-2's fused QKV projection is the case in point: its
// output dim is [q | k | v], and splitting the heads gives each rank its
// heads' q, k and v.
//
// The grid is the module attribute `trc.grid`, a dictionary of axis sizes
// (`{tensor = 2 : i64}`); data parallelism is the separate trc-data-parallel
// pass, so only the tensor axis appears in shardings today.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_SHARDING_TD
#define TRC_SHARDING_TD

include "TrcBase.td"
include "TrcCollectives.td"

def Trc_ShardingAttr : AttrDef<Trc_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "per-dim split axes (with blocks) and a pending partial result";
  let description = [{
    Written (with no space needed after `[`):
    `#trc.sharding< [ {}, {}, {tensor} ] >` for a column-parallel activation,
    `#trc.sharding< [ 3 x {tensor}, {} ] >` for GPT-2's c_attn weight split by
    heads, `#trc.sharding< [ {}, {}, {} ], partial = sum {tensor} >` for a
    row-parallel product before its all-reduce.
    `axes[d]` is the axis dim d is split over (an empty string: not split),
    `blocks[d]` its block count (1 unless block-split), `mirrored[d]` whether
    its odd blocks are handed out in reverse rank order (`2 x mirrored
    {context}`: context parallelism's head-tail layout, where rank r holds
    chunks r and 2C-1-r of the sequence so causal attention's work is equal
    on every rank).
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::StringAttr">:$axes,
    ArrayRefParameter<"int64_t">:$blocks,
    ArrayRefParameter<"bool">:$mirrored,
    "::mlir::StringAttr":$partialAxis,
    "::trc::CollectiveReduction":$partialKind);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // TRC_SHARDING_TD
