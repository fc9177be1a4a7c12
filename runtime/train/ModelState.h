//===- ModelState.h - the model's state, whichever engine holds it -*- C++ -*-===//
//
// The trainer reads and writes the model's state (parameters, optimizer
// state) as logical tensors through one interface, whether one program's
// session holds it (its slots sharded or split over the job's ranks:
// DistributedRun gathers them whole and slices them back) or a pipeline's
// stage programs do (PipelineExecutor). Checkpoints, --resume,
// --from-checkpoint, evaluation and exports go through it, so neither they
// nor the trainer ask which engine runs the step.
// Preconditions: read and write are collective: every rank of the job calls
// them in the same order.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_MODELSTATE_H
#define TRC_RUNTIME_TRAIN_MODELSTATE_H

#include "runtime/support/Tensor.h"
#include "runtime/support/Status.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace trc::rt {

class DistributedRun;
class PipelineExecutor;
class Session;

/// What a read or write covers: the parameters alone (an evaluation, an
/// export, --from-checkpoint) or with the optimizer state (a checkpoint).
enum class StateParts { Parameters, ParametersAndOptimizer };

/// A whole tensor by name; null: missing.
using FindTensor = std::function<const HostTensor *(const std::string &name)>;

class ModelState {
public:
  virtual ~ModelState() = default;
  /// The state as logical tensors, by name: whole on rank 0 (other ranks'
  /// lists may be partial or empty). Parameters: those training changes.
  virtual StatusOr<std::vector<NamedTensor>> read(StateParts parts) = 0;
  /// Sets this rank's part of every tensor `parts` covers from `find`'s
  /// whole value (an error naming a missing or mis-shaped one; gradient
  /// accumulators a checkpoint lacks restart at zero).
  virtual Status write(const FindTensor &find, StateParts parts) = 0;
};

/// The state of one program's `session`, spread over `dist`'s ranks.
std::unique_ptr<ModelState> sessionState(Session &session, DistributedRun &dist);
/// The state of a pipeline's stage programs.
std::unique_ptr<ModelState> pipelineState(PipelineExecutor &pipeline);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_MODELSTATE_H
