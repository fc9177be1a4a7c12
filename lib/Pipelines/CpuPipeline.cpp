//===- CpuPipeline.cpp - trc IR to the LLVM dialect for CPUs ----------------===//
//
// The pass sequence of the CPU backend, as text so that `trc-opt
// --trc-cpu-lowering` and this function are one definition. Everything above
// bufferization is shared with the CUDA backend. Precondition: the upstream
// passes named here are registered (trc-opt and trc-run register all).
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "trc/Pipelines/Pipelines.h"
#include "trc/Pipelines/TrainingPipeline.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace trc {

static const char *kCpuLowering =
    // trc -> linalg on tensors
    "trc-decompose-composites, trc-collectives-to-runtime-call, trc-offload-to-runtime-call, "
    "canonicalize, "
    "func.func(trc-lower-to-linalg), "
    "canonicalize, cse, func.func(trc-rematerialize-broadcasts), linalg-fuse-elementwise-ops, "
    // tensors -> buffers, results written into caller-provided outputs
    "one-shot-bufferize{bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map}, "
    "func.func(trc-distinct-results), "
    "buffer-results-to-out-params{modify-public-functions hoist-static-allocs}, canonicalize, "
    // transposes only products read: BLAS transpose flags, not copies
    "func.func(trc-fold-transposes-into-matmul), "
    // one arena for every temporary; matrix products to BLAS
    "trc-plan-memory, trc-matmul-to-runtime-call, trc-copies-to-linalg, "
    // loops -> LLVM (bare pointers for statically shaped memrefs)
    // parallel loop nests run on OpenMP threads (libomp), the rest in order
    "func.func(convert-linalg-to-parallel-loops), "
    // reductions over rows (bias gradients): one parallel region, not one per row
    "func.func(trc-hoist-parallel-loops), "
    // innermost loops LLVM vectorizes: rows walked in order, accumulators in registers
    "func.func(trc-vectorizable-loops), "
    // a row's passes (softmax, layer norm) in one loop over rows: row kernels
    "func.func(trc-fuse-row-loops), "
    // each loop nest its own function: OpenMP's translation scans the whole
    // enclosing function per parallel region (quadratic in one big step)
    // and the layers' copies of one nest are one function
    "trc-outline-loop-nests, trc-deduplicate-functions, "
    // each loop nest and BLAS call timed under trc-run --profile
    "trc-profile-calls, convert-scf-to-openmp, "
    "expand-strided-metadata, lower-affine, "
    // integer powers (math.ipowi) become outlined functions
    "convert-math-to-funcs, "
    // memref ops first: alloca_scope (OpenMP reductions) must see its
    // region before scf-to-cf splits it into blocks
    "finalize-memref-to-llvm, "
    // bf16 math and arithmetic in f32, and its conversions and selects in
    // integer ops, not compiler-rt calls (which Debian 12's libgcc lacks)
    "convert-scf-to-cf, math-extend-to-supported-types{target-type=f32}, trc-approximate-math, "
    "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}, trc-expand-bf16, "
    "convert-math-to-llvm, convert-math-to-libm, "
    "convert-arith-to-llvm, convert-index-to-llvm, finalize-memref-to-llvm, "
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1}, convert-cf-to-llvm, "
    "convert-openmp-to-llvm, "
    "reconcile-unrealized-casts";

void buildCpuLoweringPipeline(OpPassManager &pm) {
  if (failed(parsePassPipeline(kCpuLowering, pm, llvm::errs())))
    llvm::report_fatal_error("trc: the built-in CPU pipeline does not parse");
}

namespace {
/// The CUDA pipelines' option (CompileOptions::attentionKernels).
struct CudaPipelineOptions : PassPipelineOptions<CudaPipelineOptions> {
  Option<bool> attentionKernels{*this, "attention-kernels",
                                llvm::cl::desc("fused attention as trc-attention-to-gpu's "
                                               "kernels instead of its decomposition"),
                                llvm::cl::init(false)};
};
} // namespace

void registerTrcPipelines() {
  PassPipelineRegistration<>(
      "trc-cpu-lowering",
      "trc IR (parameters as arguments) to the LLVM dialect for the CPU backend",
      buildCpuLoweringPipeline);
  PassPipelineRegistration<CudaPipelineOptions>(
      "trc-cuda-lowering",
      "trc IR (parameters as arguments) to host LLVM and PTX kernels for the CUDA backend",
      [](OpPassManager &pm, const CudaPipelineOptions &o) {
        buildCudaLoweringPipeline(pm, o.attentionKernels);
      });
  PassPipelineRegistration<CudaPipelineOptions>(
      "trc-cuda-kernels",
      "the CUDA pipeline up to its kernels (gpu.launch ops, cuBLASLt calls), for analyses",
      [](OpPassManager &pm, const CudaPipelineOptions &o) {
        buildCudaKernelsPipeline(pm, o.attentionKernels);
      });
  registerTrainingPipeline();
}

} // namespace trc
