//===- CompiledModelWork.h - an ONNX model's steps counted for the planner -*- C++ -*-===//
//
// The planner's CompiledWorkSource (trc/Plan/CostModel.h) for an .onnx
// model: for each candidate's tensor degree, sequence parallelism,
// recomputation and microbatch rows, the model's training step is compiled
// as trc-run compiles it (CPU defaults: attention unfused; a cross-entropy
// loss appended when the model outputs no scalar), up to @main_grad with
// every piece between layer boundaries its own stage, and counted
// (trc/Parallel/StageWork.h). Each layout is compiled once (a small model's
// count takes about 0.1 s); one that does not compile (a tensor degree the
// model's heads do not allow) yields none, and the planner's formulas
// price it. The data inputs' first dimension is taken as the rows.
// Plain C++ interface: trc-plan and trc-run include no MLIR header.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DRIVER_COMPILEDMODELWORK_H
#define TRC_DRIVER_COMPILEDMODELWORK_H

#include "runtime/support/Status.h"
#include "trc/Plan/CostModel.h"

#include <memory>
#include <string>

namespace trc::plan {

class CompiledModelWork final : public CompiledWorkSource {
public:
  /// Imports `path` with --dim's `dims` ("NAME=N,..."; empty: none) to
  /// learn its inputs; errors name the file.
  static rt::StatusOr<std::unique_ptr<CompiledModelWork>> open(const std::string &path,
                                                               const std::string &dims);
  ~CompiledModelWork() override;
  const CompiledWork *work(const Candidate &c) override;
  /// The step at the rows the model was imported with (--dim's batch).
  const CompiledWork *probe() override;
  /// Compiles (and caches) probe()'s step; an error naming the file and the
  /// compiler's diagnostic when it does not compile.
  rt::Status check();
  /// Layouts compiled so far (tests, and the planner's report).
  int compiled() const;

private:
  struct Impl;
  explicit CompiledModelWork(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace trc::plan

#endif // TRC_DRIVER_COMPILEDMODELWORK_H
