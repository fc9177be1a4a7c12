//===- Evaluator.cpp - held-out loss and accuracy (--eval-data) -----------===//
//
// See Evaluator.h. The eval rows are read in order; each program run takes
// the next `rows` of them.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Evaluator.h"

#include "runtime/support/Names.h"

#include <chrono>
#include <cmath>
#include <cstring>

namespace trc::rt {

const EvalMetric *findEvalMetric(std::string_view name) {
  for (const EvalMetric &metric : kEvalMetrics)
    if (name == metric.name)
      return &metric;
  return nullptr;
}

std::optional<double> evalMetricValue(const EvalResult &e, const EvalMetric &metric) {
  return metric.optional ? e.*metric.optional : std::optional<double>(e.loss);
}

LogitsSums logitsSums(const float *logits, const int64_t *labels, int64_t rows, int64_t classes,
                      std::optional<int64_t> ignoreIndex) {
  LogitsSums sums;
  for (int64_t r = 0; r < rows; ++r) {
    if (ignoreIndex && labels[r] == *ignoreIndex)
      continue;
    const float *x = logits + r * classes;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (x[c] > x[best])
        best = c;
    double sum = 0; // log-sum-exp, shifted by the maximum for range
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(double(x[c]) - double(x[best]));
    sums.lossSum += double(x[best]) + std::log(sum) - double(x[labels[r]]);
    sums.correct += best == labels[r];
    ++sums.counted;
  }
  return sums;
}

StatusOr<std::unique_ptr<Evaluator>> Evaluator::open(const EvaluatorOptions &options,
                                                     const std::vector<GraphInput> &inputs,
                                                     const TrainingModelInfo &info,
                                                     StepCompiler &compiler, Backend &backend) {
  std::unique_ptr<Evaluator> e(new Evaluator());
  e->options_ = options;
  e->info_ = info;
  StatusOr<std::unique_ptr<RowDataset>> data =
      options.tokens ? readTokenWindows(*options.tokens) : RowDataset::open(options.data);
  if (!data.ok())
    return Status(data.status()).withPrefix("--eval-data: ");
  e->data_ = *std::move(data);
  StatusOr<std::vector<RowFeed>> feeds = matchRowFeeds(*e->data_, inputs, options.lossTargets);
  if (!feeds.ok())
    return Status(feeds.status()).withPrefix("--eval-data: ");
  e->feeds_ = *std::move(feeds);
  std::optional<int64_t> ignore;
  if (!options.lossTargets.empty())
    ignore = options.ignoreIndex;
  if (Status s = checkRowValues(*e->data_, e->feeds_, info, ignore); !s)
    return s.withPrefix("--eval-data: ");
  for (const RowFeed &feed : e->feeds_)
    if (feed.input == info.labelsInput)
      e->labels_ = feed.array;
  if (!info.logitsOutput.empty() && e->labels_ && e->labels_->tensor.dtype != DType::I64)
    return Status::error("--eval-data: " + options.data + ": array '" +
                         percentEncode(e->labels_->name) + "' is " +
                         dtypeName(e->labels_->tensor.dtype) + "; labels are i64");
  int64_t batch = std::min(options.batch, e->data_->rows());
  if (Status s = e->addProgram(compiler, backend, batch); !s)
    return s;
  if (int64_t rest = e->data_->rows() % batch; rest)
    if (Status s = e->addProgram(compiler, backend, rest); !s)
      return s;
  return e;
}

Status Evaluator::addProgram(StepCompiler &compiler, Backend &backend, int64_t rows) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const RowFeed &feed : feeds_)
    if (feed.input != options_.lossTargets) {
      std::vector<int64_t> shape = feed.array->tensor.shape;
      shape[0] = rows;
      shapes[feed.input] = shape;
    }
  StatusOr<std::string> dir = compiler.compileForward(options_.model, shapes, backend.target());
  if (!dir.ok())
    return dir.status();
  auto program = std::make_unique<Program>();
  program->removeTemporary.artifactDir = *dir;
  program->rows = rows;
  StatusOr<LoadedSession> loaded = openSession(*dir, backend);
  if (!loaded.ok())
    return loaded.status();
  program->loaded = *std::move(loaded);
  // The outputs the metrics read must be f32: the model's loss, its logits.
  const Manifest &m = program->loaded.session->manifest();
  for (const std::string &name : {options_.lossTargets.empty() ? info_.firstOutput : "",
                                  info_.logitsOutput}) {
    if (name.empty())
      continue;
    const Slot *slot = m.find(SlotKind::Output, name);
    if (!slot || slot->dtype != DType::F32)
      return Status::error("--eval-data: the forward program of " + options_.model +
                           " has no f32 output '" + percentEncode(name) + "'");
  }
  programs_.push_back(std::move(program));
  return Status::success();
}

Status Evaluator::setParameter(const std::string &name, const HostTensor &value) {
  for (auto &program : programs_)
    if (Status s = program->loaded.session->setParam(name, value); !s)
      return s.withPrefix("--eval-data: ");
  return Status::success();
}

bool Evaluator::hasParameter(const std::string &name) const {
  return !programs_.empty() &&
         programs_.front()->loaded.session->manifest().find(SlotKind::Param, name) != nullptr;
}

Status Evaluator::keepRowOutputs(Session &session, int64_t rows, int64_t first,
                                 std::vector<NamedTensor> &outputs) const {
  // The first batch (of the full-batch program) decides which outputs are
  // per row; the remainder program's are found by name.
  const bool firstBatch = first == 0;
  for (const Slot *slot : session.manifest().slotsOfKind(SlotKind::Output)) {
    if (slot->shape.empty() || slot->shape[0] != rows)
      continue; // not one value per row: a mean loss
    NamedTensor *kept = nullptr;
    for (NamedTensor &t : outputs)
      if (t.name == slot->name)
        kept = &t;
    if (!kept && !firstBatch)
      continue;
    StatusOr<HostTensor> value = session.getOutput(slot->name);
    if (!value.ok())
      return value.status();
    if (!kept) {
      std::vector<int64_t> shape = value->shape;
      shape[0] = data_->rows();
      outputs.push_back({slot->name, {}});
      kept = &outputs.back();
      if (Status s = kept->tensor.allocate(value->dtype, shape); !s)
        return s;
    }
    const size_t rowBytes = kept->tensor.byteSize() / size_t(data_->rows());
    if (value->dtype != kept->tensor.dtype || value->byteSize() != rowBytes * size_t(rows))
      return Status::error("--eval-data: output '" + percentEncode(slot->name) + "' " +
                           formatShape(value->shape) + " of a batch of " + std::to_string(rows) +
                           " rows does not match the first batch's rows");
    std::memcpy(static_cast<char *>(kept->tensor.data()) + size_t(first) * rowBytes,
                value->data(), value->byteSize());
  }
  return Status::success();
}

StatusOr<EvalResult> Evaluator::evaluate(std::vector<NamedTensor> *outputs) {
  auto start = std::chrono::steady_clock::now();
  const bool appended = !options_.lossTargets.empty();
  const bool accuracy = !info_.logitsOutput.empty() && labels_;
  double lossSum = 0;
  LogitsSums sums;
  if (outputs)
    outputs->clear();
  std::vector<int64_t> ids;
  HostTensor batch, labels;
  for (int64_t first = 0; first < data_->rows();) {
    Program &p = *programs_[data_->rows() - first >= programs_[0]->rows ? 0 : 1];
    Session &session = *p.loaded.session;
    ids.resize(size_t(p.rows));
    for (int64_t i = 0; i < p.rows; ++i)
      ids[size_t(i)] = first + i;
    for (const RowFeed &feed : feeds_) {
      if (feed.input == options_.lossTargets)
        continue;
      std::vector<int64_t> shape = feed.array->tensor.shape;
      shape[0] = p.rows;
      if (Status s = batch.allocate(feed.array->tensor.dtype, shape); !s)
        return s;
      RowDataset::gatherRows(*feed.array, ids.data(), p.rows, batch.data());
      if (Status s = session.setInput(feed.input, batch); !s)
        return s.withPrefix("--eval-data: ");
    }
    if (Status s = session.run(); !s)
      return s;
    if (!appended) {
      StatusOr<HostTensor> loss = session.getOutput(info_.firstOutput);
      if (!loss.ok())
        return loss.status();
      lossSum += double(*loss->as<float>()) * double(p.rows);
    }
    if (accuracy) {
      StatusOr<HostTensor> logits = session.getOutput(info_.logitsOutput);
      if (!logits.ok())
        return logits.status();
      std::vector<int64_t> labelShape = labels_->tensor.shape;
      labelShape[0] = p.rows;
      if (Status s = labels.allocate(DType::I64, labelShape); !s)
        return s;
      RowDataset::gatherRows(*labels_, ids.data(), p.rows, labels.data());
      int64_t rows = labels.numElements();
      if (logits->numElements() != rows * info_.classes)
        return Status::error("--eval-data: output '" + percentEncode(info_.logitsOutput) + "' " +
                             formatShape(logits->shape) + " does not hold " +
                             std::to_string(info_.classes) + " logits per label of " +
                             formatShape(labels.shape));
      LogitsSums batchSums =
          logitsSums(logits->as<float>(), labels.as<int64_t>(), rows, info_.classes,
                     appended ? std::optional<int64_t>(options_.ignoreIndex) : std::nullopt);
      sums.lossSum += batchSums.lossSum;
      sums.counted += batchSums.counted;
      sums.correct += batchSums.correct;
    }
    if (outputs)
      if (Status s = keepRowOutputs(session, p.rows, first, *outputs); !s)
        return s;
    first += p.rows;
  }
  EvalResult result;
  result.rows = data_->rows();
  result.loss = appended ? sums.lossSum / double(std::max<int64_t>(sums.counted, 1))
                         : lossSum / double(data_->rows());
  if (accuracy)
    result.accuracy = double(sums.correct) / double(std::max<int64_t>(sums.counted, 1));
  if (options_.tokens) {
    result.tokens = appended ? sums.counted : data_->rows() * options_.tokens->seqLen;
    result.perplexity = std::exp(result.loss);
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

} // namespace trc::rt
