//===- Metrics.cpp - per-step metrics (JSON lines) and the progress bar -----===//
//
// See Metrics.h. Lines are formatted with Json.h's number spelling.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Metrics.h"

#include "runtime/formats/FileOps.h"
#include "runtime/formats/Json.h"
#include "runtime/support/Parse.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace trc::rt {

void MetricValue::appendTo(std::string &out) const {
  switch (kind_) {
  case Kind::Null:
    out += "null";
    return;
  case Kind::Int:
    appendJsonInt(out, int_);
    return;
  case Kind::F32:
    appendJsonFloat(out, f32_);
    return;
  case Kind::F64:
    appendJsonDouble(out, f64_);
    return;
  }
}

std::optional<double> MetricValue::number() const {
  switch (kind_) {
  case Kind::Null:
    return std::nullopt;
  case Kind::Int:
    return double(int_);
  case Kind::F32:
    return double(f32_);
  case Kind::F64:
    return f64_;
  }
  return std::nullopt;
}

namespace {

constexpr const char *kFixedKeys[] = {"step",         "loss",
                                      "learning_rate", "grad_norm",
                                      "tokens_per_second", "step_time_ms",
                                      "time"};

// Largest metrics file resume() reads back.
constexpr size_t kMaxMetricsFile = size_t(4) << 30;


// The step of a line written by formatMetricsLine.
bool lineStep(std::string_view line, int64_t &step) {
  constexpr std::string_view prefix = "{\"step\":";
  if (line.substr(0, prefix.size()) != prefix)
    return false;
  size_t end = line.find_first_of(",}", prefix.size());
  if (end == std::string_view::npos)
    return false;
  std::optional<int64_t> v =
      parseInt64(line.substr(prefix.size(), end - prefix.size()));
  if (v)
    step = *v;
  return v.has_value();
}

} // namespace

StatusOr<std::string> formatMetricsLine(const StepMetrics &m) {
  for (size_t i = 0; i < m.extra.size(); ++i) {
    const std::string &name = m.extra[i].first;
    if (name.empty())
      return Status::error("a metric has an empty name");
    for (const char *k : kFixedKeys)
      if (name == k)
        return Status::error("extra metric '" + name +
                             "' repeats a fixed key");
    for (size_t j = 0; j < i; ++j)
      if (m.extra[j].first == name)
        return Status::error("duplicate metric '" + name + "'");
  }
  std::string line = "{\"step\":";
  appendJsonInt(line, m.step);
  line += ",\"loss\":";
  m.loss.appendTo(line);
  line += ",\"learning_rate\":";
  m.learningRate.appendTo(line);
  line += ",\"grad_norm\":";
  m.gradNorm.appendTo(line);
  line += ",\"tokens_per_second\":";
  m.tokensPerSecond.appendTo(line);
  line += ",\"step_time_ms\":";
  m.stepTimeMs.appendTo(line);
  if (m.time) {
    line += ",\"time\":";
    char text[32]; // milliseconds are enough for a log, and fit a double exactly
    std::snprintf(text, sizeof text, "%.3f", *m.time);
    line += text;
  }
  for (const auto &kv : m.extra) {
    line += ',';
    appendJsonString(line, kv.first);
    line += ':';
    kv.second.appendTo(line);
  }
  line += "}\n";
  return line;
}

//===----------------------------------------------------------------------===//
// MetricsWriter
//===----------------------------------------------------------------------===//

// The descriptor of `path` opened for appending.
static StatusOr<int> openAppend(const std::string &path, bool truncate) {
  int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC;
  if (truncate)
    flags |= O_TRUNC;
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0)
    return Status::error(path + ": cannot open the metrics file: " +
                         std::strerror(errno));
  return fd;
}

StatusOr<std::unique_ptr<MetricsWriter>> MetricsWriter::create(const std::string &path) {
  std::unique_ptr<MetricsWriter> w(new MetricsWriter());
  w->path_ = path;
  StatusOr<int> fd = openAppend(path, /*truncate=*/true);
  if (!fd.ok())
    return fd.status();
  w->fd_ = *fd;
  return w;
}

StatusOr<std::unique_ptr<MetricsWriter>> MetricsWriter::resume(const std::string &path,
                                                               int64_t lastStep) {
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT)
    return create(path);
  StatusOr<std::string> read = readSmallFile(path, kMaxMetricsFile);
  if (!read.ok())
    return read.status();
  const std::string &text = *read;
  std::string kept;
  bool dropped = false;
  size_t pos = 0;
  int64_t lineNo = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    ++lineNo;
    if (nl == std::string::npos) { // torn last line
      dropped = true;
      break;
    }
    std::string_view line(text.data() + pos, nl - pos);
    int64_t step;
    if (!lineStep(line, step))
      return Status::error(path + ": line " + std::to_string(lineNo) +
                           " is not a trc metrics line ({\"step\":N,...})");
    if (step <= lastStep)
      kept.append(line).push_back('\n');
    else
      dropped = true;
    pos = nl + 1;
  }
  if (dropped)
    if (Status s = writeFileAtomic(path, kept, systemFileSystem()); !s)
      return s;
  std::unique_ptr<MetricsWriter> w(new MetricsWriter());
  w->path_ = path;
  StatusOr<int> fd = openAppend(path, /*truncate=*/false);
  if (!fd.ok())
    return fd.status();
  w->fd_ = *fd;
  return w;
}

MetricsWriter::~MetricsWriter() {
  if (fd_ >= 0)
    ::close(fd_);
}

Status MetricsWriter::write(const StepMetrics &m) {
  StatusOr<std::string> line = formatMetricsLine(m);
  if (!line.ok())
    return Status(line.status()).withPrefix(path_ + ": ");
  if (Status s = writeAllFd(fd_, *line); !s)
    return Status::error(path_ + ": write failed: " + s.message());
  return Status::success();
}

//===----------------------------------------------------------------------===//
// ProgressBar
//===----------------------------------------------------------------------===//

ProgressBar::ProgressBar(int64_t totalSteps, int64_t firstStep, int fd,
                         bool force, int64_t logEvery)
    : total_(totalSteps), first_(firstStep), fd_(fd),
      enabled_(force || ::isatty(fd) == 1), logEvery_(logEvery),
      start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() { finish(); }

static std::string durationText(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "--";
  int64_t s = int64_t(seconds + 0.5);
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof(buf), "%llds", (long long)s);
  else if (s < 3600)
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", (long long)(s / 60),
                  (long long)(s % 60));
  else
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", (long long)(s / 3600),
                  (long long)(s / 60 % 60));
  return buf;
}

std::string ProgressBar::render(int64_t stepsDone, int64_t totalSteps,
                                double loss, double tokensPerSecond,
                                double etaSeconds, bool withBar) {
  constexpr int64_t kWidth = 20;
  int64_t done = stepsDone < 0 ? 0 : stepsDone;
  if (totalSteps <= 0 || done > totalSteps)
    done = totalSteps > 0 ? totalSteps : 1;
  int64_t total = totalSteps > 0 ? totalSteps : 1;
  int64_t filled = done * kWidth / total;
  int percent = int(done * 100 / total);
  std::string bar(size_t(filled), '#');
  bar.append(size_t(kWidth - filled), '.');
  char progress[64] = "";
  if (withBar)
    std::snprintf(progress, sizeof(progress), " [%s] %3d%%", bar.c_str(),
                  percent);
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "step %lld/%lld%s | loss %.4f | %.0f tok/s | eta %s",
                (long long)stepsDone, (long long)totalSteps, progress, loss,
                tokensPerSecond, durationText(etaSeconds).c_str());
  return buf;
}

void ProgressBar::draw(const std::string &text) {
  std::string out = "\r" + text + "\x1b[K";
  writeAllFd(fd_, out).ok();
  drawn_ = true;
}

void ProgressBar::update(int64_t stepsDone, double loss,
                         double tokensPerSecond, const std::string &note) {
  if (finished_)
    return;
  auto now = std::chrono::steady_clock::now();
  bool last = stepsDone >= total_;
  bool logLine = !enabled_ && logEvery_ > 0 &&
                 (last || stepsDone % logEvery_ == 0);
  if (!enabled_ && !logLine && note.empty())
    return;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double eta = -1;
  if (stepsDone > first_)
    eta = elapsed / double(stepsDone - first_) * double(total_ - stepsDone);
  if (!enabled_ || !note.empty()) { // a line of its own
    clear();
    std::string line = render(stepsDone, total_, loss, tokensPerSecond, eta,
                              /*bar=*/false);
    writeAllFd(fd_, line + (note.empty() ? "" : " | " + note) + "\n").ok();
    if (!enabled_)
      return;
  }
  if (drawn_ && !last && now - lastDraw_ < std::chrono::milliseconds(100))
    return;
  lastDraw_ = now;
  last_ = render(stepsDone, total_, loss, tokensPerSecond, eta);
  draw(last_);
}

void ProgressBar::clear() {
  if (!enabled_ || !drawn_ || finished_)
    return;
  writeAllFd(fd_, "\r\x1b[K").ok();
  drawn_ = false;
}

void ProgressBar::finish() {
  if (!enabled_ || finished_)
    return;
  finished_ = true;
  if (drawn_)
    writeAllFd(fd_, "\n").ok();
}

} // namespace trc::rt
