//===- Evaluator.h - held-out loss and accuracy (--eval-data) ---*- C++ -*-===//
//
// An Evaluator runs the model's own forward program (StepCompiler::
// compileForward: no gradients, no update) over every row of an eval data
// set (RowData.h) with the parameters the trainer hands it, and reports:
//   * loss: a model that outputs its loss: the mean of the batches' losses
//     weighted by their rows; a logits model trained with an appended loss
//     (--loss cross_entropy): the softmax cross-entropy of every counted
//     target (not the ignore index) against the logits, averaged over them,
//     as the training loss is (torch's F.cross_entropy, mean);
//   * accuracy, for a model with a logits output that pairs with a labels
//     input (TrainingModelInfo): the share of counted labels that are the
//     logits' argmax (first maximum on ties);
//   * for token data (TokenWindows.h: every window of the file, each token
//     predicted once): the loss per token, the perplexity exp(loss) and the
//     number of tokens;
//   * given `outputs` (--predictions), the model's outputs for every row:
//     each output of the forward program whose first dimension is the
//     batch's rows (logits, hidden states; not a mean loss), the batches'
//     values joined in row order.
// The program is compiled for batches of `batch` rows and, when that does
// not divide the row count, once more for the remainder, so every row
// counts once and no padding enters a mean.
//
// Preconditions: one rank evaluates (the trainer's rank 0, with the full
// parameters); the backend outlives the Evaluator. Messages name the eval
// data's path or the output at fault.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_EVALUATOR_H
#define TRC_RUNTIME_TRAIN_EVALUATOR_H

#include "runtime/artifact/Artifact.h"
#include "runtime/artifact/Session.h"
#include "runtime/backends/Backend.h"
#include "runtime/train/RowData.h"
#include "runtime/train/StepCompiler.h"
#include "runtime/train/TokenWindows.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trc::rt {

struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;   // with a logits output
  std::optional<double> perplexity; // token data: exp(loss), the loss per token
  int64_t rows = 0;
  int64_t tokens = 0;               // token data: the tokens predicted
  double seconds = 0;
};

// An evaluation's metrics as they are logged (--metrics keys), shown on
// the step line (with `format`) and named by --keep-best, in that order;
// higherIsBetter picks the best.
struct EvalMetric {
  const char *name;
  const char *format;
  bool higherIsBetter;
  std::optional<double> EvalResult::*optional; // null: the loss (always set)
};
inline constexpr EvalMetric kEvalMetrics[] = {
    {"eval_loss", "%.4f", false, nullptr},
    {"eval_accuracy", "%.4f", true, &EvalResult::accuracy},
    {"eval_perplexity", "%.6g", false, &EvalResult::perplexity},
};
/// The metric of kEvalMetrics called `name`, or null.
const EvalMetric *findEvalMetric(std::string_view name);
/// `metric`'s value in `e` (none when this evaluation has no such value).
std::optional<double> evalMetricValue(const EvalResult &e, const EvalMetric &metric);

struct EvaluatorOptions {
  std::string model;          // the .onnx model
  std::string data;           // --eval-data: rows (.npz, a folder)
  // ... or token data (a text or token file, as --data): its windows.
  std::optional<TokenWindowOptions> tokens;
  int64_t batch = 0;          // rows per program run (at most the data's rows)
  std::string lossTargets;    // an appended loss's targets input ("" none)
  int64_t ignoreIndex = -100; // with lossTargets
};

class Evaluator {
public:
  /// Reads and checks the eval data against the model's `inputs` and what
  /// the training compile learned (`info`), and compiles the forward
  /// program(s) for `backend`'s target.
  static StatusOr<std::unique_ptr<Evaluator>> open(const EvaluatorOptions &options,
                                                   const std::vector<GraphInput> &inputs,
                                                   const TrainingModelInfo &info,
                                                   StepCompiler &compiler, Backend &backend);

  /// Sets parameter `name` in every program.
  Status setParameter(const std::string &name, const HostTensor &value);
  /// Whether the eval programs have a parameter called `name`.
  bool hasParameter(const std::string &name) const;
  /// The metrics of every row; with `outputs`, the row outputs too.
  StatusOr<EvalResult> evaluate(std::vector<NamedTensor> *outputs = nullptr);
  int64_t rows() const { return data_->rows(); }

private:
  struct Program {
    TemporaryArtifact removeTemporary;
    LoadedSession loaded;
    int64_t rows = 0;
  };
  Evaluator() = default;
  Status addProgram(StepCompiler &compiler, Backend &backend, int64_t rows);
  /// Copies `session`'s row outputs into `outputs` at row `first`
  /// (allocating them, for all the data's rows, on the first batch).
  Status keepRowOutputs(Session &session, int64_t rows, int64_t first,
                        std::vector<NamedTensor> &outputs) const;

  EvaluatorOptions options_;
  TrainingModelInfo info_;
  std::unique_ptr<RowDataset> data_;
  std::vector<RowFeed> feeds_;       // graph inputs, then the loss's targets
  const NamedTensor *labels_ = nullptr;
  std::vector<std::unique_ptr<Program>> programs_; // full batches, then the remainder
};

/// The sums of one batch of logits [rows, classes] (f32, row-major) against
/// labels (rows): softmax cross-entropy of the counted rows (label not
/// `ignoreIndex`), their count, and how many of them are the row's argmax.
struct LogitsSums {
  double lossSum = 0;
  int64_t counted = 0, correct = 0;
};
LogitsSums logitsSums(const float *logits, const int64_t *labels, int64_t rows, int64_t classes,
                      std::optional<int64_t> ignoreIndex);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_EVALUATOR_H
