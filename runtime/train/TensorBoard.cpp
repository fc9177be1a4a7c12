//===- TensorBoard.cpp - step metrics as TensorBoard event files ----------===//
//
// See TensorBoard.h. The protocol buffer fields written (tensorflow's
// event.proto and summary.proto):
//   Event:      wall_time 1 (double), step 2 (int64), file_version 3
//               (string), summary 5 (Summary), session_log 7 (SessionLog)
//   Summary:    value 1 (repeated Summary.Value)
//   Value:      tag 1 (string), simple_value 2 (float)
//   SessionLog: status 1 (enum; START = 1)
//
//===----------------------------------------------------------------------===//
#include "runtime/train/TensorBoard.h"

#include "runtime/formats/FileOps.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace trc::rt {

uint32_t crc32c(const void *data, size_t size) {
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i)
    crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

namespace {

// TFRecord's masking of a stored CRC.
uint32_t maskedCrc(const void *data, size_t size) {
  uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

void appendLittleEndian(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(char((value >> (8 * i)) & 0xFF));
}

void appendVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(char((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(char(value));
}

// A field's key: its number and wire type (0 varint, 1 64-bit, 2 bytes, 5 32-bit).
void appendKey(std::string &out, int field, int wireType) {
  appendVarint(out, uint64_t(field) << 3 | uint64_t(wireType));
}

void appendBytesField(std::string &out, int field, const std::string &bytes) {
  appendKey(out, field, 2);
  appendVarint(out, bytes.size());
  out += bytes;
}

void appendDoubleField(std::string &out, int field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  appendKey(out, field, 1);
  appendLittleEndian(out, bits, 8);
}

// An Event with its wall time and step (0 is the default, left out).
std::string eventHeader(double wallTime, int64_t step) {
  std::string event;
  appendDoubleField(event, 1, wallTime);
  if (step != 0) {
    appendKey(event, 2, 0);
    appendVarint(event, uint64_t(step));
  }
  return event;
}

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// TensorBoard's tag for a metric: eval_<x> -> eval/<x>, others train/<name>.
std::string tagOf(const std::string &name) {
  constexpr const char kEval[] = "eval_";
  if (name.rfind(kEval, 0) == 0)
    return "eval/" + name.substr(sizeof kEval - 1);
  return "train/" + name;
}

} // namespace

StatusOr<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::create(const std::string &dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::error("--tensorboard " + dir + ": cannot create the folder: " + ec.message());
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0)
    std::strcpy(host, "localhost");
  double started = now();
  // TensorBoard reads a folder's event files in name order: the time to
  // the nanosecond, zero-padded, orders runs started within one second.
  auto sinceEpoch = std::chrono::system_clock::now().time_since_epoch();
  int64_t nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(sinceEpoch).count();
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%lld.%09lld", static_cast<long long>(nanos / 1000000000),
                static_cast<long long>(nanos % 1000000000));
  std::unique_ptr<TensorBoardWriter> w(new TensorBoardWriter());
  w->path_ = dir + "/events.out.tfevents." + stamp + "." + host + "." + std::to_string(::getpid());
  w->fd_ = ::open(w->path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (w->fd_ < 0)
    return Status::error(w->path_ + ": cannot create the event file: " + std::strerror(errno));
  std::string version = eventHeader(started, 0);
  appendBytesField(version, 3, "brain.Event:2");
  if (Status s = w->writeEvent(version); !s)
    return s;
  return w;
}

StatusOr<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::resume(const std::string &dir,
                                                                       int64_t lastStep) {
  StatusOr<std::unique_ptr<TensorBoardWriter>> w = create(dir);
  if (!w.ok())
    return w;
  std::string start = eventHeader(now(), lastStep + 1);
  std::string sessionLog;
  appendKey(sessionLog, 1, 0);
  appendVarint(sessionLog, 1); // START
  appendBytesField(start, 7, sessionLog);
  if (Status s = (*w)->writeEvent(start); !s)
    return s;
  return w;
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ >= 0)
    ::close(fd_);
}

Status TensorBoardWriter::write(const StepMetrics &m) {
  std::string summary;
  auto add = [&](const std::string &name, const MetricValue &value) {
    std::optional<double> number = value.number();
    if (!number)
      return;
    std::string entry;
    appendBytesField(entry, 1, tagOf(name));
    float f = float(*number);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    appendKey(entry, 2, 5);
    appendLittleEndian(entry, bits, 4);
    appendBytesField(summary, 1, entry);
  };
  add("loss", m.loss);
  add("learning_rate", m.learningRate);
  add("grad_norm", m.gradNorm);
  add("tokens_per_second", m.tokensPerSecond);
  add("step_time_ms", m.stepTimeMs);
  for (const auto &[name, value] : m.extra)
    add(name, value);
  std::string event = eventHeader(m.time ? *m.time : now(), m.step);
  appendBytesField(event, 5, summary);
  return writeEvent(event);
}

Status TensorBoardWriter::writeEvent(const std::string &event) {
  std::string record;
  appendLittleEndian(record, event.size(), 8);
  appendLittleEndian(record, maskedCrc(record.data(), 8), 4);
  record += event;
  appendLittleEndian(record, maskedCrc(event.data(), event.size()), 4);
  if (Status s = writeAllFd(fd_, record); !s)
    return Status::error(path_ + ": write failed: " + s.message());
  return Status::success();
}

} // namespace trc::rt
