//===- Passes.td - trc passes: Transforms ------------------*- tablegen -*-===//
//
// Module-level rewrites shared by the pipelines: composites decomposed,
// parameters as arguments, loop nests outlined, duplicates merged.
// Implemented in passes/Transforms/<Name>.cpp; included by passes/Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_TRANSFORMS_PASSES_TD
#define TRC_PASSES_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DecomposeComposites : Pass<"trc-decompose-composites"> {
  let summary = "rewrites composite trc ops into core trc ops";
  let description = [{
    softmax, log_softmax, layer_norm, gelu and cross_entropy become their
    definitions in core ops (reduce, broadcast_in_dim, exp, log, rsqrt, erf,
    tanh, compare, select...), numerically stable (max-subtracted softmax).
    Backends without a fused kernel for a composite lower this form.

    ```mlir
    %y = trc.softmax %x axis = 1 : tensor<4x8xf32>
    // becomes
    %m = trc.reduce max %x dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    %mb = trc.broadcast_in_dim %m, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
    %d = trc.sub %x, %mb : tensor<4x8xf32>
    %e = trc.exp %d : tensor<4x8xf32>
    %s = trc.reduce sum %e dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    %sb = trc.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
    %y = trc.div %e, %sb : tensor<4x8xf32>
    ```
    Dropout is not decomposed here: it needs the step's random state.
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

def ParametersToArguments : Pass<"trc-parameters-to-arguments", "mlir::ModuleOp"> {
  let summary = "turns the parameters @main reads into arguments after its inputs";
  let description = [{
    Each `trc.parameter` that `@main` reads becomes a new argument (in
    declaration order) with attribute `trc.param = "<name>"`; its
    `trc.get_parameter` ops are replaced by the argument. The parameter
    symbols stay (they hold the initial values the artifact writes).

    ```mlir
    %w = trc.get_parameter @w : tensor<4x4xf32>
    // becomes an argument %arg1: tensor<4x4xf32> {trc.param = "w"}
    ```
  }];
}

def HoistParallelLoops : Pass<"trc-hoist-parallel-loops", "mlir::func::FuncOp"> {
  let summary = "moves a parallel loop out of the sequential loops around it, tiled";
  let description = [{
    convert-linalg-to-parallel-loops turns a reduction over leading
    dimensions (a bias or layer-norm-scale gradient: sum of [B, T, C] over
    B and T) into sequential loops around a parallel loop over C: one
    OpenMP region per row. This pass makes the parallel loop the outermost,
    tiling its innermost dimension by `tile` (each thread then sums
    contiguous rows of its column tile):

    ```mlir
    scf.for %i = %c0 to %c1024 step %c1 {
      scf.parallel (%j) = (%c0) to (%c256) step (%c1) {
        %x = memref.load %in[%i, %j] ...  %a = memref.load %acc[%j] ...
        memref.store %s, %acc[%j] ...
      }
    }
    // becomes
    scf.parallel (%jo) = (%c0) to (%c256) step (%c64) {
      %end = arith.minsi (%jo + 64), %c256
      scf.for %i = %c0 to %c1024 step %c1 {
        scf.for %j = %jo to %end step %c1 { ...the same body... }
      }
    }
    ```
    Each element keeps its order of accumulation, so results are bitwise
    unchanged. Applies when the sequential loops form a perfect nest with
    bounds defined above it, the parallel loop has no reductions, its body
    only loads, stores and computes, and each memref it stores to is
    accessed at one index list holding every parallel induction variable.
    Other nests are left as they are.
  }];
  let options = [
    Option<"tileSize", "tile", "int64_t", "64",
           "iterations of the innermost parallel dimension per parallel task">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect"];
}

def VectorizableLoops : Pass<"trc-vectorizable-loops", "mlir::func::FuncOp"> {
  let summary = "shapes CPU loop nests so that LLVM vectorizes their innermost loop";
  let description = [{
    Two rewrites of bufferized loops, before convert-scf-to-openmp:

    1. A multi-dimensional `scf.parallel` with a loop-free body keeps its
       outer dimensions parallel and walks the last in an inner `scf.for`
       (OpenMP's collapsed loop recomputes every index by division per
       element, which the vectorizer does not take):

    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c128) step (%c1, %c1) { ... }
    // becomes
    scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
      scf.for %j = %c0 to %c128 step %c1 { ... }
    }
    ```

    2. An accumulator an `scf.for` loads and stores at one element per
       iteration (a row reduction) is carried in `iter_args`, loaded before
       the loop and stored after it; a floating add or multiply combining
       it gets `reassoc` (the vectorizer keeps partial sums per lane:
       deterministic, summation order changed).

    Loops touching the accumulator's memref elsewhere, or with other side
    effects, stay as they are.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect"];
}

def FuseRowLoops : Pass<"trc-fuse-row-loops", "mlir::func::FuncOp"> {
  let summary = "fuses consecutive parallel loops over the same rows into row kernels";
  let description = [{
    Consecutive `scf.parallel` loops with equal bounds become one when each
    row of the second touches only that row's slice of what the first writes
    (every access to a buffer either writes indexes its leading dimensions
    with the loop's induction variables): a softmax's maximum, exponentials,
    sum and division, or a layer norm's passes, then run per row while the
    row is in cache, in one OpenMP region.

    ```mlir
    scf.parallel (%i) = (%c0) to (%c8) step (%c1) { scf.for %k ... { max[%i] ... } }
    scf.parallel (%i) = (%c0) to (%c8) step (%c1) { scf.for %k ... { e[%i, %k] ... } }
    // becomes
    scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
      scf.for %k ... { max[%i] ... }
      scf.for %k ... { e[%i, %k] ... }
    }
    ```

    Loops with reductions, other side effects, or distinct memrefs that may
    share bytes (compared through memref.view's byte shifts) stay apart.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::memref::MemRefDialect"];
}

//===----------------------------------------------------------------------===//
// CUDA backend (lib/Pipelines/CudaPipeline.cpp)
//===----------------------------------------------------------------------===//

def OutlineLoopNests : Pass<"trc-outline-loop-nests", "mlir::ModuleOp"> {
  let summary = "moves each top-level loop nest of a function into its own function";
  let description = [{
    Every `scf.parallel` and `scf.for` directly in a `func.func`'s body
    (when the body has two or more) becomes a private function
    `@<function>_loop<N>` marked `noinline` (LLVM passthrough), taking the values the nest
    reads from above as arguments (constants are cloned in), and is replaced
    by a call. The CPU backend needs it for large steps: OpenMP's IR builder
    scans the whole enclosing function once per parallel region, which made
    translating one function of thousands of loop nests quadratic, and
    LLVM's optimizer and code generator are faster on many small functions.
    A nest reading a value a bare-pointer call cannot pass (a memref of
    dynamic shape or layout) stays where it is.

    ```mlir
    func.func @main(%a: memref<8xf32>) {
      scf.parallel (%i) = (%c0) to (%c8) step (%c1) { ... %a ... }
      scf.for %j = %c0 to %c8 step %c1 { ... }
    }
    // becomes
    func.func private @main_loop0(%a: memref<8xf32>)
        attributes {passthrough = ["noinline"]} {
      %c0 = arith.constant 0 : index  ...
      scf.parallel (%i) = (%c0) to (%c8) step (%c1) { ... %a ... }
      return
    }
    func.func @main(%a: memref<8xf32>) { call @main_loop0(%a) ... call @main_loop1() ... }
    ```
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def ProfileCalls : Pass<"trc-profile-calls", "mlir::ModuleOp"> {
  let summary = "brackets each loop nest and BLAS call of @main with profiler hooks";
  let description = [{
    After trc-outline-loop-nests (CPU): every call in @main of an outlined
    loop nest or of the runtime's matrix product (`trc_rt_matmul_*`) gets
    `call @trc_rt_profile_begin(id)` before it and
    `call @trc_rt_profile_end(id)` after it. The module's
    `trc.profile_spans` lists, per id, the span's name (the ONNX op type
    of the call's location and what ran: `MatMul (blas)`,
    `LayerNormalization (loop)`), the ONNX node (`/blocks.0/ln_1/...`) and
    the function called; the artifact's manifest carries it (`span`
    records) and `trc-run --profile` records one span per call under the
    program's span (a relaxed atomic load per call when not profiling). The
    backward's ops carry the location of the forward op they differentiate,
    so an op type's time is its forward and backward together.

    ```mlir
    call @main_loop3(%a, %b) : (...) -> ()   loc("/blocks.0/ln_1/LayerNormalization")
    // becomes
    %c0 = arith.constant 0 : i64
    call @trc_rt_profile_begin(%c0) : (i64) -> ()
    call @main_loop3(%a, %b) : (...) -> ()
    call @trc_rt_profile_end(%c0) : (i64) -> ()
    ```
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::arith::ArithDialect"];
}

def SelectEntry : Pass<"trc-select-entry", "mlir::ModuleOp"> {
  let summary = "keeps one function, calls from it inlined, as @main";
  let description = [{
    Makes @`entry` the function compiled: calls from it are inlined, every
    other function is dropped and it is renamed @main, as
    `--trc-compile="entry=..."` does before lowering (a training module holds
    the forward @main beside @train_step). A missing @`entry` is an error.
  }];
  let options = [
    Option<"entry", "entry", "std::string", "\"train_step\"",
           "the function to keep">,
  ];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def DeduplicateFunctions : Pass<"trc-deduplicate-functions", "mlir::ModuleOp"> {
  let summary = "merges private functions and GPU kernels whose bodies are the same";
  let description = [{
    Outlining makes one function per loop nest (trc-outline-loop-nests, CPU)
    or per launch (gpu-kernel-outlining, CUDA); a transformer's layers run
    the same computation on other buffers, so most of those functions are
    copies (GPT-2 124M's training step: 1428 kernel launches, 127 distinct
    kernels). Private `func.func` ops of the module, and `gpu.func` ops of
    each `gpu.module`, with the same signature, attributes (the name aside)
    and body (locations aside) become one: every reference to a copy
    (`func.call`, `gpu.launch_func`) names the first such function and the
    copies are erased, so each distinct function is optimized and compiled
    once. Public functions are never merged.

    ```mlir
    gpu.module @trc_kernels {
      gpu.func @main_k0(%a: memref<8xf32>) kernel { ... }
      gpu.func @main_k7(%a: memref<8xf32>) kernel { ... }   // the same body
    }
    gpu.launch_func @trc_kernels::@main_k7 ...
    // becomes: @main_k7 erased, the launch is of @trc_kernels::@main_k0
    ```
  }];
}

#endif // TRC_PASSES_TRANSFORMS_PASSES_TD

def AlignProducts : Pass<"trc-align-products", "mlir::func::FuncOp"> {
  let summary = "pads matrix products' misaligned inner dimensions for the GPU library";
  let description = [{
    cuBLASLt's Hopper (and Ampere) tensor-core kernels need every matrix's
    leading dimension to be a multiple of 16 bytes; a product with one that
    is not falls back to older kernels (the H200 profile: GPT-2's LM head,
    its 50257-wide logits, ran Turing kernels at 15.6 of 96 ms a step). In
    row-major storage a matrix's leading dimension is its innermost size, so
    each `trc.dot_general` whose operands' or result's innermost dimension
    (at least `min-size` elements) is not a multiple of 16 bytes gets it
    padded with zeros up to one: a contracting or batch dimension on both
    operands (zeros add nothing), a free dimension on its operand, and the
    result is sliced back to its shape (llm.c pads the vocabulary alike).
    Other products and non-float ones are left alone. The CUDA pipelines
    run it (the emulation too, so a step's values are checked on the CPU).

    ```mlir
    %y = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [1]
        : (tensor<8x768xbf16>, tensor<50257x768xbf16>) -> tensor<8x50257xbf16>
    // becomes
    %wp = trc.pad %w, %zero, low = [0, 0], high = [7, 0]
        : (tensor<50257x768xbf16>, tensor<bf16>) -> tensor<50264x768xbf16>
    %yp = trc.dot_general %x, %wp, batch = [] x [], contract = [1] x [1]
        : (tensor<8x768xbf16>, tensor<50264x768xbf16>) -> tensor<8x50264xbf16>
    %y = trc.slice %yp[[0, 0] : [8, 50257] : [1, 1]]
        : (tensor<8x50264xbf16>) -> tensor<8x50257xbf16>
    ```
  }];
  let options = [
    Option<"minSize", "min-size", "int64_t", "256",
           "smaller misaligned dimensions are left alone (padding them costs "
           "more than the faster kernel saves)">,
  ];
  let dependentDialects = ["trc::TrcDialect"];
}
