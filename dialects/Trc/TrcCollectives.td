//===- TrcCollectives.td - collective communication in trc -*- tablegen -*-===//
//
// Collectives over the ranks of a process group, for the sharding passes
// (trc-data-parallel) to insert and trc-collectives-to-runtime-call to lower
// to the runtime's communicators (docs/ARTIFACT.md, "Collectives"). Every
// rank runs the same program, so every rank issues the same collectives in
// the same order. They have side effects: never merged, dropped or moved
// across each other.
//
// Groups: `world` (every rank of the data axis: with tensor parallelism,
// the ranks holding the same tensor-parallel part), `shard` (the ranks one
// sharded tensor is split over: consecutive blocks of `shard degree` data
// ranks), `replica` (the ranks holding the same shard, one per shard
// group), `tensor` (the ranks of one tensor-parallel group: consecutive
// blocks of the tensor degree; trc-partition's collectives).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_COLLECTIVES_TD
#define TRC_COLLECTIVES_TD

include "TrcBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Trc_CollectiveGroup : I32EnumAttr<"CollectiveGroup", "a process group", [
  I32EnumAttrCase<"World", 0, "world">, I32EnumAttrCase<"Shard", 1, "shard">,
  I32EnumAttrCase<"Replica", 2, "replica">, I32EnumAttrCase<"Tensor", 3, "tensor">,
  I32EnumAttrCase<"Pipeline", 4, "pipeline">,
  I32EnumAttrCase<"Context", 5, "context">,
  I32EnumAttrCase<"DataContext", 6, "data_context">]> {
  let cppNamespace = "::trc";
  let genSpecializedAttr = 0;
}
def Trc_CollectiveGroupAttr : EnumAttr<Trc_Dialect, Trc_CollectiveGroup, "group">;

def Trc_CollectiveReduction : I32EnumAttr<"CollectiveReduction",
    "how a collective combines the ranks' values", [
  I32EnumAttrCase<"Sum", 0, "sum">, I32EnumAttrCase<"Avg", 1, "avg">,
  I32EnumAttrCase<"Max", 2, "max">, I32EnumAttrCase<"Min", 3, "min">]> {
  let cppNamespace = "::trc";
  let genSpecializedAttr = 0;
}
def Trc_CollectiveReductionAttr
    : EnumAttr<Trc_Dialect, Trc_CollectiveReduction, "reduction">;

// Side effects keep collectives in program order on every rank. They are
// inserted after autodiff: no VJP rules.
class Trc_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Trc_Op<mnemonic, !listconcat(traits, [MemoryEffects<[MemRead, MemWrite]>,
                                            Trc_NoVjp, Trc_NoSharding])>;

def Trc_AllReduceOp : Trc_CollectiveOp<"all_reduce", [SameOperandsAndResultType]> {
  let summary = "element-wise reduction over the ranks of a group";
  let description = [{
    ```mlir
    %g = trc.all_reduce %x avg group = world : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Trc_FloatTensor:$operand, Trc_CollectiveReductionAttr:$reduction,
                       Trc_CollectiveGroupAttr:$group);
  let results = (outs Trc_FloatTensor:$result);
  let assemblyFormat = "$operand $reduction `group` `=` $group attr-dict `:` type($result)";
}

def Trc_ReduceScatterOp : Trc_CollectiveOp<"reduce_scatter"> {
  let summary = "reduction over a group; rank i keeps the i-th of `shards` chunks";
  let description = [{
    The operand is 1-D with a multiple of `shards` elements (the group's
    size); the result is this rank's chunk of the reduced vector.

    ```mlir
    %s = trc.reduce_scatter %x avg group = shard shards = 2 : (tensor<8xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Trc_FloatTensor:$operand, Trc_CollectiveReductionAttr:$reduction,
                       Trc_CollectiveGroupAttr:$group, I64Attr:$shards);
  let results = (outs Trc_FloatTensor:$result);
  let assemblyFormat = [{
    $operand $reduction `group` `=` $group `shards` `=` $shards attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Trc_AllGatherOp : Trc_CollectiveOp<"all_gather"> {
  let summary = "concatenation of every rank's 1-D chunk, in rank order";
  let description = [{
    ```mlir
    %x = trc.all_gather %s group = shard shards = 2 : (tensor<4xf32>) -> tensor<8xf32>
    ```
  }];
  let arguments = (ins Trc_Tensor:$operand, Trc_CollectiveGroupAttr:$group,
                       I64Attr:$shards);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $operand `group` `=` $group `shards` `=` $shards attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Trc_BroadcastFromOp : Trc_CollectiveOp<"broadcast_from", [SameOperandsAndResultType]> {
  let summary = "every rank of a group receives rank `root`'s value";
  let description = [{
    ```mlir
    %w = trc.broadcast_from %x root = 0 group = world : tensor<16xf32>
    ```
  }];
  let arguments = (ins Trc_Tensor:$operand, I64Attr:$root, Trc_CollectiveGroupAttr:$group);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = "$operand `root` `=` $root `group` `=` $group attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Trc_ShardSliceOp : Trc_CollectiveOp<"shard_slice"> {
  let summary = "this rank's chunk of a 1-D tensor split over a group";
  let description = [{
    No communication: rank i of the group (of `shards` ranks) takes elements
    [i * n / shards, (i + 1) * n / shards). It reads the rank, so it is kept
    in order with the collectives.

    ```mlir
    %s = trc.shard_slice %x group = shard shards = 2 : (tensor<8xf32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Trc_Tensor:$operand, Trc_CollectiveGroupAttr:$group, I64Attr:$shards);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $operand `group` `=` $group `shards` `=` $shards attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Trc_CollectivePermuteOp : Trc_CollectiveOp<"collective_permute",
                                               [SameOperandsAndResultType]> {
  let summary = "one step of a ring: each rank's value moves `shift` ranks on";
  let description = [{
    Rank i of the group (of `shards` ranks) sends its operand to rank
    (i + shift) mod shards and receives rank (i - shift) mod shards's as its
    result. Any shape: the buffer moves whole. Context parallelism's ring
    attention (trc-ring-attention) passes keys, values and their gradients so.

    ```mlir
    %n = trc.collective_permute %k shift = 1 group = context shards = 2 : tensor<2x4x8x16xf32>
    ```
  }];
  let arguments = (ins Trc_Tensor:$operand, I64Attr:$shift, Trc_CollectiveGroupAttr:$group,
                       I64Attr:$shards);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = [{
    $operand `shift` `=` $shift `group` `=` $group `shards` `=` $shards attr-dict
    `:` type($result)
  }];
  let hasVerifier = 1;
}

#endif // TRC_COLLECTIVES_TD
