//===- trc-launch.cpp - a trc-run job that survives a lost rank -------------===//
//
// trc-launch [-n N] [--hostfile FILE] [--min-ranks M] [--max-restarts K]
//            [--launcher mpirun|srun] [--launcher-arg ARG]... -- trc-run MODEL ...
//
// Runs the job under mpirun or srun and, when a rank dies or hangs, relaunches
// it from its last checkpoint with the ranks still available
// (runtime/launch/Supervisor.h); prints each launch and each end with its
// cause. Exits with the last attempt's status. Bad options print "error: ..."
// naming the flag and exit 1.
//
//===----------------------------------------------------------------------===//
#include "runtime/launch/Supervisor.h"
#include "runtime/support/Parse.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace trc::rt;

namespace {

const char *kUsage =
    "usage: trc-launch [options] -- trc-run MODEL [trc-run flags]\n"
    "\n"
    "Runs a trc-run job on N ranks and relaunches it from its last checkpoint when a\n"
    "rank dies or hangs, with the ranks still available.\n"
    "\n"
    "  -n, --ranks N         ranks of the first launch (default: the hostfile's slots,\n"
    "                        inside a Slurm allocation SLURM_NTASKS)\n"
    "  --hostfile FILE       hosts and slots (Open MPI's format: 'host slots=N'), read\n"
    "                        again before every relaunch: a node taken out of it is not\n"
    "                        used again (mpirun)\n"
    "  --min-ranks M         relaunch with fewer ranks, down to M, when fewer are\n"
    "                        available (default: N)\n"
    "  --max-restarts K      relaunches after lost ranks (default 3; 0: none)\n"
    "  --launcher NAME       mpirun or srun (default: srun inside a Slurm allocation,\n"
    "                        else mpirun)\n"
    "  --launcher-arg ARG    passed to the launcher before the job (repeatable)\n"
    "\n"
    "A relaunch keeps the global --batch-size: with fewer data ranks --grad-accum\n"
    "grows so each rank's microbatch stays the same. It resumes with --resume auto\n"
    "once the job wrote a checkpoint (--checkpoint-dir is required when\n"
    "--max-restarts > 0). An error the job names is not retried.\n";

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

Status parseArgs(int argc, char **argv, LaunchOptions &o, bool &help) {
  auto count = [](const std::string &flag, const char *text, int64_t lo,
                  int64_t &out) -> Status {
    std::optional<int64_t> v = parseInt64(text, lo, 1 << 20);
    if (!v)
      return Status::error("option '" + flag + "': expected an integer >= " +
                           std::to_string(lo) + ", got '" + text + "'");
    out = *v;
    return Status::success();
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      o.command.assign(argv + i + 1, argv + argc);
      break;
    }
    if (arg == "-h" || arg == "--help") {
      help = true;
      return Status::success();
    }
    if (i + 1 >= argc)
      return Status::error("option '" + arg + "' needs a value (or is not an option: " +
                           "the job follows '--')");
    const char *value = argv[++i];
    Status s;
    if (arg == "-n" || arg == "--ranks")
      s = count(arg, value, 1, o.ranks);
    else if (arg == "--min-ranks")
      s = count(arg, value, 1, o.minRanks);
    else if (arg == "--max-restarts")
      s = count(arg, value, 0, o.maxRestarts);
    else if (arg == "--hostfile")
      o.hostfile = value;
    else if (arg == "--launcher-arg")
      o.launcherArgs.push_back(value);
    else if (arg == "--launcher") {
      o.launcher = value;
      if (o.launcher != "mpirun" && o.launcher != "srun")
        s = Status::error("option '--launcher': expected mpirun or srun, got '" + o.launcher + "'");
    } else
      s = Status::error("unknown option '" + arg + "' (the job follows '--')");
    if (!s)
      return s;
  }
  if (o.command.empty())
    return Status::error("no job: trc-launch [options] -- trc-run MODEL ...");
  const char *slurmJob = std::getenv("SLURM_JOB_ID");
  if (o.launcher.empty())
    o.launcher = slurmJob ? "srun" : "mpirun";
  if (o.ranks == 0 && o.hostfile.empty() && slurmJob)
    if (const char *tasks = std::getenv("SLURM_NTASKS"))
      return count("SLURM_NTASKS", tasks, 1, o.ranks).withPrefix("environment variable ");
  return Status::success();
}

std::string joined(const std::vector<std::string> &argv) {
  std::string s;
  for (const std::string &a : argv)
    s += (s.empty() ? "" : " ") + a;
  return s;
}

void print(const LaunchEvent &e, const LaunchOptions &o) {
  const std::string which = e.attempt == 0 ? std::string("launch")
                                           : "relaunch " + std::to_string(e.attempt) + " of " +
                                                 std::to_string(o.maxRestarts);
  if (e.kind == LaunchEvent::Launch) {
    std::string where = o.hostfile.empty()
                            ? ""
                            : " (" + std::to_string(e.available) + " available in " +
                                  o.hostfile + ")";
    std::string from = !e.resumed ? "" : ", resuming from the checkpoint of step " +
                                             std::to_string(e.checkpointStep);
    std::fprintf(stderr, "trc-launch: %s: %lld ranks%s, --grad-accum %lld%s: %s\n",
                 which.c_str(), static_cast<long long>(e.world.ranks), where.c_str(),
                 static_cast<long long>(e.world.gradAccum), from.c_str(),
                 joined(e.argv).c_str());
    return;
  }
  std::string checkpoint = e.checkpointStep < 0 ? "no checkpoint yet"
                                                : "last checkpoint: step " +
                                                      std::to_string(e.checkpointStep);
  std::string next;
  if (e.end.ending == Ending::RankLost)
    next = e.willRestart ? "; relaunching"
                         : "; no relaunch left (--max-restarts " +
                               std::to_string(o.maxRestarts) + ")";
  else if (e.end.ending == Ending::Error)
    next = "; not relaunched: a relaunch would meet it again";
  std::fprintf(stderr, "trc-launch: %s ended after %.1f s: %s (%s)%s\n", which.c_str(),
               e.seconds, describeEnding(e.end).c_str(), checkpoint.c_str(), next.c_str());
}

} // namespace

int main(int argc, char **argv) {
  LaunchOptions options;
  bool help = false;
  if (Status s = parseArgs(argc, argv, options, help); !s)
    return fail(std::string(s.message()));
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  StatusOr<int> status =
      superviseElastic(options, [&](const LaunchEvent &e) { print(e, options); });
  return status.ok() ? *status : fail(std::string(status.status().message()));
}
