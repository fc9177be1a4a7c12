//===- TensorBoard.h - step metrics as TensorBoard event files ---*- C++ -*-===//
//
// TensorBoardWriter (--tensorboard DIR) writes the metrics of every step as
// scalars into DIR/events.out.tfevents.<unix s>.<ns>.<host>.<pid>, the file
// TensorBoard reads: TFRecord framing (a little-endian u64 length, the
// masked CRC-32C of those 8 bytes, the data, the masked CRC-32C of the
// data) around `tensorflow.Event` protocol buffers, encoded here by hand
// (no protobuf in the runtime):
//   * the first event: wall_time, file_version "brain.Event:2";
//   * per step, one event: wall_time (the step's `time`), step, and a
//     summary with one simple_value per metric that is set: the fixed
//     metrics and extras as "train/<name>", extras named "eval_<x>" as
//     "eval/<x>" (Hugging Face Trainer's tags);
//   * a resumed run (resume()) starts with a session_log START event at
//     the step it resumes after + 1, so TensorBoard drops the scalars a
//     killed run wrote past its checkpoint, as MetricsWriter drops its
//     lines: both read as one uninterrupted run.
// Each event goes out in one write(2) as soon as it is written.
// Preconditions: DIR exists or can be created.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TENSORBOARD_H
#define TRC_RUNTIME_TENSORBOARD_H

#include "runtime/train/Metrics.h"

#include <cstdint>
#include <memory>
#include <string>

namespace trc::rt {

/// CRC-32C (Castagnoli, reflected, as TFRecord uses it) of `size` bytes.
uint32_t crc32c(const void *data, size_t size);

class TensorBoardWriter : public MetricsSink {
public:
  /// A new event file in `dir` (created, with its parents, if needed).
  static StatusOr<std::unique_ptr<TensorBoardWriter>> create(const std::string &dir);
  /// The same, for a run resumed after step `lastStep` (see above).
  static StatusOr<std::unique_ptr<TensorBoardWriter>> resume(const std::string &dir,
                                                             int64_t lastStep);
  ~TensorBoardWriter() override;
  TensorBoardWriter(const TensorBoardWriter &) = delete;
  TensorBoardWriter &operator=(const TensorBoardWriter &) = delete;

  Status write(const StepMetrics &m) override;
  const std::string &path() const { return path_; }

private:
  TensorBoardWriter() = default;
  Status writeEvent(const std::string &event);
  std::string path_;
  int fd_ = -1;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_TENSORBOARD_H
