//===- CudaPipeline.cpp - trc IR to host LLVM plus CUDA kernels -------------===//
//
// The pass sequence of the CUDA backend, as text so that `trc-opt
// --trc-cuda-lowering` and this function are one definition. Up to the
// memory plan it is the CPU pipeline's (fused regions are first inlined back
// by trc-unfuse and re-fused at the linalg level; attention is decomposed,
// or with attentionKernels becomes its own kernels, trc-attention-to-gpu;
// products' misaligned inner
// dimensions padded, trc-align-products; reductions with few
// outputs split over many threads, trc-split-reductions); then matrix products go
// to cuBLASLt, every other linalg op becomes one kernel (trc-linalg-to-gpu),
// the kernels are outlined into gpu.module @trc_kernels, copies of one
// kernel (a model's layers) merged (trc-deduplicate-functions), compiled by
// MLIR's NVVM target (LLVM's NVPTX backend, libdevice) to PTX for each chip
// of kCudaChips, and the host function becomes LLVM calling
// trc_rt_cuda_launch and trc_rt_cublaslt_matmul_*. ptxas (CudaArtifact.cpp)
// turns the PTX into cubins. Precondition: the upstream passes named here
// are registered (trc-opt and trc-run register all).
//
//===----------------------------------------------------------------------===//
#include "CudaArtifact.h"
#include "trc/Passes.h"
#include "trc/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"

using namespace mlir;

namespace trc {

const char *const kCudaChips[] = {"sm_80", "sm_90"};

std::string cudaToolkitPath() {
#ifdef TRC_CUDA_TOOLKIT_DIR
  if (llvm::sys::fs::is_directory(TRC_CUDA_TOOLKIT_DIR))
    return TRC_CUDA_TOOLKIT_DIR;
#endif
  return ""; // MLIR then looks at CUDA_ROOT, CUDA_HOME, CUDA_PATH and PATH
}

namespace {
/// trc -> kernels as gpu.launch ops in @main; matrix products call the
/// runtime (cuBLASLt, or the CPU's BLAS entries when `cublasLt` is false).
std::string kernelsPipeline(bool cublasLt, bool attentionKernels) {
  return std::string(
             // fused regions back to core ops; trc -> linalg on tensors, re-fused
             "func.func(trc-unfuse), ") +
         // attention as kernels that keep no scores; other composites decomposed
         (attentionKernels ? "func.func(trc-attention-to-gpu), " : "") +
         std::string("trc-decompose-composites, "
             // 16-byte leading dimensions, or cuBLASLt takes slower kernels
             "func.func(trc-align-products), "
             // collectives started, finished before their results' first use
             "trc-collectives-to-runtime-call{overlap=1}, "
             "trc-offload-to-runtime-call, canonicalize, "
             "func.func(trc-lower-to-linalg), "
             "canonicalize, cse, func.func(trc-rematerialize-broadcasts), linalg-fuse-elementwise-ops, "
             // a reduction with few outputs: partials over many threads
             "func.func(trc-split-reductions), "
             // tensors -> buffers in caller-provided outputs and one arena
             "one-shot-bufferize{bufferize-function-boundaries "
             "function-boundary-type-conversion=identity-layout-map}, "
             "func.func(trc-distinct-results), "
             "buffer-results-to-out-params{modify-public-functions hoist-static-allocs}, "
             "canonicalize, "
             // transposes only products read: the library's transpose flags
             "func.func(trc-fold-transposes-into-matmul), "
             "trc-plan-memory, func.func(trc-forward-fills), "
             // matrix products to the library, everything else one kernel per op
             // bf16 products whose readers only round them write bf16
             "trc-matmul-to-runtime-call{narrow-results=1}, ") +
         (cublasLt ? "trc-matmul-to-cublaslt, " : "") +
         "trc-copies-to-linalg, func.func(trc-linalg-to-gpu), ";
}

std::string cudaLoweringPipeline(bool attentionKernels) {
  std::string text = kernelsPipeline(/*cublasLt=*/true, attentionKernels) +
                     "gpu-kernel-outlining, canonicalize, symbol-dce, trc-deduplicate-functions, ";
  // kernels -> NVVM -> PTX per chip (the NVPTX backend, libdevice linked)
  for (const char *chip : kCudaChips)
    text += std::string("nvvm-attach-target{module=trc_kernels O=3 chip=") + chip + "}, ";
  text += "gpu.module(convert-scf-to-cf, "
          "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1}, canonicalize, cse, "
          "reconcile-unrealized-casts), ";
  text += "gpu-module-to-binary{format=isa";
  if (std::string toolkit = cudaToolkitPath(); !toolkit.empty())
    text += " toolkit=" + toolkit;
  text += "}, ";
  // the host: pointer arithmetic, launches and library calls -> LLVM
  text += "expand-strided-metadata, lower-affine, finalize-memref-to-llvm, "
          "convert-arith-to-llvm, convert-index-to-llvm, "
          "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1}, convert-cf-to-llvm, "
          "gpu-to-llvm{use-bare-pointers-for-kernels=1}, trc-gpu-launch-to-runtime-call, "
          "reconcile-unrealized-casts";
  return text;
}

/// The same kernels run as host loops, compiled like the CPU backend's
/// loops (sequentially), with the CPU's BLAS and the CPU's math (its
/// polynomial approximations, not libdevice's): a step then computes
/// exactly what the CPU backend computes, so a comparison isolates the
/// kernels' indexing, fusion and reduction order.
std::string cudaEmulationPipeline(bool attentionKernels) {
  return kernelsPipeline(/*cublasLt=*/false, attentionKernels) +
         "func.func(trc-gpu-launch-to-loops), canonicalize, "
         "math-extend-to-supported-types{target-type=f32}, trc-approximate-math, "
         "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32}, trc-expand-bf16, "
         "expand-strided-metadata, lower-affine, convert-math-to-funcs, "
         "convert-scf-to-cf, convert-vector-to-llvm, finalize-memref-to-llvm, "
         "convert-math-to-llvm, convert-math-to-libm, convert-arith-to-llvm, "
         "convert-index-to-llvm, finalize-memref-to-llvm, "
         "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1}, convert-cf-to-llvm, "
         "reconcile-unrealized-casts";
}
} // namespace

void buildCudaLoweringPipeline(OpPassManager &pm, bool attentionKernels) {
  if (failed(parsePassPipeline(cudaLoweringPipeline(attentionKernels), pm, llvm::errs())))
    llvm::report_fatal_error("trc: the built-in CUDA pipeline does not parse");
}

void buildCudaKernelsPipeline(OpPassManager &pm, bool attentionKernels) {
  std::string text = kernelsPipeline(/*cublasLt=*/true, attentionKernels);
  text.resize(text.size() - 2); // the prefix ends in ", " for what follows it
  if (failed(parsePassPipeline(text, pm, llvm::errs())))
    llvm::report_fatal_error("trc: the built-in CUDA kernels pipeline does not parse");
}

void buildCudaEmulationPipeline(OpPassManager &pm, bool attentionKernels) {
  if (failed(parsePassPipeline(cudaEmulationPipeline(attentionKernels), pm, llvm::errs())))
    llvm::report_fatal_error("trc: the built-in CUDA emulation pipeline does not parse");
}

} // namespace trc
