//===- Calibrate.cpp - trc-run --calibrate (Calibrate.h) --------------------===//
//
// Shapes: the products a GPT-style layer runs at batch x sequence of 64 to
// 4096 tokens, hidden 64 to 1024 (projections, MLP, per-head attention
// batches), each in its forward and two backward forms. Collective sizes:
// 4 KiB to 8 MiB tensors. Memory: the node's physical memory
// (sysconf). Everything is f32, what trc's CPU backend trains in.
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/Calibrate.h"

#include "absl/strings/str_join.h"

#include "runtime/backends/cpu/Blas.h"
#include "runtime/formats/FileOps.h"
#include "runtime/formats/Json.h"
#include "runtime/support/ThreadPool.h"
#include "trc/Plan/ProfileFile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sys/stat.h>
#include <unistd.h>

namespace trc {
namespace {

using rt::Status;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

rt::StatusOr<double> maxOverRanks(rt::Communicator &world, double value) {
  double out = value;
  if (world.size() > 1)
    if (Status s = world.allReduce(&value, &out, 1, rt::DType::F64, rt::ReduceOp::Max); !s)
      return s;
  return out;
}

// One product as training runs it: C[M,N] = op(A)[M,K] op(B)[K,N].
struct MatmulCall {
  int64_t m, n, k, batch;
  bool transA, transB;
};

rt::StatusOr<plan::MatmulSample> timeMatmul(rt::Communicator &world, const MatmulCall &c,
                                            double window) {
  std::vector<float> a(size_t(c.batch * c.m * c.k), 0.5f), b(size_t(c.batch * c.k * c.n), 0.25f),
      out(size_t(c.batch * c.m * c.n));
  int64_t lda = c.transA ? c.m : c.k, ldb = c.transB ? c.k : c.n;
  rt::StatusOr<double> t = timeOnEveryRank(world, window, [&] {
    trc_rt_matmul_f32(c.batch, c.m, c.n, c.k, a.data(), lda, c.m * c.k, c.transA, b.data(), ldb,
                      c.k * c.n, c.transB, out.data(), c.n, c.m * c.n);
  });
  if (!t.ok())
    return t.status();
  return plan::MatmulSample{double(c.m), double(c.n), double(c.k), double(c.batch), *t};
}

std::vector<MatmulCall> matmulCalls() {
  // (tokens or rows, out, in, batch) of forward products.
  const int64_t shapes[][4] = {
      {1024, 768, 256, 1}, {1024, 256, 256, 1}, {1024, 1024, 256, 1}, {1024, 256, 1024, 1},
      {256, 768, 256, 1},  {128, 256, 1024, 1}, {4096, 1024, 1024, 1}, {512, 512, 512, 1},
      {64, 64, 32, 128},   {64, 32, 64, 128},   {128, 128, 64, 32},   {64, 128, 256, 1},
      {2048, 384, 128, 1}, {256, 64, 64, 64}};
  std::vector<MatmulCall> calls;
  for (const auto &s : shapes) {
    int64_t m = s[0], n = s[1], k = s[2], batch = s[3];
    calls.push_back({m, n, k, batch, false, false}); // C = A B
    calls.push_back({m, k, n, batch, false, true});  // dA = dC B^T
    calls.push_back({k, n, m, batch, true, false});  // dB = A^T dC
  }
  return calls;
}

// The runtime-only build's stand-in for compiled kernels: y = a x + y over
// the thread pool, 3 unfused "ops" worth of traffic per element pass.
plan::KernelSample streamSample(rt::Communicator &world, int64_t elements, double window,
                                Status &error) {
  std::vector<float> x(size_t(elements), 1.0f), y(size_t(elements), 2.0f);
  int64_t chunks = std::max<int64_t>(1, rt::threadCount());
  rt::StatusOr<double> t = timeOnEveryRank(world, window, [&] {
    rt::parallelFor(chunks, [&](int64_t c) {
      int64_t lo = elements * c / chunks, hi = elements * (c + 1) / chunks;
      for (int64_t i = lo; i < hi; ++i)
        y[size_t(i)] = 0.5f * x[size_t(i)] + y[size_t(i)];
    });
  });
  if (!t.ok()) {
    error = t.status();
    return {};
  }
  return {1, 12.0 * double(elements), *t};
}

// Latency + bytes / bandwidth of one collective in groups of `g`.
struct CollectiveFits {
  std::map<std::string, std::map<int, plan::LinkFit>> fits;
  std::vector<std::string> samples; // JSON rows for the profile
};

const size_t kCollectiveBytes[] = {4096, 65536, 1 << 20, 8 << 20};

rt::StatusOr<double> timeCollective(rt::Communicator &world, rt::Communicator &group,
                                    const std::function<Status()> &call, size_t bytes) {
  int reps = bytes <= 65536 ? 40 : bytes <= (1 << 20) ? 10 : 4;
  if (Status s = world.barrier(); !s)
    return s;
  if (Status s = call(); !s) // warm-up: connections, buffers
    return s;
  if (Status s = group.barrier(); !s)
    return s;
  auto start = Clock::now();
  for (int i = 0; i < reps; ++i)
    if (Status s = call(); !s)
      return s;
  return maxOverRanks(world, since(start) / reps);
}

Status measureCollectives(rt::Communicator &world, CollectiveFits &out) {
  int n = world.size();
  for (int g = 2; g <= n; ++g) {
    if (n % g)
      continue;
    rt::StatusOr<std::unique_ptr<rt::Communicator>> split = world.split(world.rank() / g,
                                                                        world.rank());
    if (!split.ok())
      return split.status();
    rt::Communicator &group = **split;
    std::map<std::string, std::vector<plan::TransferSample>> samples;
    for (size_t bytes : kCollectiveBytes) {
      size_t count = bytes / 4, part = count / size_t(g);
      std::vector<float> send(count, 1.0f), recv(count, 0.0f);
      std::pair<const char *, std::function<Status()>> ops[] = {
          {"all_reduce",
           [&] { return group.allReduce(send.data(), recv.data(), count, rt::DType::F32,
                                        rt::ReduceOp::Sum); }},
          {"all_gather",
           [&] { return group.allGather(send.data(), recv.data(), part, rt::DType::F32); }},
          {"reduce_scatter",
           [&] { return group.reduceScatter(send.data(), recv.data(), part, rt::DType::F32,
                                            rt::ReduceOp::Sum); }}};
      for (auto &[name, call] : ops) {
        rt::StatusOr<double> t = timeCollective(world, group, call, bytes);
        if (!t.ok())
          return t.status();
        samples[name].push_back({double(bytes), *t});
      }
      if (g == 2) { // point-to-point: half a ping-pong between the pair
        int peer = group.rank() ^ 1;
        auto pingPong = [&]() -> Status {
          if (group.rank() == 0) {
            if (Status s = group.send(send.data(), count, rt::DType::F32, peer); !s)
              return s;
            return group.recv(recv.data(), count, rt::DType::F32, peer);
          }
          if (Status s = group.recv(recv.data(), count, rt::DType::F32, peer); !s)
            return s;
          return group.send(send.data(), count, rt::DType::F32, peer);
        };
        rt::StatusOr<double> t = timeCollective(world, group, pingPong, bytes);
        if (!t.ok())
          return t.status();
        samples["p2p"].push_back({double(bytes), *t / 2});
      }
    }
    for (const auto &[op, list] : samples) {
      out.fits[op][g] = plan::fitLink(list);
      for (const plan::TransferSample &s : list) {
        std::string row = "[\"" + op + "\", ";
        rt::appendJsonInt(row, g);
        row += ", ";
        rt::appendJsonDouble(row, s.bytes);
        row += ", ";
        rt::appendJsonDouble(row, s.seconds);
        out.samples.push_back(row + "]");
      }
    }
  }
  return Status::success();
}

std::string hostName() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0)
    return "this machine";
  return host;
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::localtime(&now));
  return buf;
}

} // namespace

rt::StatusOr<double> timeOnEveryRank(rt::Communicator &world, double window,
                                     const std::function<void()> &body) {
  body(); // warm-up: page faults, BLAS buffers, the thread pools
  // The median of 3 windows: one window that another process disturbed
  // (a shared machine) does not decide the constant.
  double perCall[3];
  for (double &t : perCall) {
    if (Status s = world.barrier(); !s)
      return s;
    auto start = Clock::now();
    int64_t calls = 0;
    while (calls < 2 || since(start) < window) {
      body();
      ++calls;
    }
    t = since(start) / double(calls);
  }
  std::sort(perCall, perCall + 3);
  return maxOverRanks(world, perCall[1]);
}

Status runCalibration(const CalibrateOptions &o, const KernelProbe &probe) {
  if (o.device != "cpu")
    return Status::error("--calibrate: --device " + o.device +
                         ": only the CPU is calibrated yet (GPU profiles are spec sheets: "
                         "a100-40gb, a100-80gb, h100-80gb, h200)");
  rt::StatusOr<std::unique_ptr<rt::Communicator>> created = rt::createCommunicator("auto");
  if (!created.ok())
    return created.status();
  rt::Communicator &world = **created;
  const bool root = world.rank() == 0;
  // Read what is there first: a malformed file stops before minutes of work.
  plan::DeviceProfile profile;
  struct stat st;
  if (!o.outPath.empty() && ::stat(o.outPath.c_str(), &st) == 0) {
    if (Status s = plan::readDeviceProfile(o.outPath, profile); !s)
      return s.withPrefix("--calibrate-out ");
    if (profile.kind != "cpu")
      return Status::error("--calibrate-out " + o.outPath + ": key 'device': the file profiles '" +
                           profile.kind + "', this run calibrates 'cpu'");
  } else {
    plan::deviceProfile("cpu", profile);
  }
  auto log = [&](const char *fmt, auto... args) {
    if (root)
      std::fprintf(stderr, fmt, args...);
  };
  log("trc-run: --calibrate: %d rank%s on %s, %d thread%s per rank\n", world.size(),
      world.size() == 1 ? "" : "s", hostName().c_str(), rt::threadCount(),
      rt::threadCount() == 1 ? "" : "s");

  plan::MeasuredConstants m;
  m.ranks = world.size();
  m.threads = rt::threadCount();
  std::vector<plan::MatmulSample> matmuls;
  std::vector<std::string> matmulRows;
  for (const MatmulCall &c : matmulCalls()) {
    rt::StatusOr<plan::MatmulSample> s = timeMatmul(world, c, o.windowSeconds);
    if (!s.ok())
      return s.status();
    matmuls.push_back(*s);
    std::string row = "[";
    for (double v : {s->m, s->n, s->k, s->batch})
      rt::appendJsonInt(row, int64_t(v)), row += ", ";
    rt::appendJsonDouble(row, s->seconds);
    matmulRows.push_back(row + "]");
  }
  m.matmul = plan::fitMatmul(matmuls, 4);

  std::vector<plan::KernelSample> kernels;
  std::vector<std::string> kernelRows;
  for (int64_t rows : {64, 512, 2048}) {
    plan::KernelSample k;
    if (probe) {
      rt::StatusOr<plan::KernelSample> s = probe(rows, world);
      if (!s.ok())
        return s.status();
      k = *s;
    } else {
      Status error;
      k = streamSample(world, rows * 1024, o.windowSeconds, error);
      if (!error)
        return error;
    }
    kernels.push_back(k);
    std::string row = "[";
    rt::appendJsonDouble(row, k.ops);
    row += ", ";
    rt::appendJsonDouble(row, k.bytes);
    row += ", ";
    rt::appendJsonDouble(row, k.seconds);
    kernelRows.push_back(row + "]");
  }
  plan::fitKernels(kernels, m);
  m.kernelProbe = probe ? "compiled" : "stream";
  { // 2 x 64 MiB: beyond the caches, as the optimizer's arrays are
    Status error;
    plan::KernelSample big = streamSample(world, int64_t(16) << 20, o.windowSeconds, error);
    if (!error)
      return error;
    m.streamBytesPerSecond = big.bytes / big.seconds;
  }

  CollectiveFits collectives;
  if (world.size() > 1)
    if (Status s = measureCollectives(world, collectives); !s)
      return s;
  m.collectives = collectives.fits;
  m.samplesJson = "{\"matmul_m_n_k_batch_s\": [" + absl::StrJoin(matmulRows, ", ") +
                  "], \"kernels_ops_bytes_s\": [" + absl::StrJoin(kernelRows, ", ") +
                  "], \"collectives_op_ranks_bytes_s\": [" + absl::StrJoin(collectives.samples, ", ") + "]}";
  if (!root)
    return Status::success();

  profile.source = "trc-run --calibrate on " + hostName() + ", " + today();
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && pageSize > 0)
    profile.nodeMemoryBytes = double(pages) * double(pageSize);
  profile.nodeCores = int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  plan::mergeMeasured(profile, m);
  std::string json = plan::deviceProfileJson(profile);

  std::vector<std::vector<double>> predicted;
  std::vector<double> measured;
  for (const plan::MatmulSample &s : matmuls) {
    predicted.push_back({m.matmul.seconds(2 * s.m * s.n * s.k * s.batch,
                                          4 * (s.m * s.k + s.k * s.n + s.m * s.n) * s.batch,
                                          s.batch)});
    measured.push_back(s.seconds);
  }
  double fitError = plan::meanRelativeError(predicted, measured, {1.0});
  log("  matmul: %.1f GFLOP/s, %s, %.2f us per call (fit over %zu products, mean error %.1f%%)\n",
      m.matmul.flopsPerSecond / 1e9,
      m.matmul.bytesPerSecond > 0
          ? (std::to_string(int(m.matmul.bytesPerSecond / 1e9)) + " GB/s of operands").c_str()
          : "no bytes term",
      m.matmul.callSeconds * 1e6, matmuls.size(), 100 * fitError);
  // Products of one library follow one law closely; a poor fit means the
  // timings were disturbed (another process on the cores).
  if (fitError > 0.10)
    log("warning: --calibrate: the products fit their law only within %.0f%%: another process "
        "may have shared the cores; calibrate again on a quiet machine\n",
        100 * fitError);
  log("  kernels (%s probe): %.1f GB/s of unfused traffic, %.2f us per op; streaming %.1f GB/s\n",
      m.kernelProbe.c_str(), m.kernelBytesPerSecond / 1e9, m.kernelOpSeconds * 1e6,
      m.streamBytesPerSecond / 1e9);
  for (const auto &[op, byGroup] : m.collectives)
    for (const auto &[g, fit] : byGroup)
      log("  %s over %d ranks: %.1f us + bytes / %.2f GB/s\n", op.c_str(), g, fit.latency * 1e6,
          fit.bandwidth / 1e9);
  if (o.outPath.empty()) {
    std::fputs(json.c_str(), stdout);
    return Status::success();
  }
  if (Status s = rt::writeFileAtomic(o.outPath, json, rt::systemFileSystem()); !s)
    return s.withPrefix("--calibrate-out " + o.outPath + ": ");
  log("trc-run: --calibrate: wrote the %d-rank entry of %s\n", m.ranks, o.outPath.c_str());
  return Status::success();
}

} // namespace trc
