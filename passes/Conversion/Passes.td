//===- Passes.td - trc passes: Conversion ------------------*- tablegen -*-===//
//
// Lowering: trc to linalg on tensors, buffers to runtime calls (BLAS,
// collectives), and the CUDA backend's kernels and launches.
// Implemented in passes/Conversion/<Name>.cpp; included by passes/Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_CONVERSION_PASSES_TD
#define TRC_PASSES_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerToLinalg : Pass<"trc-lower-to-linalg", "mlir::func::FuncOp"> {
  let summary = "lowers core trc ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Elementwise ops, compare, select, convert and iota become `linalg.generic`
    with scalar arith/math bodies; reduce becomes `linalg.reduce`; transpose
    `linalg.transpose`; broadcast_in_dim and reverse `linalg.generic` with
    affine input maps; reshape `tensor.reshape`; slice `tensor.extract_slice`;
    concatenate and pad `tensor.insert_slice` into a filled tensor; gather a
    `linalg.generic` that reads with `tensor.extract`; scatter_add an
    `scf.for` nest over the updates that accumulates into a copy of the
    operand (a fill when it is a splat) with `tensor.extract`/`tensor.insert`
    (in place after bufferization); dot_general a
    `linalg.batch_matmul` on operands transposed and reshaped to [B, M, K] and
    [B, K, N] (the CPU pipeline later hands it to BLAS).

    Preconditions: composites decomposed (trc-decompose-composites), signless
    or float element types. `trc.get_parameter` is left alone.
  }];
  let dependentDialects = ["trc::TrcDialect", "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect", "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect", "mlir::scf::SCFDialect"];
}

def MatmulToRuntimeCall : Pass<"trc-matmul-to-runtime-call", "mlir::ModuleOp"> {
  let summary = "hands linalg.batch_matmul on memrefs to the runtime's BLAS";
  let description = [{
    Replaces each f32/f64 `linalg.batch_matmul` on strided memrefs whose
    innermost or row stride is 1 with a call to `trc_rt_matmul_f32/f64`
    (docs/ARTIFACT.md): pointers, leading dimensions, batch strides and
    transpose flags come from the memref layouts, so slices and transposed
    views need no copy. A zero `linalg.fill` of the result just before the
    call is dropped (the call overwrites it).

    With `narrow-results` (the CUDA pipeline's), a bf16 product whose f32
    result is an arena temporary that every reader (a linalg.generic,
    through reshapes) rounds to bf16 before anything else
    (`arith.truncf`) calls `trc_rt_matmul_bf16_bf16` instead: the library
    accumulates in f32 and rounds once, the same values, into a bf16 view
    at the result's place, and the readers read that view without their
    rounding: half the bytes written and read (a mixed-precision step's
    activations, scores and logits).
  }];
  let options = [
    Option<"narrowResults", "narrow-results", "bool", /*default=*/"false",
           "bf16 products whose readers only round the result write bf16">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect", "mlir::linalg::LinalgDialect"];
}

def CollectivesToRuntimeCall
    : Pass<"trc-collectives-to-runtime-call", "mlir::ModuleOp"> {
  let summary = "lowers trc collectives to calls of the runtime's communicators";
  let description = [{
    Replaces trc.all_reduce, trc.reduce_scatter, trc.all_gather,
    trc.broadcast_from and trc.shard_slice on tensors by a call to
    `trc_rt_all_reduce` (etc., docs/ARTIFACT.md "Collectives") reading a
    read-only buffer of the operand and writing a fresh buffer that becomes
    the result. Runs before bufferization.

    With `overlap` (the CUDA pipeline's), an all-reduce, reduce-scatter,
    all-gather or collective permute is started instead
    (`trc_rt_all_reduce_start` etc. with a ticket, numbered through the
    module) and finished (`trc_rt_collective_finish`, naming the ticket and
    both buffers, the operand's through a second read-only view so that
    neither bufferization nor the memory plan reuses it earlier) right before
    the first op that reads the result, looking through the reshapes and
    1-D unit-stride slices that only view it (a gradient bucket cut back
    into gradients), and ZeRO-3's gathers of parameter shards (function
    arguments) each start where the gather before it was (prefetched one
    gather ahead): the ops between overlap the transfer
    where the communicator can (NCCL on a stream of its own; host
    communicators finish in the start).
  }];
  let options = [
    Option<"overlap", "overlap", "bool", "false",
           "start collectives and finish them before the result's first use">,
  ];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::bufferization::BufferizationDialect"];
}

def OffloadToRuntimeCall : Pass<"trc-offload-to-runtime-call", "mlir::ModuleOp"> {
  let summary = "lowers trc.offload, trc.prefetch and trc.copy_wait to the copy engine";
  let description = [{
    Before bufferization. Each copy (trc.offload: device to host,
    trc.prefetch: host to device) gets a number and becomes a call of
    `trc_rt_offload_start` between a read-only buffer of its operand and a
    fresh destination; its trc.copy_wait becomes `trc_rt_offload_wait`
    naming the same two buffers (so the memory plan keeps the source alive
    until the wait), after which the destination is the result's tensor
    (docs/ARTIFACT.md "Offloading"). A host destination is a
    `memref.alloc` marked `trc.host_pool`: trc-plan-memory places it in
    the host arena. Codes: include/trc/Abi/OffloadAbi.h.

    ```mlir
    %h = trc.offload %x : tensor<16xf32>
    %hx = trc.copy_wait %h from %x : tensor<16xf32>
    // becomes
    %xb = bufferization.to_buffer %x read_only : tensor<16xf32> to memref<16xf32>
    %hb = memref.alloc() {trc.host_pool} : memref<16xf32>
    call @trc_rt_offload_start(%c0, %c0, %c64, ptr(%xb), ptr(%hb))   // copy 0, to the host
    call @trc_rt_offload_wait(%c0, ptr(%xb), ptr(%hb))
    %hx = bufferization.to_tensor %hb restrict writable : memref<16xf32> to tensor<16xf32>
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::bufferization::BufferizationDialect"];
}

def FoldTransposesIntoMatmul : Pass<"trc-fold-transposes-into-matmul", "mlir::func::FuncOp"> {
  let summary = "reads a transpose that only matrix products read as a strided view of its source";
  let description = [{
    On bufferized IR before trc-plan-memory: a `linalg.transpose` into a
    `memref.alloc` whose views (`memref.reshape`, `expand_shape`,
    `collapse_shape`) only feed `linalg.batch_matmul` inputs is erased, and
    each view becomes a `memref.reinterpret_cast` of the transpose's source
    with the strides of the transposed-then-reshaped shape, so that
    trc-matmul-to-runtime-call passes it to BLAS with its transpose flag
    instead of copying (a weight W^T each forward, dY^T in a weight gradient).

    ```mlir
    linalg.transpose ins(%w : memref<768x256xf32>) outs(%t : memref<256x768xf32>) permutation = [1, 0]
    %r = memref.reshape %t(%shape) : (memref<256x768xf32>, memref<3xi64>) -> memref<1x256x768xf32>
    linalg.batch_matmul ins(%x, %r : memref<1x1024x256xf32>, memref<1x256x768xf32>) outs(%y : ...)
    // becomes
    %r = memref.reinterpret_cast %w to offset: [0], sizes: [1, 256, 768], strides: [196608, 1, 256]
    linalg.batch_matmul ins(%x, %r : ..., memref<1x256x768xf32, strided<[196608, 1, 256]>>) outs(%y : ...)
    ```
    Left alone: a view the source's strides cannot express (the heads'
    [B, T, H, D] -> [B*H, T, D] regrouping), one whose inner two dimensions
    both have strides other than 1, other readers of the temporary, and a
    source something may write before the last product reads it.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def CopiesToLinalg : Pass<"trc-copies-to-linalg", "mlir::ModuleOp"> {
  let summary = "rewrites memref.copy into linalg.copy";
  let description = [{
    So that copies lower to plain loops (or memcpy) instead of calls into
    MLIR's C runner library, which the runtime does not link.

    ```mlir
    memref.copy %a, %b : memref<4xf32, strided<[2]>> to memref<4xf32>
    // becomes
    linalg.copy ins(%a : memref<4xf32, strided<[2]>>) outs(%b : memref<4xf32>)
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def ExpandBf16 : Pass<"trc-expand-bf16", "mlir::ModuleOp"> {
  let summary = "bf16 conversions as integer operations (no compiler-rt call)";
  let description = [{
    `arith.truncf` f32 -> bf16 and `arith.extf` bf16 -> f32 become shifts,
    adds and selects on i32/i16 (round to nearest even; a NaN stays a NaN),
    for code compiled to the CPU: x86 without AVX512-BF16 has no instruction
    for them and LLVM lowers the truncation to compiler-rt's __truncsfbf2,
    which the linked libgcc may not have. The integer form vectorizes.

    ```mlir
    %b = arith.truncf %x : f32 to bf16
    // becomes
    %i = arith.bitcast %x : f32 to i32
    ... rounding bias added, NaN selected ...
    %b = arith.bitcast %t : i16 to bf16
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def ApproximateMath : Pass<"trc-approximate-math", "mlir::ModuleOp"> {
  let summary = "replaces f32 math calls by polynomial approximations";
  let description = [{
    exp, expm1, tanh, erf, sin, cos, rsqrt... on f32 become MLIR's
    polynomial approximations (a few ulp from libm), written in arith ops so
    LLVM vectorizes the loops around them instead of calling libm per
    element. Logarithms stay libm calls (the approximation is wrong for
    subnormal inputs). Runs on loops or scalars before lowering to LLVM.

    ```mlir
    %y = math.tanh %x : f32
    // becomes a rational approximation in arith.mulf/addf/divf/select
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect"];
}

//===----------------------------------------------------------------------===//
// CUDA backend (lib/Pipelines/CudaPipeline.cpp)
//===----------------------------------------------------------------------===//

def SplitReductions : Pass<"trc-split-reductions", "mlir::func::FuncOp"> {
  let summary = "splits a reduction with few outputs into partial sums over many threads";
  let description = [{
    Linalg on tensors with static shapes, for the CUDA backend (before
    one-shot-bufferize, so the memory plan places the partials):
    trc-linalg-to-gpu gives a reduction one thread per output point, so a
    reduction with few outputs runs on a few threads (a gradient norm's sum
    of squares over a 38.6M-element embedding: one thread, 374 ms on an
    H200). A reduction with fewer than `min-points` output points over at
    least `min-reduced` elements, whose payload folds each value into the
    output with one combiner that has a neutral element (`arith.addf`,
    `maximumf`, ...; `matchReduction`), is rewritten as
      partial[..., s, ...] = reduce over j of  x[..., j * S + s, ...]
                             (from the neutral element; S chosen so that
                              points * S is about `threads`, each thread
                              reducing at least 32 values),
      tail                 = the original op over the last R - S * J values
                             (fewer than J; absent when S * J = R),
      result               = combine over s of partial, starting from tail
                             (or from the original output).
    Several reduction dimensions are first collapsed into one (they must be
    adjacent in every operand); the new `s` takes the reduced dimension's
    place, so consecutive threads read consecutive elements whichever
    dimension is innermost. The combining op is split again while it
    qualifies. Deterministic: a fixed order, no atomics. Ops with several
    outputs, `linalg.index` in the payload, or several combiners stay as
    they are.

    ```mlir
    %r = linalg.reduce { arith.addf } ins(%x : tensor<768x50257xf32>)
                                      outs(%zero : tensor<f32>) dimensions = [0, 1]
    // becomes (collapsed to 38597376 values: J = 148, S = 260793, 12 left)
    %p = linalg.generic {["parallel", "reduction"] over (s, j)}
         ins(%x viewed as 148 x 260793) outs(fill 0 : tensor<260793xf32>)
    %t = linalg.generic {the last 12 values} outs(%zero)
    %c = linalg.generic {reduce %p over s} outs(%t)   // split again
    ```
  }];
  let options = [
    Option<"threads", "threads", "int64_t", "262144",
           "points x S to aim for (about two waves of a GPU's threads)">,
    Option<"minPoints", "min-points", "int64_t", "4096",
           "reductions with at least this many output points stay as they are">,
    Option<"minReduced", "min-reduced", "int64_t", "1024",
           "reductions over fewer values per output point stay as they are">,
  ];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect"];
}

def AttentionToGpu : Pass<"trc-attention-to-gpu", "mlir::func::FuncOp"> {
  let summary = "trc.attention and its gradient as CUDA kernels that keep no scores";
  let description = [{
    The CUDA backend's attention with `attention=kernels` (CompileOptions;
    off by default: on an H200 these kernels ran GPT-2 124M's step 6.6x
    slower than the decomposition, bench/RESULTS.md). Each `trc.attention` and
    `trc.attention_grad` with static shapes, an f32, f16 or bf16 element
    type and head dims of at most 128 becomes `gpu.launch` kernels on
    buffers (read-only `bufferization.to_buffer` views of its operands, a
    `memref.alloc` per result returned through `bufferization.to_tensor
    restrict writable`), before bufferization: the forward is one kernel, a
    thread per query row keeping its running max, sum and outputs in
    registers while it reads the key and value rows (an online softmax); the
    gradient is two, a thread per query row recomputing its log-sum-exp and
    delta (sum over keys of dp p) and accumulating dq, then a thread per key
    row accumulating dk and dv. The [batch, Tq, Tk] scores and
    probabilities the decomposition writes never exist. A mask proven to
    hide every later key (include/trc/Parallel/CausalMask.h) with a fill of
    at most -1e4 makes each thread skip those keys (queries). Ops the kernels
    do not take are left for trc-decompose-composites. Kernels are named
    `<function>_attention<N>` (forward), `..._dq` and `..._dkv`.
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
                           "mlir::bufferization::BufferizationDialect",
                           "mlir::scf::SCFDialect", "mlir::math::MathDialect",
                           "mlir::arith::ArithDialect"];
}

def LinalgToGpu : Pass<"trc-linalg-to-gpu", "mlir::func::FuncOp"> {
  let summary = "turns every linalg op on buffers into one gpu.launch";
  let description = [{
    The kernel generator of the CUDA backend. Each linalg op on memrefs
    with static shapes becomes a `gpu.launch` (outlined later by
    gpu-kernel-outlining into `gpu.module @trc_kernels`, kernel
    `<function>_k<N>_<op>`): its parallel iteration space is linearized
    and tiled over blocks of up to 256 threads (`block_id.x * T +
    thread_id.x`, guarded when T does not divide it), each thread
    computes one point (delinearized with constant divisions) and runs the
    op's reduction dimensions as a sequential loop whose accumulators stay
    in registers (`scf.for` with `iter_args`), reading the output once and
    writing it once. A reduction over trailing dimensions and the ops after
    it on the same rows (elementwise over the same space, reductions over
    the same dimensions, ops over the rows: a layer norm, a softmax) form
    one row kernel, a thread per row: reductions and row results stay in
    registers, elementwise results are recomputed where they are read and
    stored only when read after the group (every buffer the group writes
    is accessed row-locally inside it, and nothing it reads overlaps one it
    writes). Elementwise ops whose innermost dimension is a
    multiple of 4 and contiguous in every operand move 4 elements per thread
    with 16-byte vector loads and stores (`vector.load`/`vector.store`).
    Constants read in a kernel (`memref.get_global` and views of it) are
    sunk into it, so they live in the cubin. A constant `linalg.fill` of a
    reduction's output right before it becomes the reduction's starting
    value (no fill kernel).

    Host `scf.for` nests (trc-lower-to-linalg's scatter_add) become kernels
    too: when every store is in the innermost loop and every access to a
    stored buffer indexes its last dimension with that loop's induction
    variable (and no other accessed buffer overlaps it), each thread runs
    the outer loops for one iteration of the innermost (deterministic);
    otherwise the nest runs on one thread, with a remark.

    `memref.reshape` with a static result becomes `memref.reinterpret_cast`
    (no shape buffer is read). Afterwards the function may only do pointer
    arithmetic, launches and calls of `trc_rt_*` entries on the host: any
    other op that touches memory (a load, store, copy, allocation, a
    constant read by a library call...) is an error naming it, since the
    host cannot read device memory.

    ```mlir
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%a : memref<1000xf32>) outs(%b : memref<1000xf32>) {...}
    // becomes
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, ...) threads(%tx, %ty, %tz)
        in (%sx = %c256, ...) module(@trc_kernels) function(@main_k0_generic) {
      %i = (%bx * 256 + %tx), if %i < 1000: load %a[%i], body, store %b[%i]
    }
    ```
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
                           "mlir::vector::VectorDialect"];
}

def MatmulToCublasLt : Pass<"trc-matmul-to-cublaslt", "mlir::ModuleOp"> {
  let summary = "retargets the matrix-product runtime calls to cuBLASLt";
  let description = [{
    Renames the calls trc-matmul-to-runtime-call made, `trc_rt_matmul_<t>`
    (t = f32, f64, bf16, f16), to the CUDA runtime's
    `trc_rt_cublaslt_matmul_<t>`: the same arguments (docs/ARTIFACT.md),
    with device pointers, run on the runtime's stream in launch order.

    ```mlir
    func.call @trc_rt_matmul_f32(%b, %m, %n, %k, ...)
    // becomes
    func.call @trc_rt_cublaslt_matmul_f32(%b, %m, %n, %k, ...)
    ```
  }];
}

def GpuLaunchToLoops : Pass<"trc-gpu-launch-to-loops", "mlir::func::FuncOp"> {
  let summary = "runs each gpu.launch as sequential host loops (tests kernels on the CPU)";
  let description = [{
    Replaces every `gpu.launch` by `scf.for` loops over its blocks and then
    its threads, the body cloned inside with the block and thread ids bound
    to the loop variables. Exact for kernels whose threads do not
    communicate (no barriers or shared memory) except by `gpu.shuffle xor`
    at the body's top level with one-dimensional blocks (trc-linalg-to-gpu's
    warp-per-row kernels): such a body runs in segments cut at the
    shuffles, each a loop over the block's threads; values used in another
    segment go through a per-thread array (`memref.alloca`), and a shuffle
    reads its partner's element (lane ^ offset), the butterfly a GPU
    computes. Anything else is an error. With it the CPU
    backend runs the CUDA backend's kernels, so that their indexing,
    vector accesses, reductions, row kernels and loop nests are checked
    against onnxruntime and the CPU's own lowering without a GPU
    (`--trc-compile="target=cpu emulate=cuda"`).

    ```mlir
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, ...) threads(%tx, %ty, %tz)
        in (%sx = %c256, ...) { ...; gpu.terminator }
    // becomes
    scf.for %bz = %c0 to %c1 step %c1 { scf.for %by ... { scf.for %bx = %c0 to %c4 ... {
      scf.for %tz ... { scf.for %ty ... { scf.for %tx = %c0 to %c256 ... { ... } } } } } }
    ```
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def GpuLaunchToRuntimeCall : Pass<"trc-gpu-launch-to-runtime-call", "mlir::ModuleOp"> {
  let summary = "turns gpu.launch_func into calls of trc_rt_cuda_launch";
  let description = [{
    Runs after gpu-to-llvm (kernel operands are LLVM values: bare pointers
    and scalars). Each `gpu.launch_func @trc_kernels::@k` becomes a call

        trc_rt_cuda_launch(i32 kernel, i64 gridX, gridY, gridZ,
                           i64 blockX, blockY, blockZ, i32 sharedBytes,
                           ptr params, i32 numParams)

    where `params` points to an array of pointers to each operand's value
    (cuLaunchKernel's kernelParams) and `kernel` is the kernel's index in
    the module attribute `trc.cuda_kernels` (the names, in the order of
    their first launch), which the artifact's kernel table repeats. The
    artifact's program thus never calls the CUDA driver itself.

    ```mlir
    gpu.launch_func @trc_kernels::@main_k0_generic blocks in (%c4, %c1, %c1)
        threads in (%c256, %c1, %c1) : i64 args(%p : !llvm.ptr)
    // becomes
    llvm.call @trc_rt_cuda_launch(%c0_i32, %c4, %c1, %c1, %c256, %c1, %c1,
                                  %c0_i32, %params, %c1_i32)
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // TRC_PASSES_CONVERSION_PASSES_TD
