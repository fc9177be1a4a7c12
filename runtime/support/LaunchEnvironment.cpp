//===- LaunchEnvironment.cpp - rank and world size from the launcher --------===//
//
// See LaunchEnvironment.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/LaunchEnvironment.h"

#include "runtime/support/Parse.h"

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace trc::rt {

namespace {

const char *get(const char *name) { return ::getenv(name); }

// "NAME='value'" for messages.
std::string quoted(const char *name, const char *value) {
  return std::string(name) + "='" + value + "'";
}

// A decimal integer in [0, INT_MAX], digits only.
bool parseNonNegative(std::string_view text, int &out) {
  std::optional<uint64_t> v = parseUint64(text, INT_MAX);
  if (v)
    out = static_cast<int>(*v);
  return v.has_value();
}

// Reads variable `name` (which must be set) as an integer >= min.
Status readInt(const char *name, int min, int &out) {
  const char *value = get(name);
  if (!parseNonNegative(value, out))
    return Status::error("environment variable " + quoted(name, value) +
                         " is not a non-negative decimal integer");
  if (out < min)
    return Status::error("environment variable " + quoted(name, value) +
                         " must be at least " + std::to_string(min));
  return Status::success();
}

Status rankBelowSize(const char *rankName, int rank, const char *sizeName,
                     int size) {
  if (rank >= size)
    return Status::error("environment variable " + std::string(rankName) +
                         "=" + std::to_string(rank) + " is not below " +
                         sizeName + "=" + std::to_string(size));
  return Status::success();
}

// Either both or neither of a rank and its size variable.
Status pairSet(const char *a, const char *b, bool &set) {
  bool hasA = get(a) != nullptr, hasB = get(b) != nullptr;
  if (hasA != hasB)
    return Status::error("environment variable " +
                         std::string(hasA ? a : b) + " is set but " +
                         (hasA ? b : a) + " is not");
  set = hasA;
  return Status::success();
}

// Tasks on node `node` from a Slurm list like "2(x3),1" (nodes 0-2 run 2
// tasks, node 3 runs 1).
Status tasksOnNode(const char *name, int node, int &out) {
  const char *value = get(name);
  std::string_view text(value);
  auto malformed = [&] {
    return Status::error("environment variable " + quoted(name, value) +
                         " is not a Slurm task count list (like 2(x3),1)");
  };
  int64_t first = 0; // index of the first node of the current item
  while (true) {
    size_t end = text.find(',');
    std::string_view item = text.substr(0, end);
    int tasks = 0, repeat = 1;
    size_t paren = item.find('(');
    if (paren == std::string_view::npos) {
      if (!parseNonNegative(item, tasks))
        return malformed();
    } else {
      if (item.size() < paren + 4 || item.substr(paren, 2) != "(x" ||
          item.back() != ')' ||
          !parseNonNegative(item.substr(0, paren), tasks) ||
          !parseNonNegative(item.substr(paren + 2, item.size() - paren - 3),
                            repeat) ||
          repeat < 1)
        return malformed();
    }
    if (node < first + repeat) {
      out = tasks;
      return Status::success();
    }
    first += repeat;
    if (end == std::string_view::npos)
      break;
    text = text.substr(end + 1);
  }
  return Status::error("environment variable SLURM_NODEID=" +
                       std::to_string(node) + " is beyond the " +
                       std::to_string(first) + " node(s) of " +
                       quoted(name, value));
}

Status readOpenMpi(LaunchEnvironment &env) {
  env.launcher = Launcher::OpenMpi;
  if (Status s = readInt("OMPI_COMM_WORLD_SIZE", 1, env.size); !s)
    return s;
  if (Status s = readInt("OMPI_COMM_WORLD_RANK", 0, env.rank); !s)
    return s;
  if (Status s = rankBelowSize("OMPI_COMM_WORLD_RANK", env.rank,
                               "OMPI_COMM_WORLD_SIZE", env.size);
      !s)
    return s;
  bool local = false;
  if (Status s = pairSet("OMPI_COMM_WORLD_LOCAL_RANK",
                         "OMPI_COMM_WORLD_LOCAL_SIZE", local);
      !s)
    return s;
  if (!local) {
    env.localRank = 0;
    env.localSize = 0;
    return Status::success();
  }
  if (Status s = readInt("OMPI_COMM_WORLD_LOCAL_SIZE", 1, env.localSize); !s)
    return s;
  if (Status s = readInt("OMPI_COMM_WORLD_LOCAL_RANK", 0, env.localRank); !s)
    return s;
  if (Status s = rankBelowSize("OMPI_COMM_WORLD_LOCAL_RANK", env.localRank,
                               "OMPI_COMM_WORLD_LOCAL_SIZE", env.localSize);
      !s)
    return s;
  if (env.localSize > env.size)
    return Status::error(
        "environment variable OMPI_COMM_WORLD_LOCAL_SIZE=" +
        std::to_string(env.localSize) + " exceeds OMPI_COMM_WORLD_SIZE=" +
        std::to_string(env.size));
  return Status::success();
}

// True inside a Slurm job step (srun), where SLURM_STEP_ID holds a step
// number; the batch script's special steps (and no step id) are not.
bool inSlurmStep() {
  const char *id = get("SLURM_STEP_ID");
  if (!id)
    id = get("SLURM_STEPID");
  int step = 0;
  // Slurm's special step ids (batch, extern, interactive...) are
  // 0xfffffff0 and above: they do not fit an int.
  return id && get("SLURM_PROCID") && parseNonNegative(id, step);
}

Status readSlurm(LaunchEnvironment &env) {
  env.launcher = Launcher::Slurm;
  const char *sizeName = get("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS"
                         : get("SLURM_NTASKS")       ? "SLURM_NTASKS"
                                                     : nullptr;
  if (!sizeName)
    return Status::error("environment variable SLURM_PROCID is set in a Slurm "
                         "job step but neither SLURM_STEP_NUM_TASKS nor "
                         "SLURM_NTASKS is");
  if (Status s = readInt(sizeName, 1, env.size); !s)
    return s;
  if (Status s = readInt("SLURM_PROCID", 0, env.rank); !s)
    return s;
  if (Status s = rankBelowSize("SLURM_PROCID", env.rank, sizeName, env.size);
      !s)
    return s;
  env.localRank = 0;
  env.localSize = 0;
  if (!get("SLURM_LOCALID"))
    return Status::success();
  if (Status s = readInt("SLURM_LOCALID", 0, env.localRank); !s)
    return s;
  const char *perNode = get("SLURM_STEP_TASKS_PER_NODE")
                            ? "SLURM_STEP_TASKS_PER_NODE"
                        : get("SLURM_TASKS_PER_NODE") ? "SLURM_TASKS_PER_NODE"
                                                      : nullptr;
  if (!perNode || !get("SLURM_NODEID")) {
    // The local rank is known, the local size is not.
    return Status::success();
  }
  int node = 0;
  if (Status s = readInt("SLURM_NODEID", 0, node); !s)
    return s;
  if (Status s = tasksOnNode(perNode, node, env.localSize); !s)
    return s;
  if (env.localSize < 1 || env.localSize > env.size)
    return Status::error("environment variable " +
                         quoted(perNode, get(perNode)) + " gives node " +
                         std::to_string(node) + " " +
                         std::to_string(env.localSize) + " task(s), not 1 to " +
                         sizeName + "=" + std::to_string(env.size));
  return rankBelowSize("SLURM_LOCALID", env.localRank,
                       (std::string("the local size from ") + perNode).c_str(),
                       env.localSize);
}

} // namespace

const char *launcherName(Launcher launcher) {
  switch (launcher) {
  case Launcher::None:
    return "none";
  case Launcher::OpenMpi:
    return "Open MPI";
  case Launcher::Pmix:
    return "PMIx";
  case Launcher::Slurm:
    return "Slurm";
  }
  return "?";
}

std::string LaunchEnvironment::describe() const {
  if (!launched())
    return "a single process";
  std::string s = "rank " + std::to_string(rank) + " of " +
                  (size ? std::to_string(size) : std::string("an unknown number"));
  if (localSize)
    s += " (local " + std::to_string(localRank) + " of " +
         std::to_string(localSize) + ")";
  return s + " under " + launcherName(launcher);
}

StatusOr<LaunchEnvironment> readLaunchEnvironment() {
  LaunchEnvironment env;
  bool openMpi = false;
  if (Status s = pairSet("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                         openMpi);
      !s)
    return s;
  bool slurm = !openMpi && inSlurmStep();
  if (openMpi) {
    if (Status s = readOpenMpi(env); !s)
      return s;
  } else if (slurm) {
    if (Status s = readSlurm(env); !s)
      return s;
  } else if (get("SLURM_PROCID")) {
    // Outside a job step (a batch script, rank 0 of its tasks) Slurm's
    // variables do not count, but a rank they cannot hold is still wrong.
    int rank = 0, size = 0;
    if (Status s = readInt("SLURM_PROCID", 0, rank); !s)
      return s;
    if (get("SLURM_NTASKS")) {
      if (Status s = readInt("SLURM_NTASKS", 1, size); !s)
        return s;
      if (Status s = rankBelowSize("SLURM_PROCID", rank, "SLURM_NTASKS", size); !s)
        return s;
    }
  }
  if (get("PMIX_RANK")) {
    int pmixRank = 0;
    if (Status s = readInt("PMIX_RANK", 0, pmixRank); !s)
      return s;
    if (openMpi || slurm) {
      if (pmixRank != env.rank)
        return Status::error(
            "environment variable PMIX_RANK=" + std::to_string(pmixRank) +
            " contradicts " +
            (openMpi ? "OMPI_COMM_WORLD_RANK=" : "SLURM_PROCID=") +
            std::to_string(env.rank));
    } else {
      env.launcher = Launcher::Pmix;
      env.rank = pmixRank;
      env.size = 0;
      env.localRank = 0;
      env.localSize = 0;
    }
  }
  return env;
}

} // namespace trc::rt
