//===- RespecializeCheck.h - is a re-specialized static export right? -*- C++ -*-===//
//
// A static export compiled at another batch than it was traced at has shape
// constants the importer re-derived by rule (lib/Import/Respecialize.h),
// some of them a guess. Before training, its forward program at the traced
// sizes and at the run's are fed the same rows, repeated to each batch
// (g = gcd of the two batches distinct rows); every f32 output must agree:
// equal where the shapes are equal (a mean loss), the first g rows where
// only the batch differs, or in the ratio of the batches (a summed loss).
//
// Preconditions: `info` is the training compile's (respecializedInputs and
// tracedShapes set), `runShapes` the shapes it compiled the model's inputs
// at. Only a changed batch (axis 0) is checked: a changed sequence has no
// such identity, and a model with dropout draws different masks at
// different sizes; `skipped` then says why nothing was compared.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_RESPECIALIZECHECK_H
#define TRC_RUNTIME_TRAIN_RESPECIALIZECHECK_H

#include "runtime/backends/Backend.h"
#include "runtime/support/Status.h"
#include "runtime/train/StepCompiler.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trc::rt {

/// Success when the forward programs agree (or nothing could be compared:
/// `skipped` says why); an error naming the output and the export option
/// for dynamic axes when they do not.
Status checkRespecialized(StepCompiler &compiler, Backend &backend, const std::string &model,
                          const std::map<std::string, std::vector<int64_t>> &runShapes,
                          const TrainingModelInfo &info, std::string &skipped);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_RESPECIALIZECHECK_H
