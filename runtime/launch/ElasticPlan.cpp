//===- ElasticPlan.cpp - what an elastic relaunch decides -----------------===//
#include "runtime/launch/ElasticPlan.h"

#include "runtime/spec/ParallelPlan.h"
#include "runtime/support/ExitCodes.h"
#include "runtime/support/Parse.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/RunFlags.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

namespace trc::rt {
namespace {

// trc-run's flags a relaunch reads or rewrites; which of the job's flags
// take a value is trc-run's table (runtime/train/RunFlags.h).
constexpr const char *kCheckpointDir = "--checkpoint-dir";
constexpr const char *kBatchSize = "--batch-size";
constexpr const char *kGradAccum = "--grad-accum";
constexpr const char *kConfig = "--config";
constexpr const char *kResume = "--resume";
constexpr const char *kOverwrite = "--overwrite-checkpoints";

// Splits "--flag=value"; `flag` alone otherwise.
std::pair<std::string, std::optional<std::string>> splitFlag(const std::string &arg) {
  size_t eq = arg.find('=');
  if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
    return {arg, std::nullopt};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

bool takesValue(const std::string &flag) {
  const RunFlag *known = findRunFlag(flag);
  return known && known->arity == FlagArity::Value;
}

} // namespace

StatusOr<JobCommand> readJobCommand(const std::vector<std::string> &command) {
  if (command.empty())
    return Status::error("no command to launch (trc-launch [options] -- trc-run MODEL ...)");
  JobCommand job;
  std::optional<std::string> batch, accum;
  for (size_t i = 1; i < command.size(); ++i) {
    auto [flag, inlineValue] = splitFlag(command[i]);
    if (!takesValue(flag))
      continue;
    std::string value;
    if (inlineValue)
      value = *inlineValue;
    else if (i + 1 < command.size())
      value = command[++i];
    else
      return Status::error("the job's option '" + flag + "' needs a value");
    if (flag == kCheckpointDir)
      job.checkpointDir = value;
    else if (flag == kConfig)
      job.config = value;
    else if (flag == kBatchSize)
      batch = value;
    else if (flag == kGradAccum)
      accum = value;
  }
  auto positive = [](const char *flag, const std::optional<std::string> &text,
                     int64_t &out) -> Status {
    if (!text)
      return Status::success();
    std::optional<int64_t> v = parseInt64(*text, 1);
    if (!v)
      return Status::error(std::string("the job's option '") + flag +
                           "': expected a positive integer, got '" + *text + "'");
    out = *v;
    return Status::success();
  };
  if (!batch)
    return Status::error("the job has no --batch-size: a relaunch keeps the global batch, so "
                         "the command must name it");
  if (Status s = positive(kBatchSize, batch, job.batchSize); !s)
    return s;
  if (Status s = positive(kGradAccum, accum, job.gradAccum); !s)
    return s;
  return job;
}

StatusOr<std::vector<Host>> readHostfile(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::vector<Host> hosts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    Host host;
    if (!(words >> host.name))
      continue;
    for (std::string word; words >> word;) {
      auto [key, value] = splitFlag("--" + word);
      std::optional<int64_t> slots =
          key == "--slots" && value ? parseInt64(*value, 1, 1 << 20) : std::nullopt;
      if (!slots)
        return Status::error(path + ":" + std::to_string(number) + ": '" + word +
                             "': expected slots=N (N >= 1)");
      host.slots = *slots;
    }
    hosts.push_back(host);
  }
  if (hosts.empty())
    return Status::error(path + ": no hosts");
  return hosts;
}

int64_t totalSlots(const std::vector<Host> &hosts) {
  int64_t n = 0;
  for (const Host &h : hosts)
    n += h.slots;
  return n;
}

StatusOr<WorldChoice> chooseWorld(int64_t available, const LaunchOptions &options,
                                  const JobCommand &job) {
  const int64_t first = options.ranks;
  const int64_t least = options.minRanks > 0 ? options.minRanks : first;
  // A rank's microbatch in the first launch: what must not grow.
  auto dataDegree = [&](int64_t world) -> std::optional<int64_t> {
    if (job.config.empty() || job.config == "auto")
      return world; // no model parallelism given (auto plans for the world it gets)
    StatusOr<ParallelPlan> plan = parseParallelPlan(job.config, int(world));
    if (!plan.ok())
      return std::nullopt;
    return plan->dataDegree();
  };
  std::optional<int64_t> firstData = dataDegree(first);
  if (!firstData)
    return Status::error("the job's --config is not a plan for its first " +
                         std::to_string(first) + " ranks");
  const int64_t microbatch = job.batchSize / (*firstData * job.gradAccum);
  for (int64_t world = std::min(available, first); world >= least && world >= 1; --world) {
    std::optional<int64_t> data = dataDegree(world);
    if (!data || job.batchSize % *data != 0)
      continue;
    // The fewest accumulation steps whose microbatch is no larger than the
    // first launch's.
    const int64_t rows = job.batchSize / *data;
    for (int64_t accum = 1; accum <= rows; ++accum)
      if (rows % accum == 0 && rows / accum <= microbatch)
        return WorldChoice{world, accum};
  }
  return Status::error(std::to_string(available) + " rank(s) available and --min-ranks " +
                       std::to_string(least) + ": no world between them fits the job " +
                       "(its --config's degrees must divide it and --batch-size " +
                       std::to_string(job.batchSize) + " must split over its data ranks)");
}

AttemptEnd classifyEnding(int waitStatus, bool interrupted) {
  AttemptEnd end;
  if (WIFSIGNALED(waitStatus)) {
    end.signal = WTERMSIG(waitStatus);
    end.exitStatus = kExitSignalBase + end.signal;
  } else {
    end.exitStatus = WEXITSTATUS(waitStatus);
    if (end.exitStatus > kExitSignalBase)
      end.signal = end.exitStatus - kExitSignalBase;
  }
  if (interrupted)
    end.ending = Ending::Interrupted;
  else if (end.exitStatus == 0)
    end.ending = Ending::Finished;
  else if (end.exitStatus == kExitRankLost || end.signal != 0)
    end.ending = Ending::RankLost;
  else
    end.ending = Ending::Error;
  return end;
}

std::string describeEnding(const AttemptEnd &end) {
  switch (end.ending) {
  case Ending::Finished:
    return "finished";
  case Ending::Interrupted:
    return "stopped by a signal to trc-launch (exit status " +
           std::to_string(end.exitStatus) + ")";
  case Ending::Error:
    return "an error the job named (exit status " + std::to_string(end.exitStatus) + ")";
  case Ending::RankLost:
    if (end.signal)
      return "a rank was killed by signal " + std::to_string(end.signal) + " (" +
             strsignal(end.signal) + ")";
    return "a rank ended because another was lost, stopped or silent (exit status " +
           std::to_string(end.exitStatus) + ")";
  }
  return "";
}

std::vector<std::string> launchCommand(const LaunchOptions &options, const WorldChoice &world,
                                       bool resume) {
  std::vector<std::string> argv;
  const std::string n = std::to_string(world.ranks);
  if (options.launcher == "srun") {
    argv = {"srun", "-n", n};
  } else {
    argv = {"mpirun", "-np", n};
    if (!options.hostfile.empty())
      argv.insert(argv.end(), {"--hostfile", options.hostfile});
  }
  argv.insert(argv.end(), options.launcherArgs.begin(), options.launcherArgs.end());
  const std::vector<std::string> &job = options.command;
  argv.push_back(job[0]);
  for (size_t i = 1; i < job.size(); ++i) {
    auto [flag, inlineValue] = splitFlag(job[i]);
    // A value travels with its flag: one that looks like a flag is never
    // taken for one.
    bool separateValue = !inlineValue && takesValue(flag) && i + 1 < job.size();
    if (flag == kGradAccum) {
      if (separateValue)
        ++i;
      continue;
    }
    if (resume && flag == kOverwrite)
      continue;
    if (resume && flag == kResume) {
      if (!inlineValue && i + 1 < job.size() && job[i + 1] == "auto")
        ++i;
      continue;
    }
    argv.push_back(job[i]);
    if (separateValue)
      argv.push_back(job[++i]);
  }
  argv.insert(argv.end(), {kGradAccum, std::to_string(world.gradAccum)});
  if (resume)
    argv.insert(argv.end(), {kResume, "auto"});
  return argv;
}

int64_t lastCheckpointStep(const std::string &checkpointDir) {
  if (checkpointDir.empty())
    return -1;
  StatusOr<int64_t> step = latestCheckpointStep(checkpointDir);
  return step.ok() ? *step : -1;
}

} // namespace trc::rt
