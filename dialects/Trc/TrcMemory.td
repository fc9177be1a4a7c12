//===- TrcMemory.td - ops that shape the step's memory -----*- tablegen -*-===//
//
// Ops the memory passes insert into a training step: trc.optimization_barrier
// (trc-recompute) keeps recomputed work apart from the forward it copies;
// trc.offload, trc.prefetch and trc.copy_wait (trc-offload-activations)
// move a kept activation to host memory and back, asynchronously. Their
// verifiers live in TrcMemory.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_MEMORY_TD
#define TRC_MEMORY_TD

include "TrcBase.td"

// No Pure trait on purpose: an op with unknown effects is never merged by
// CSE, moved or erased by canonicalization, which is the whole point.
def Trc_OptimizationBarrierOp : Trc_Op<"optimization_barrier",
    [SameOperandsAndResultType]> {
  let summary = "returns its operand; no pass looks through it";
  let description = [{
    trc-recompute reads each value a recomputed region starts from through a
    barrier placed where the backward needs the region. The recomputed ops
    then read a different SSA value than the forward ops they copy, so CSE
    cannot merge the copies back into the forward (which would keep the
    activations alive until the backward, undoing the recomputation), and
    nothing hoists them above the barrier. Bufferization makes the result
    the operand's buffer: the barrier costs nothing at run time.

    ```mlir
    %x1 = trc.optimization_barrier %x : tensor<4x64x256xf32>
    ```
  }];
  let arguments = (ins Trc_Tensor:$operand);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

// Offloading. A copy starts (trc.offload: device to host; trc.prefetch:
// host to device) and is waited for (trc.copy_wait) where its result is
// needed; the copy's source stays unchanged until the wait, which names it.
// No Pure trait: the three keep their places (CSE, canonicalization and
// hoisting leave ops with unknown effects alone). They are inserted after
// trc-autodiff (NoVjp) and before tensor parallelism (elementwise sharding
// rules, lib/Parallel/ShardingRules.cpp); trc-offload-to-runtime-call
// lowers them to the runtime's copy engine before bufferization.

def Trc_OffloadOp : Trc_Op<"offload", [SameOperandsAndResultType, Trc_NoVjp]> {
  let summary = "starts copying a tensor to host memory";
  let description = [{
    Starts an asynchronous copy of the operand (device memory) into the
    host pool. The result is the host copy while the copy is in flight: its
    one use is the trc.copy_wait that ends the copy, whose result only
    trc.prefetch (and that prefetch's trc.copy_wait) may read.

    ```mlir
    %h = trc.offload %x : tensor<4x1024x768xf32>
    %hx = trc.copy_wait %h from %x : tensor<4x1024x768xf32>  // %x's buffer is free
    ```
  }];
  let arguments = (ins Trc_Tensor:$operand);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Trc_PrefetchOp : Trc_Op<"prefetch", [SameOperandsAndResultType, Trc_NoVjp]> {
  let summary = "starts copying an offloaded tensor back to the device";
  let description = [{
    Starts an asynchronous copy of a host copy (the trc.copy_wait of a
    trc.offload) into a new device buffer. The result is in flight: its one
    use is the trc.copy_wait that ends the copy, whose result is the
    offloaded tensor's value on the device again.

    ```mlir
    %p = trc.prefetch %hx : tensor<4x1024x768xf32>
    %y = trc.copy_wait %p from %hx : tensor<4x1024x768xf32>  // reads as %x
    ```
  }];
  let arguments = (ins Trc_Tensor:$operand);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Trc_CopyWaitOp : Trc_Op<"copy_wait", [SameOperandsAndResultType, Trc_NoVjp]> {
  let summary = "waits for an offload or prefetch to finish";
  let description = [{
    Ends the copy that `copy` (a trc.offload or trc.prefetch) started from
    `source` (that op's operand): later work may use the result, which
    holds `source`'s value, and may reuse `source`'s buffer. The wait of an
    offload is the host copy, read only by trc.prefetch and the prefetch's
    wait; the wait of a prefetch is an ordinary tensor.

    ```mlir
    %hx = trc.copy_wait %h from %x : tensor<4x1024x768xf32>
    ```
  }];
  let arguments = (ins Trc_Tensor:$copy, Trc_Tensor:$source);
  let results = (outs Trc_Tensor:$result);
  let assemblyFormat = "$copy `from` $source attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // TRC_MEMORY_TD
