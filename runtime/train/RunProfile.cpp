//===- RunProfile.cpp - a training run's profile: record, gather, write ----===//
//
// See RunProfile.h. The gather is point to point (each rank sends its size,
// then its bytes, to rank 0) because the timelines differ in length and
// the communicators' collectives take equal counts.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/RunProfile.h"

#include "runtime/formats/FileOps.h"
#include "runtime/formats/Json.h"
#include "runtime/train/ChromeTrace.h"
#include "runtime/train/ProfileSummary.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

namespace trc::rt {

Status checkWritableFile(const std::string &path) {
  auto cannot = [&](const std::string &why) {
    return Status::error("--profile " + path + ": cannot write the trace: " + why);
  };
  if (path.empty())
    return Status::error("option '--profile' needs a file name");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return cannot("it is a folder");
    if (::access(path.c_str(), W_OK) != 0)
      return cannot(std::strerror(errno));
  }
  // The file is written atomically beside itself (a temp file and a
  // rename), so its folder must take new files.
  std::string folder = parentDirectory(path);
  if (::stat(folder.c_str(), &st) != 0)
    return cannot("folder " + folder + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return cannot(folder + " is not a folder");
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return cannot("folder " + folder + ": " + std::strerror(errno));
  return Status::success();
}

Status checkProfileTarget(const TrainerOptions &options, Communicator &world) {
  if (options.profilePath.empty())
    return Status::success();
  Status verdict = world.rank() == 0 ? checkWritableFile(options.profilePath) : Status::success();
  if (world.size() > 1) {
    int64_t ok = verdict.ok() ? 1 : 0;
    if (Status s = world.broadcast(&ok, 1, DType::I64, 0); !s)
      return s.withPrefix("--profile: ");
    if (!ok && world.rank() != 0)
      return Status::error("rank 0 cannot write the --profile file " + options.profilePath +
                           " (see its error)");
  }
  return verdict;
}

StatusOr<std::vector<RankTimeline>> gatherTimelines(Communicator &world,
                                                    const RankTimeline &mine) {
  std::vector<RankTimeline> all;
  if (world.rank() != 0) {
    std::string bytes = serializeTimeline(mine);
    int64_t size = int64_t(bytes.size());
    if (Status s = world.send(&size, 1, DType::I64, 0); !s)
      return s.withPrefix("gathering the profile: ");
    if (Status s = world.send(bytes.data(), bytes.size(), DType::U8, 0); !s)
      return s.withPrefix("gathering the profile: ");
    return all;
  }
  all.push_back(mine);
  for (int peer = 1; peer < world.size(); ++peer) {
    int64_t size = 0;
    if (Status s = world.recv(&size, 1, DType::I64, peer); !s)
      return s.withPrefix("gathering the profile: ");
    if (size < 0)
      return Status::error("gathering the profile: rank " + std::to_string(peer) +
                           " sent a negative size");
    std::string bytes(size_t(size), '\0');
    if (Status s = world.recv(bytes.data(), bytes.size(), DType::U8, peer); !s)
      return s.withPrefix("gathering the profile: ");
    StatusOr<RankTimeline> theirs = parseTimeline(bytes);
    if (!theirs.ok())
      return Status(theirs.status()).withPrefix("gathering the profile from rank " +
                                                std::to_string(peer) + ": ");
    all.push_back(*std::move(theirs));
  }
  return all;
}

std::string profileHeadline(const TrainerOptions &o, int64_t firstStep, int64_t firstRecorded,
                            int64_t lastStep) {
  // Steps are 1-based here, as the metrics number them.
  std::string text = "trc-run: profile of ";
  if (firstRecorded >= lastStep)
    text += "no steps (none ran)";
  else if (firstRecorded + 1 == lastStep)
    text += "step " + std::to_string(lastStep);
  else
    text += "steps " + std::to_string(firstRecorded + 1) + "-" + std::to_string(lastStep);
  if (firstRecorded < lastStep)
    text += firstRecorded == firstStep
                ? " (the first, warm-up step included; --profile-steps N keeps the last N)"
                : " (earlier steps, warm-up included, not recorded)";
  if (!o.profilePath.empty())
    text += "; trace in " + o.profilePath + " (open in ui.perfetto.dev or chrome://tracing)";
  return text + "\n";
}

RunProfile::RunProfile(const TrainerOptions &options)
    : options_(options), enabled_(!options.profilePath.empty() || options.profileSummary) {}

RunProfile::~RunProfile() {
  if (running_) // a run that failed: stop recording, keep nothing
    Profiler::instance().stop(), Profiler::instance().takeSpans();
}

namespace {

double processCpuSeconds() {
  timespec t{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0)
    return 0;
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Resident memory in MiB (/proc/self/statm's second field, in pages).
double residentMegabytes() {
  std::FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f)
    return 0;
  long long size = 0, resident = 0;
  int read = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return read == 2 ? double(resident) * double(::sysconf(_SC_PAGESIZE)) / (1 << 20) : 0;
}

SpanArg numberArg(const char *key, double value) {
  std::string text;
  appendJsonDouble(text, value);
  return {key, text, true};
}

} // namespace

void RunProfile::sampleUtilisation() {
  Profiler &profiler = Profiler::instance();
  if (!Profiler::recording())
    return;
  double cpu = processCpuSeconds();
  int64_t now = profiler.nowNs();
  Span sample;
  sample.name = "utilisation";
  sample.category = profile::kCounter;
  sample.startNs = now;
  double wall = double(now - lastSampleNs_) * 1e-9;
  sample.args.push_back(
      numberArg("cpu_percent", wall > 0 ? 100.0 * (cpu - lastCpuSeconds_) / wall : 0.0));
  sample.args.push_back(numberArg("rss_mb", residentMegabytes()));
  if (gpu_)
    if (StatusOr<GpuSample> g = gpu_->sample(); g.ok()) {
      sample.args.push_back(numberArg("gpu_percent", g->utilisationPercent));
      sample.args.push_back(numberArg("gpu_memory_mb", g->memoryUsedMb));
    }
  profiler.record(std::move(sample));
  lastCpuSeconds_ = cpu;
  lastSampleNs_ = now;
}

Status RunProfile::begin(DistributedRun &dist, int64_t firstStep, const std::string &gpuBusId) {
  if (!enabled_)
    return Status::success();
  if (!gpuBusId.empty()) {
    StatusOr<std::unique_ptr<NvmlDevice>> gpu = NvmlDevice::open(gpuBusId);
    if (gpu.ok())
      gpu_ = *std::move(gpu);
    else
      gpuProblem_ = std::string(gpu.status().message());
  }
  firstStep_ = firstStep;
  firstRecorded_ = options_.profileSteps > 0
                       ? std::max(firstStep, options_.steps - options_.profileSteps)
                       : firstStep;
  // The ranks leave the barrier together: the origin of every timeline.
  if (Status s = dist.barrier(); !s)
    return s.withPrefix("--profile: ");
  Profiler::instance().start();
  running_ = true;
  lastCpuSeconds_ = processCpuSeconds();
  lastSampleNs_ = Profiler::instance().nowNs();
  sampleUtilisation();
  if (firstRecorded_ > firstStep)
    Profiler::instance().pause();
  return Status::success();
}

void RunProfile::beforeStep(int64_t step) {
  if (!running_)
    return;
  if (step == firstRecorded_ && !Profiler::recording()) {
    Profiler::instance().resume();
    // The first recorded step's sample covers it alone, not the skipped ones.
    lastCpuSeconds_ = processCpuSeconds();
    lastSampleNs_ = Profiler::instance().nowNs();
  }
  sampleUtilisation();
}

Status RunProfile::finish(DistributedRun &dist) {
  if (!running_)
    return Status::success();
  Profiler &profiler = Profiler::instance();
  sampleUtilisation(); // the last step's share
  profiler.stop();
  running_ = false;
  RankTimeline mine;
  mine.rank = dist.rank();
  mine.label = "rank " + std::to_string(dist.rank()) + " (data " +
               std::to_string(dist.dataIndex()) + ", tensor " +
               std::to_string(dist.tensorIndex()) + ")";
  mine.spans = profiler.takeSpans();
  StatusOr<std::vector<RankTimeline>> all = gatherTimelines(dist.world(), mine);
  if (!all.ok())
    return all.status();
  if (!dist.isRoot())
    return Status::success();
  if (!options_.profilePath.empty())
    if (Status s = writeFileAtomic(options_.profilePath, chromeTraceJson(*all),
                                   systemFileSystem());
        !s)
      return s.withPrefix("--profile " + options_.profilePath + ": ");
  std::string text = profileHeadline(options_, firstStep_, firstRecorded_, options_.steps);
  if (!gpuProblem_.empty())
    text += "trc-run: the profile has no GPU utilisation counters: " + gpuProblem_ + "\n";
  if (options_.profileSummary)
    for (const RankTimeline &rank : *all)
      text += formatProfileSummary({summarizeTimeline(rank)});
  std::fputs(text.c_str(), stderr);
  return Status::success();
}

} // namespace trc::rt
