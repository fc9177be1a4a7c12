//===- Passes.td - trc passes: Memory ----------------------*- tablegen -*-===//
//
// The static memory plan and the buffer rewrites around it.
// Implemented in passes/Memory/<Name>.cpp; included by passes/Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_MEMORY_PASSES_TD
#define TRC_PASSES_MEMORY_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistinctResults : Pass<"trc-distinct-results", "mlir::func::FuncOp"> {
  let summary = "copies a buffer a function returns more than once";
  let description = [{
    After one-shot-bufferize, before buffer-results-to-out-params (which
    cannot give two out-parameters one buffer): every return operand that
    an earlier operand already returns becomes a new buffer holding a copy,
    so each result slot is written. (A pipeline stage sends a value and
    also keeps it for its backward: two slots, one value.)

    ```mlir
    return %0, %0 : memref<4xf32>, memref<4xf32>
    // becomes
    %1 = memref.alloc() : memref<4xf32>
    memref.copy %0, %1 : memref<4xf32> to memref<4xf32>
    return %0, %1 : memref<4xf32>, memref<4xf32>
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def PlanMemory : Pass<"trc-plan-memory", "mlir::ModuleOp"> {
  let summary = "places every temporary buffer of @main in one arena";
  let description = [{
    Computes the memory plan of `@main` and rewrites each planned
    `memref.alloc` into `memref.view` of a new last argument, the arena
    (`memref<Nxi8>`, attribute `trc.arena`), at its planned offset. The
    module gets `trc.arena_bytes`, `trc.arena_lower_bound_bytes` and
    `trc.arena_no_reuse_bytes`.

    ```mlir
    %0 = memref.alloc() : memref<4x4xf32>
    // becomes, with %arena: memref<128xi8> appended to @main's arguments
    %c0 = arith.constant 0 : index
    %0 = memref.view %arena[%c0][] : memref<128xi8> to memref<4x4xf32>
    ```
    Precondition: bufferized IR whose temporaries are static memref.alloc
    ops at the top level of @main, never deallocated (the plan owns them).
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}

//===----------------------------------------------------------------------===//
// CUDA backend (lib/Pipelines/CudaPipeline.cpp)
//===----------------------------------------------------------------------===//

def ForwardFills : Pass<"trc-forward-fills", "mlir::func::FuncOp"> {
  let summary = "turns copies out of a constant-filled temporary into fills";
  let description = [{
    Bufferization materializes a splat that several ops start from (the
    zeros of every reduction and matrix product, CSE'd into one tensor) as
    one filled temporary copied into each user's buffer. When a temporary
    (a `memref.view` of the arena) is filled with a constant, the copies
    out of it (`memref.copy`, `linalg.copy`) that come before any other use
    become fills of their destinations, and the temporary's fill is erased
    or, when the temporary is used otherwise afterwards, moved right before
    that use. No buffer is read, and the fills can fold into the matrix
    product (trc-matmul-to-runtime-call) or reduction (trc-linalg-to-gpu)
    right after them. Sound after trc-plan-memory: no other buffer overlaps
    a temporary while it is live.

    ```mlir
    linalg.fill ins(%zero : f32) outs(%tmp : memref<8xf32>)
    linalg.copy ins(%tmp : memref<8xf32>) outs(%a : memref<8xf32>)
    linalg.copy ins(%tmp : memref<8xf32>) outs(%b : memref<8xf32>)
    // becomes
    linalg.fill ins(%zero : f32) outs(%a : memref<8xf32>)
    linalg.fill ins(%zero : f32) outs(%b : memref<8xf32>)
    ```
  }];
}

#endif // TRC_PASSES_MEMORY_PASSES_TD
