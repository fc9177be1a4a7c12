//===- Metrics.h - per-step metrics (JSON lines) and the progress bar -------===//
//
// MetricsWriter writes one JSON object per line and per step:
//   {"step":12,"loss":3.24151301,"learning_rate":0.001,"grad_norm":1.5,
//    "tokens_per_second":51234.5,"step_time_ms":40.25,"EXTRA":...}
// in that key order, extras after the fixed keys in the caller's order.
// Numbers read back exactly: integers as integers, f32 values with 9
// significant digits (%.9g), f64 values with the shortest text that reads
// back to the same double; NaN, infinities and unset values are null, so
// every line is valid JSON. Each line goes out in one write(2) as soon as
// it is written (no buffering), so a crash loses at most the line being
// written.
//
// A resumed run opens the file with resume(path, lastStep): lines of steps
// after lastStep (written after the checkpoint it resumes from) and a torn
// last line are dropped (the file is rewritten atomically) and new lines
// follow, so the file reads as one uninterrupted run.
//
// ProgressBar draws one self-overwriting line on stderr ("\r...\x1b[K")
// when stderr is a terminal. Otherwise (a pipe, a log file) it prints a
// plain line every `logEvery` steps and at the last step, e.g.
//   step 20/100 | loss 3.2415 | 51234 tok/s | eta 1m23s
// or nothing at all when logEvery is 0. A step's note (evaluation results)
// is printed as a line of its own either way.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_METRICS_H
#define TRC_RUNTIME_METRICS_H

#include "runtime/support/Status.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trc::rt {

// A number as it is logged: unset (null), an integer, an f32 or an f64.
class MetricValue {
public:
  enum class Kind { Null, Int, F32, F64 };
  MetricValue() = default;
  MetricValue(int v) : kind_(Kind::Int), int_(v) {}
  MetricValue(long v) : kind_(Kind::Int), int_(v) {}
  MetricValue(long long v) : kind_(Kind::Int), int_(v) {}
  MetricValue(float v) : kind_(Kind::F32), f32_(v) {}
  MetricValue(double v) : kind_(Kind::F64), f64_(v) {}

  Kind kind() const { return kind_; }
  void appendTo(std::string &out) const;
  // The value as a double; none when unset.
  std::optional<double> number() const;

private:
  Kind kind_ = Kind::Null;
  int64_t int_ = 0;
  float f32_ = 0;
  double f64_ = 0;
};

struct StepMetrics {
  int64_t step = 0;
  MetricValue loss;
  MetricValue learningRate;
  MetricValue gradNorm;
  MetricValue tokensPerSecond;
  MetricValue stepTimeMs;
  // Wall-clock seconds since the Unix epoch when the step's line was
  // written ("time"; left out when unset).
  std::optional<double> time;
  std::vector<std::pair<std::string, MetricValue>> extra;
};

/// The JSON line of `m`, with its '\n'. Fails if an extra name is empty,
/// repeats, or is one of the fixed keys.
StatusOr<std::string> formatMetricsLine(const StepMetrics &m);

/// Where a step's metrics go (the JSON lines below, TensorBoard.h's event
/// file); the trainer writes each step to every sink it was given.
class MetricsSink {
public:
  virtual ~MetricsSink() = default;
  virtual Status write(const StepMetrics &m) = 0;
};

class MetricsWriter : public MetricsSink {
public:
  /// A writer of `path`, created (an existing file truncated).
  static StatusOr<std::unique_ptr<MetricsWriter>> create(const std::string &path);
  /// A writer that keeps the lines of steps <= lastStep (see above) and
  /// appends after them; a missing file is created. A line that is not a
  /// trc metrics line ({"step":N,...) is an error naming the file and the
  /// line.
  static StatusOr<std::unique_ptr<MetricsWriter>> resume(const std::string &path,
                                                         int64_t lastStep);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter &) = delete;
  MetricsWriter &operator=(const MetricsWriter &) = delete;

  Status write(const StepMetrics &m);
  const std::string &path() const { return path_; }

private:
  MetricsWriter() = default;
  std::string path_;
  int fd_ = -1;
};

class ProgressBar {
public:
  // Draws on `fd` if it is a terminal (isatty), or always if `force`;
  // else prints lines every `logEvery` steps (0: never). `firstStep` is
  // where a resumed run starts (for rate and ETA).
  ProgressBar(int64_t totalSteps, int64_t firstStep = 0, int fd = 2,
              bool force = false, int64_t logEvery = 0);
  ~ProgressBar();
  bool enabled() const { return enabled_; }

  // Steps done so far (1..total) and the latest loss and rate. Redraws at
  // most every 100 ms, and always for the last step. A non-empty `note`
  // ("eval_loss 0.41 | ...") prints the step's line with it, kept above
  // the bar on a terminal.
  void update(int64_t stepsDone, double loss, double tokensPerSecond,
              const std::string &note = "");
  // Erases the bar so the caller can print a line; the next update redraws.
  void clear();
  // Ends the bar's line (once); also done by the destructor.
  void finish();

  // The bar's text (no "\r"), e.g.
  // "step 12/100 [###.........] 12% | loss 3.2415 | 51234 tok/s | eta 1m23s",
  // or without the bar and percentage (`bar` false) a log line's.
  static std::string render(int64_t stepsDone, int64_t totalSteps,
                            double loss, double tokensPerSecond,
                            double etaSeconds, bool bar = true);

private:
  void draw(const std::string &text);

  int64_t total_;
  int64_t first_;
  int fd_;
  bool enabled_;
  int64_t logEvery_;
  bool drawn_ = false;
  bool finished_ = false;
  std::string last_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point lastDraw_;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_METRICS_H
