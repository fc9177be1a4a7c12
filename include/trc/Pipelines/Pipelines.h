//===- Pipelines.h - named trc pass pipelines and compilation ---*- C++ -*-===//
//
// The CPU lowering pipeline (trc IR -> LLVM dialect) as a function that
// fills an OpPassManager, and `compileToArtifact`, which runs it on an
// imported model and writes the artifact of docs/ARTIFACT.md.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PIPELINES_PIPELINES_H
#define TRC_PIPELINES_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trc {

struct CompileOptions {
  std::string target = "cpu"; // cpu or cuda
  std::string cpu = "native"; // LLVM CPU name, or "native" for the host
  int optLevel = 2; // LLVM -O3 compiles ~10x slower (full unrolling) for no gain here
  /// The function compiled into the artifact (e.g. train_step); the others
  /// are dropped after calls into them are inlined.
  std::string entry = "main";
  /// Names the program in its memory line when a compile makes several
  /// ("stage 1 backward"; MemoryPlanSummary::program).
  std::string program;
  /// target=cpu only: run the CUDA backend's kernels as host loops.
  bool emulateCuda = false;
  /// "values": weights.bin holds every parameter's initial value. "init":
  /// each trainable parameter is written as an `init` record (constant,
  /// normal or uniform, derived from its value; docs/ARTIFACT.md) and made
  /// by the runtime; frozen ones keep their values.
  std::string weights = "values";
  /// weights=init: parameter p's seed is splitmix64(seed ^ fnv1a64(p)).
  uint64_t seed = 0;
  /// CUDA (and its emulation): fused attention as trc-attention-to-gpu's
  /// kernels ("attention=kernels") instead of its decomposition. Off by
  /// default: those kernels (a thread per row, no tiles) keep no scores in
  /// memory but ran GPT-2 124M's step 6.6x slower than the decomposition
  /// on an H200 (bench/RESULTS.md, 2026-11-29).
  bool attentionKernels = false;
};

/// Parses "target=cpu cpu=native opt=3 weights=init seed=7" (spaces or
/// commas between keys).
bool parseCompileOptions(llvm::StringRef text, CompileOptions &options,
                         std::string &error);

/// trc IR whose @main takes parameters as arguments (trc-parameters-to-
/// arguments) -> LLVM dialect: decompose, lower to linalg, fuse, bufferize,
/// plan memory, BLAS calls, loops, LLVM.
void buildCpuLoweringPipeline(mlir::OpPassManager &pm);

/// trc IR whose @main takes parameters as arguments -> host LLVM dialect
/// (launches via trc_rt_cuda_launch, matrix products via cuBLASLt) plus
/// gpu.binary @trc_kernels holding the kernels' PTX for sm_80 and sm_90
/// (lib/Pipelines/CudaPipeline.cpp; docs/ARTIFACT.md "Target cuda").
void buildCudaLoweringPipeline(mlir::OpPassManager &pm, bool attentionKernels = false);

/// The CUDA pipeline's kernels run on the CPU: the same IR up to
/// trc-linalg-to-gpu, then every launch as host loops
/// (trc-gpu-launch-to-loops) and the CPU's BLAS, to LLVM. For testing the
/// kernel generator without a GPU (`--trc-compile="target=cpu emulate=cuda"`).
void buildCudaEmulationPipeline(mlir::OpPassManager &pm, bool attentionKernels = false);

/// The CUDA pipeline up to its kernels: every kernel a gpu.launch in the
/// host function, matrix products calls of trc_rt_cublaslt_matmul_* (for
/// analyses such as trc-print-kernel-costs).
void buildCudaKernelsPipeline(mlir::OpPassManager &pm, bool attentionKernels = false);

/// Registers `--trc-cpu-lowering`, `--trc-cuda-lowering`,
/// `--trc-cuda-kernels` (the pipelines above; the CUDA ones take
/// `{attention-kernels=1}`, CompileOptions::attentionKernels) and `--trc-training-pipeline` (TrainingPipeline.h) with trc-opt.
void registerTrcPipelines();

/// A compiled program's memory plan (trc-plan-memory's figures, bytes).
struct MemoryPlanSummary {
  int64_t arenaBytes = 0;      // the planned arena
  int64_t lowerBoundBytes = 0; // the most bytes live at once
  int64_t noReuseBytes = 0;    // every buffer its own bytes
  int64_t hostArenaBytes = 0;  // offloaded activations' host arena (0: none)
  std::string program;         // of several: which ("stage 1 backward"); "" alone
};

/// "memory: arena A bytes, lower bound L (arena/bound ...), no reuse N
/// (arena/no-reuse ...)[, host arena H bytes][ for PROGRAM]": what trc-opt
/// and trc-run print for a program.
std::string describeMemoryPlan(const MemoryPlanSummary &memory);

/// What a compile produced, as data: one memory plan per program (a
/// pipeline-split step has one per stage program).
struct CompileReport {
  std::vector<MemoryPlanSummary> programs;
  /// After a failed lowering: whether it failed on what the backend does
  /// not cover (an op marked abi::kUnsupportedAttr), not on a defect.
  bool unsupported = false;
};

/// Compiles an imported module into an artifact folder at `outPath`
/// (written atomically: a previous artifact there is replaced only on
/// success). Prints the memory-plan summary to `log` and, with `report`,
/// appends it there. With `timing`, each stage (passes, kernel binaries,
/// host object) is timed under it (trc-opt's -mlir-timing).
mlir::LogicalResult compileToArtifact(mlir::ModuleOp module, const CompileOptions &options,
                                      llvm::StringRef outPath, llvm::raw_ostream &log,
                                      mlir::TimingScope *timing = nullptr,
                                      CompileReport *report = nullptr);

/// Whether `module` is a training step split into pipeline stages
/// (trc-pipeline-split).
bool isPipelineModule(mlir::ModuleOp module);

/// Compiles a pipeline-split step into the folder `outPath`: one artifact
/// per stage program (stage<s>/forward, backward, apply) and the index
/// pipeline.trc (docs/ARTIFACT.md "Pipeline artifacts").
mlir::LogicalResult compilePipelineArtifact(mlir::ModuleOp module, const CompileOptions &options,
                                            llvm::StringRef outPath, llvm::raw_ostream &log,
                                            CompileReport *report = nullptr);

} // namespace trc

#endif
