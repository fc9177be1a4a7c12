//===- CudaArtifact.h - the CUDA members of an artifact ---------*- C++ -*-===//
//
// After the CUDA pipeline (buildCudaLoweringPipeline): the PTX of gpu.binary
// @trc_kernels, one object per chip, is written next to the program and
// compiled into a cubin per chip with CUDA's ptxas; the kernel table
// (module attribute trc.cuda_kernels) and the files become manifest records
// (docs/ARTIFACT.md, "Target cuda"). The binary is then erased, leaving
// plain host LLVM for the object emitter.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_PIPELINES_CUDAARTIFACT_H
#define TRC_LIB_PIPELINES_CUDAARTIFACT_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace trc {

/// The chips the CUDA backend compiles for ("sm_80", "sm_90").
extern const char *const kCudaChips[2];

/// The CUDA toolkit found when trc was built, or "" (MLIR and ptxas lookup
/// then fall back to CUDA_ROOT / CUDA_HOME / CUDA_PATH and PATH).
std::string cudaToolkitPath();

/// Writes kernels.<chip>.ptx and kernels.<chip>.cubin into `dir`, appends
/// the `ptx`, `cubin` and `kernel` records to `records`, and erases the
/// module's gpu.binary. On failure `error` says why.
mlir::LogicalResult emitCudaKernels(mlir::ModuleOp module, llvm::StringRef dir,
                                    std::vector<std::string> &records, std::string &error);

} // namespace trc

#endif
