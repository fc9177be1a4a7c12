//===- Predictions.h - the model's outputs for the eval rows ----*- C++ -*-===//
//
// --predictions DIR: after every evaluation (Evaluator.h, keepOutputs) rank
// 0 writes the model's outputs for every eval row, in row order, as
// DIR/<output>.npy (Names.h's outputFileName: the folder of .npy files trc
// reads as rows), and DIR/predictions.json last:
//   {"format": "trc-predictions 1", "step": N, "rows": R,
//    "outputs": {"<output>": "<file>.npy", ...}}
// Each evaluation replaces the folder as a whole (staged beside it, then
// renamed), so a reader (the Python package's compute_metrics) sees one
// evaluation's outputs, never a mix. DIR must be absent or a folder
// --predictions wrote (it holds predictions.json): nothing else is
// overwritten.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_PREDICTIONS_H
#define TRC_RUNTIME_TRAIN_PREDICTIONS_H

#include "runtime/support/Status.h"
#include "runtime/support/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trc::rt {

inline constexpr const char kPredictionsRecord[] = "predictions.json";

/// Whether --predictions may write `dir` (see above).
Status checkPredictionsTarget(const std::string &dir);

/// Writes `outputs` ([rows, ...] each) of the evaluation at `step` to `dir`.
Status writePredictions(const std::string &dir, int64_t step,
                        const std::vector<NamedTensor> &outputs);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_PREDICTIONS_H
