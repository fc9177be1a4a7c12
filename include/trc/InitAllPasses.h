//===- InitAllPasses.h - every pass and pipeline a trc tool runs -*- C++ -*-===//
//
// One registration for every tool that parses or builds pass pipelines
// (trc-opt, trc-run's in-process compiler, trc-onnx-conformance, the unit
// tests): MLIR's passes, the trc passes (Passes.td) and the named trc
// pipelines (--trc-cpu-lowering, --trc-cuda-lowering,
// --trc-training-pipeline). Idempotent: a second call does nothing.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_INITALLPASSES_H
#define TRC_INITALLPASSES_H

namespace trc {

void registerAllPasses();

} // namespace trc

#endif // TRC_INITALLPASSES_H
