//===- MetricsTest.cpp - JSON-lines metrics and the progress bar ------------===//
//
// Exact lines (key order, %.9g floats, shortest doubles, exact integers,
// null for NaN/inf/unset), numbers that read back bit for bit, every line
// valid JSON and on disk as soon as it is written, resuming (later steps
// and a torn line dropped), bad names, and the progress bar: silent when
// stderr is not a terminal, drawing on a pseudo-terminal.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Metrics.h"
#include "runtime/train/TensorBoard.h"

#include "runtime/formats/Json.h"

#include "StatusTesting.h"
#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <charconv>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <random>
#include <unistd.h>

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace trc::rt;
using trc::rt::test::readFile;
using trc::rt::test::TempDir;
using trc::rt::test::writeFile;

namespace {

std::string lineOf(const StepMetrics &m) {
  StatusOr<std::string> line = formatMetricsLine(m);
  EXPECT_TRUE(line.ok()) << line.status().message();
  return line.ok() ? *line : std::string();
}

std::string errorOf(const StepMetrics &m) {
  Status s = formatMetricsLine(m).status();
  return s ? std::string() : s.message();
}

// Everything readable from a non-blocking fd right now.
std::string drain(int fd) {
  std::string out;
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0)
      break;
    out.append(buf, size_t(n));
  }
  return out;
}

} // namespace

TEST(Metrics, FormatsOneLinePerStep) {
  StepMetrics m;
  m.step = 12;
  m.loss = 0.1f;
  m.learningRate = 1e-3;
  m.gradNorm = 1.5f;
  m.tokensPerSecond = 51234.5;
  m.stepTimeMs = 40.25;
  m.extra = {{"tokens", int64_t(1024)}, {"loss_scale", 65536.0f},
             {"we\"ird\n", -2}};
  EXPECT_EQ(lineOf(m),
            "{\"step\":12,\"loss\":0.100000001,\"learning_rate\":0.001,"
            "\"grad_norm\":1.5,\"tokens_per_second\":51234.5,"
            "\"step_time_ms\":40.25,\"tokens\":1024,\"loss_scale\":65536,"
            "\"we\\\"ird\\n\":-2}\n");
}

// The wall-clock time a line was written, in seconds since the epoch with
// milliseconds; the key cannot be an extra metric.
TEST(Metrics, TimeComesAfterTheFixedKeys) {
  StepMetrics m;
  m.step = 3;
  m.time = 1795776000.1234;
  m.extra = {{"tokens", int64_t(8)}};
  EXPECT_EQ(lineOf(m), "{\"step\":3,\"loss\":null,\"learning_rate\":null,"
                       "\"grad_norm\":null,\"tokens_per_second\":null,"
                       "\"step_time_ms\":null,\"time\":1795776000.123,\"tokens\":8}\n");
  m.time.reset();
  m.extra = {{"time", 1.0}};
  EXPECT_EQ(errorOf(m), "extra metric 'time' repeats a fixed key");
}

TEST(Metrics, NonFiniteAndUnsetAreNull) {
  StepMetrics m;
  m.step = 0;
  m.loss = std::numeric_limits<float>::quiet_NaN();
  m.learningRate = std::numeric_limits<double>::infinity();
  m.gradNorm = -std::numeric_limits<float>::infinity();
  m.extra = {{"x", std::nan("")}};
  std::string line = lineOf(m);
  EXPECT_EQ(line, "{\"step\":0,\"loss\":null,\"learning_rate\":null,"
                  "\"grad_norm\":null,\"tokens_per_second\":null,"
                  "\"step_time_ms\":null,\"x\":null}\n");
  EXPECT_TRUE(parseJson(line).ok());
}

TEST(Metrics, NumbersReadBackExactly) {
  std::mt19937_64 rng(99);
  for (int i = 0; i < 2000; ++i) {
    uint32_t fb = uint32_t(rng());
    uint64_t db = rng();
    float f;
    double d;
    std::memcpy(&f, &fb, 4);
    std::memcpy(&d, &db, 8);
    if (!std::isfinite(f) || !std::isfinite(d))
      continue;
    int64_t n = int64_t(rng());
    StepMetrics m;
    m.step = n;
    m.loss = f;
    m.learningRate = d;
    std::string line = lineOf(m);
    StatusOr<JsonValue> parsed = parseJson(line);
    ASSERT_TRUE(parsed.ok()) << parsed.status().message() << " in " << line;
    const JsonValue &v = *parsed;
    int64_t step;
    ASSERT_TRUE(v.find("step")->asInt64(step));
    EXPECT_EQ(step, n);
    const std::string &ft = v.find("loss")->text();
    float f2 = 0;
    std::from_chars(ft.data(), ft.data() + ft.size(), f2);
    EXPECT_EQ(std::memcmp(&f, &f2, 4), 0) << ft;
    double d2 = 0;
    ASSERT_TRUE(v.find("learning_rate")->asDouble(d2));
    EXPECT_EQ(std::memcmp(&d, &d2, 8), 0) << v.find("learning_rate")->text();
  }
  StepMetrics m;
  m.step = std::numeric_limits<int64_t>::min();
  m.extra = {{"max", std::numeric_limits<long long>::max()}};
  EXPECT_THAT(lineOf(m), HasSubstr("\"step\":-9223372036854775808,"));
  EXPECT_THAT(lineOf(m), HasSubstr("\"max\":9223372036854775807}"));
}

TEST(Metrics, RejectsBadExtraNames) {
  StepMetrics m;
  m.extra = {{"loss", 1.0}};
  EXPECT_EQ(errorOf(m), "extra metric 'loss' repeats a fixed key");
  m.extra = {{"step_time_ms", 1.0}};
  EXPECT_EQ(errorOf(m), "extra metric 'step_time_ms' repeats a fixed key");
  m.extra = {{"a", 1.0}, {"b", 2}, {"a", 3.0f}};
  EXPECT_EQ(errorOf(m), "duplicate metric 'a'");
  m.extra = {{"", 1.0}};
  EXPECT_EQ(errorOf(m), "a metric has an empty name");
}

TEST(Metrics, WriterFlushesEveryLine) {
  TempDir dir;
  std::string path = dir.file("m.jsonl");
  writeFile(path, "old contents\n");
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsWriter> w, MetricsWriter::create(path));
  EXPECT_EQ(readFile(path), "");
  for (int step = 1; step <= 3; ++step) {
    StepMetrics m;
    m.step = step;
    m.loss = float(step) / 4;
    ASSERT_TRUE(w->write(m));
    // On disk before the writer is closed.
    std::string text = readFile(path);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), step);
  }
  std::string text = readFile(path);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    EXPECT_TRUE(parseJson(std::string_view(text).substr(pos, nl - pos)).ok());
    pos = nl + 1;
  }
  StepMetrics bad;
  bad.extra = {{"loss", 1}};
  EXPECT_EQ(w->write(bad).message(),
            path + ": extra metric 'loss' repeats a fixed key");

  Status s = MetricsWriter::create(dir.file("no/such/m.jsonl")).status();
  EXPECT_THAT(s.message(),
              HasSubstr("no/such/m.jsonl: cannot open the metrics file: "
                        "No such file or directory"))
      << s.message();
}

TEST(Metrics, ResumeDropsLaterStepsAndATornLine) {
  TempDir dir;
  std::string path = dir.file("m.jsonl");
  std::string lines;
  for (int step = 1; step <= 5; ++step) {
    StepMetrics m;
    m.step = step;
    m.loss = 1.0f;
    lines += lineOf(m);
  }
  writeFile(path, lines + "{\"step\":6,\"lo");
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetricsWriter> w, MetricsWriter::resume(path, 3));
  StepMetrics m;
  m.step = 4;
  m.loss = 2.0f;
  ASSERT_TRUE(w->write(m));
  w.reset();
  std::string want;
  for (int step = 1; step <= 3; ++step) {
    StepMetrics k;
    k.step = step;
    k.loss = 1.0f;
    want += lineOf(k);
  }
  want += lineOf(m);
  EXPECT_EQ(readFile(path), want);

  // Nothing to drop: appended as it is.
  TRC_ASSERT_OK_AND_ASSIGN(w, MetricsWriter::resume(path, 100));
  m.step = 5;
  ASSERT_TRUE(w->write(m));
  w.reset();
  EXPECT_EQ(readFile(path), want + lineOf(m));

  // A missing file is created.
  TRC_ASSERT_OK_AND_ASSIGN(w, MetricsWriter::resume(dir.file("new.jsonl"), 0));
  EXPECT_EQ(readFile(dir.file("new.jsonl")), "");

  // Not a metrics file: an error, and the file is left alone.
  writeFile(path, lines + "hello\n");
  Status s = MetricsWriter::resume(path, 3).status();
  EXPECT_EQ(s.message(), path + ": line 6 is not a trc metrics line "
                                "({\"step\":N,...})");
  EXPECT_EQ(readFile(path), lines + "hello\n");
  writeFile(path, "{\"step\":x}\n");
  EXPECT_FALSE(MetricsWriter::resume(path, 3).ok());
}

TEST(Metrics, ProgressBarRendering) {
  EXPECT_EQ(ProgressBar::render(12, 100, 3.24151, 51234.4, 83),
            "step 12/100 [##..................]  12% | loss 3.2415 | 51234 "
            "tok/s | eta 1m23s");
  EXPECT_EQ(ProgressBar::render(29, 100, 1, 1, 5),
            "step 29/100 [#####...............]  29% | loss 1.0000 | 1 tok/s "
            "| eta 5s");
  EXPECT_EQ(ProgressBar::render(100, 100, 0.5, 10, 0),
            "step 100/100 [####################] 100% | loss 0.5000 | 10 tok/s "
            "| eta 0s");
  EXPECT_EQ(ProgressBar::render(0, 10, std::nan(""), 0, -1),
            "step 0/10 [....................]   0% | loss nan | 0 tok/s | eta "
            "--");
  EXPECT_EQ(ProgressBar::render(1, 3, 2, 2, 7300),
            "step 1/3 [######..............]  33% | loss 2.0000 | 2 tok/s | "
            "eta 2h01m");
}

TEST(Metrics, ProgressBarIsSilentWithoutATerminal) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK), 0);
  {
    ProgressBar bar(10, 0, fds[1]);
    EXPECT_FALSE(bar.enabled());
    for (int i = 1; i <= 10; ++i)
      bar.update(i, 1.0, 100);
    bar.clear();
    bar.finish();
  }
  EXPECT_EQ(drain(fds[0]), "");
  {
    ProgressBar bar(10, 0, fds[1], /*force=*/true);
    EXPECT_TRUE(bar.enabled());
    bar.update(1, 2.5, 100);
    std::string first = drain(fds[0]);
    EXPECT_THAT(first,
                StartsWith("\rstep 1/10 [##..................]  10% | loss "
                           "2.5000 | 100 tok/s | eta "))
        << first;
    EXPECT_EQ(first.substr(first.size() - 3), "\x1b[K");
    bar.update(2, 2.4, 100); // within 100 ms: not redrawn
    EXPECT_EQ(drain(fds[0]), "");
    bar.clear();
    EXPECT_EQ(drain(fds[0]), "\r\x1b[K");
    bar.update(10, 2.0, 100); // the last step is always drawn
    EXPECT_THAT(drain(fds[0]), HasSubstr("step 10/10"));
    bar.finish();
    EXPECT_EQ(drain(fds[0]), "\n");
    bar.finish();
  }
  EXPECT_EQ(drain(fds[0]), "");
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Metrics, WithoutATerminalAStepLineEveryNSteps) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK), 0);
  {
    ProgressBar bar(7, 0, fds[1], /*force=*/false, /*logEvery=*/3);
    EXPECT_FALSE(bar.enabled());
    for (int i = 1; i <= 7; ++i)
      bar.update(i, 3.0 - 0.25 * i, 100, i == 5 ? "eval_loss 0.5000" : "");
    bar.finish();
  }
  // Steps 3 and 6, step 5 for its note, and the last step: plain lines.
  std::string out = drain(fds[0]);
  EXPECT_THAT(out, StartsWith("step 3/7 | loss 2.2500 | 100 tok/s | eta "));
  EXPECT_THAT(out, HasSubstr("\nstep 5/7 | loss 1.7500 | 100 tok/s | eta "));
  EXPECT_THAT(out, HasSubstr("s | eval_loss 0.5000\nstep 6/7"));
  EXPECT_THAT(out, HasSubstr("\nstep 6/7 | loss 1.5000 |"));
  EXPECT_THAT(out, HasSubstr("\nstep 7/7 | loss 1.2500 | 100 tok/s | eta 0s\n"));
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 4) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(Metrics, ProgressBarDrawsOnATerminal) {
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0)
    GTEST_SKIP() << "no pseudo-terminal";
  int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(slave, 0);
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  {
    ProgressBar bar(4, 0, slave);
    EXPECT_TRUE(bar.enabled());
    bar.update(4, 1.25, 10);
  }
  std::string out = drain(master);
  EXPECT_THAT(out,
              HasSubstr("step 4/4 [####################] 100% | loss 1.2500"))
      << out;
  ::close(slave);
  ::close(master);
}

// TFRecord's checksum (TensorBoard.h): CRC-32C's check value and an empty
// input (RFC 3720's examples: 32 zero bytes, 32 bytes 0xFF).
TEST(TensorBoard, Crc32cIsCastagnoli) {
  EXPECT_EQ(trc::rt::crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(trc::rt::crc32c("", 0), 0u);
  std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(trc::rt::crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(trc::rt::crc32c(ones.data(), 32), 0x62A8AB43u);
}
