//===- Passes.td - trc passes: Analysis --------------------*- tablegen -*-===//
//
// Printers of analyses for lit tests and users (test-trc-print-*) and the
// fusion summary; the IR is unchanged.
// Implemented in passes/Analysis/<Name>.cpp; generated into
// AnalysisPasses.h.inc (registerTrcAnalysisPasses, include/trc/AnalysisPasses.h),
// a library of its own (TrcAnalysisPasses) that only trc-opt links.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_ANALYSIS_PASSES_TD
#define TRC_PASSES_ANALYSIS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TestPrintOpStats : Pass<"test-trc-print-op-stats", "mlir::ModuleOp"> {
  let summary = "prints op counts and parameter totals of a trc module";
  let description = [{
    A printable summary of an imported model, for lit tests and for users:
    how many of each op, how many parameters (trainable and frozen) and their
    bytes. Printed to stdout, IR unchanged.

    ```
    trc-opt gpt2.onnx --dim batch=8 --test-trc-print-op-stats
    ops: trc.add=12 trc.dot_general=8 ...
    parameters: 28 trainable (102400 elements, 409600 bytes), 0 frozen
    ```
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

def TestPrintSharding : Pass<"test-trc-print-sharding", "mlir::ModuleOp"> {
  let summary = "prints each value's sharding and each collective with its bytes";
  let description = [{
    Per function, in module order (a module pass, so the output of several
    functions does not interleave). Before trc-partition: one line per
    annotated argument and op result with
    its sharding. After: one line per collective with its group and the
    bytes each rank sends into it, then totals per kind. The IR is unchanged.

    ```
    sharding @main_grad
      %arg7 "model.blocks.0.attn.c_attn.weight": [3x tensor, -]
      %23 trc.dot_general: [-, -, 3x tensor]
      collective trc.all_reduce sum tensor: 8192 bytes
      collectives: 2 all_reduce 16384 bytes
    ```
  }];
}

def TestPrintPipelineStages : Pass<"test-trc-print-pipeline-stages", "mlir::ModuleOp"> {
  let summary = "prints each pipeline stage's ops, cost, parameter bytes and sent bytes";
  let description = [{
    After trc-pipeline-stages: one line per stage of @main, e.g.
    `stage 0: ops 41 cost 1.2e+07 layers 2 params 131072 B sends 8192 B`,
    then the largest stage cost over the mean (the balance).
  }];
}

def PrintStageWork : Pass<"trc-print-stage-work", "mlir::ModuleOp"> {
  let summary = "prints each stage's work per phase: products, kernels, collectives";
  let description = [{
    On a staged @main_grad (--trc-training-pipeline with pipeline-stages and
    stop-at-gradients=true): per stage and phase (F forward, B backward for
    inputs, W backward for weights), the matrix products (count and FLOPs),
    the other kernels (count and unfused bytes) and the collectives (count
    and bytes), then the stage's parameter, stash and send bytes; last, the
    ops no stage owns. What the planner prices (trc/Plan/CompiledWork.h).
  }];
}

def TestPrintRecompute : Pass<"test-trc-print-recompute", "mlir::ModuleOp"> {
  let summary = "prints trc-recompute's decisions: per layer, peak and FLOPs";
  let description = [{
    After trc-recompute: the policy, one line per layer (its ops, the
    choice made, the bytes each choice keeps and the FLOPs it redoes),
    the groups and ops cloned, the estimated peak of temporaries before
    and after, and the step's matrix-product FLOPs with the share
    recomputed, e.g.
    `layer 1: ops 38 choice full kept keep 1245184 selective 983040 full 0 B
     redo selective 8.39e+06 full 2.52e+07 FLOPs`.
    The IR is left unchanged.
  }];
}

def TestPrintOffload : Pass<"test-trc-print-offload", "mlir::ModuleOp"> {
  let summary = "prints trc-offload-activations' decisions";
  let description = [{
    After trc-offload-activations: the horizon, the stash and what is
    offloaded (bytes in all and per layer), then one line per offloaded
    value: its layer, type, bytes and defining op, and the positions
    (indices of @main_grad's top-level ops before the rewrite) before
    which its offload, the offload's wait, its prefetch and the prefetch's
    wait (its first backward use) were inserted, e.g.
    `value 0: layer 0 tensor<4x8xf32> 128 B (trc.add at 3): offload 4, wait 9,
     prefetch 21 (backward of layer 1), first use 24`.
    The IR is left unchanged.
  }];
}

def TestPrintPipelineSchedule : Pass<"test-trc-print-pipeline-schedule", "mlir::ModuleOp"> {
  let summary = "prints a pipeline schedule's table, its check and its simulated bubble";
  let description = [{
    The schedule (runtime/train/PipelineSchedule.h) trc-run would run for
    `schedule` over `ranks` x `virtual` stages and `microbatches`: one row
    per (rank, slot, action, microbatch, chunk, stage), each rank's order,
    `check: ok` or the deadlock / missing action, then the bubble simulated
    with backward = 2 x forward (ZB-H1: B = W = forward) against the
    formula, and the peak microbatches in flight per rank. Without
    `ranks`, the module's `trc.pipeline` (trc-pipeline-stages) gives the
    ranks and chunks (with `ranks`, chunks default to 1). The IR is left
    unchanged.
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", "\"1f1b\"",
           "gpipe, 1f1b, interleaved_1f1b or zb_h1">,
    Option<"ranks", "ranks", "int64_t", "0", "pipeline ranks (0: the module's)">,
    Option<"chunks", "virtual", "int64_t", "0", "chunks per rank (0: the module's, or 1)">,
    Option<"microbatches", "microbatches", "int64_t", "4", "microbatches per step">,
    Option<"active", "active-microbatches", "int64_t", "0", "in-flight cap (0: none)">,
  ];
}

def TestPrintMemoryPlan : Pass<"test-trc-print-memory-plan", "mlir::ModuleOp"> {
  let summary = "prints the static memory plan of a bufferized function";
  let description = [{
    Computes `trc::MemoryPlan` (include/trc/Analysis/MemoryPlan.h) and prints
    the arena size against its lower bound and against no reuse, then each
    buffer's offset, size and live range; then, when the function has host
    copies (allocations marked `trc.host_pool`), the host arena's plan the
    same way. The IR is unchanged.

    ```
    memory plan: 3 buffers, arena 128 bytes, lower bound 128 (arena/bound 1.000), ...
      buffer 0: offset 0 size 64 live [0, 2] memref<4x4xf32>
    ```
  }];
}

def PrintFusionSummary : Pass<"trc-print-fusion-summary", "mlir::ModuleOp"> {
  let summary = "prints kernels and device memory bytes before and after trc-fuse";
  let description = [{
    Per function and in total: the number of kernels (every op but
    constants, get_parameter, reshape and calls is one; a trc.fusion is one)
    and the bytes they read and write in device memory (each operand read
    and each result written once; splat constants are immediates), before
    fusion (as trc-fuse recorded it) and now, and the fusions by kind. The
    IR is unchanged.

    ```
    fusion summary (kernels, device memory bytes: before -> after fusion)
    @main: kernels 5 -> 1, bytes 640 -> 192 (30.0%), fusions 1 elementwise, 0 reduction, 0 matmul_epilogue
    total: kernels 5 -> 1, bytes 640 -> 192 (30.0%), fusions 1 elementwise, 0 reduction, 0 matmul_epilogue
    ```
  }];
}

def PrintKernelCosts : Pass<"trc-print-kernel-costs", "mlir::ModuleOp"> {
  let summary = "prints each CUDA kernel's and matrix product's FLOPs and device bytes as JSON";
  let description = [{
    For the CUDA pipeline's IR after trc-linalg-to-gpu (`--trc-cuda-kernels`):
    each `gpu.launch` is one kernel, priced at the bytes of every buffer it
    uses from outside (each read or written once: the fewest bytes it can
    move) and the floating-point operations of its body times the threads of
    its grid (a loop inside with static bounds multiplies them); each call
    of `trc_rt_cublaslt_matmul_<t>` is one matrix product, 2 x batch x m x
    n x k FLOPs, its operands read once (a stride-0 operand once for the
    whole batch) and its f32 result written once. Host loops with static
    bounds multiply what they hold. Identical items are printed once with a
    count, as one JSON object (bench/predict_gpu_step.py prices it on a
    GPU's rates). A product whose sizes are not constants is an error. The
    IR is unchanged.

    ```
    {"kernels": 2, "matmuls": 1, "items": [
      {"kind": "kernel", "count": 2, "threads": 256, "flops": 256, "bytes": 2048},
      {"kind": "matmul", "count": 1, "type": "bf16", "batch": 1, "m": 8, ...}
    ] }
    ```
  }];
}

#endif // TRC_PASSES_ANALYSIS_PASSES_TD
