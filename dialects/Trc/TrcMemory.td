//===- TrcMemory.td - ops that shape the step's memory -----*- tablegen -*-===//
//
// Ops the memory passes insert into a training step: trc.optimization_barrier
// (trc-recompute) keeps recomputed work apart from the forward it copies.
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

#endif // TRC_MEMORY_TD
