//===- RankThreads.cpp - a rank's share of the node's cores (RankThreads.h) ===//
#include "runtime/comm/RankThreads.h"

#include "runtime/backends/cpu/Blas.h"
#include "runtime/comm/Watchdog.h"
#include "runtime/support/LaunchEnvironment.h"
#include "runtime/support/ThreadPool.h"

#include <algorithm>
#include <sched.h>
#include <string>
#include <unistd.h>

namespace trc::rt {

int threadsPerRank(int localSize, int onlineCores, int allowedCores) {
  if (allowedCores < onlineCores) // bound by the launcher: its share already
    return std::max(1, allowedCores);
  return std::max(1, onlineCores / std::max(1, localSize));
}

Status checkEnvironment() {
  if (Status s = checkThreadVariables(); !s)
    return s;
  if (Status s = checkOpenMpSharedMemory(); !s)
    return s;
  removeStaleOpenMpRegistration();
  if (Status s = checkCpuGemmVariable(); !s)
    return s;
  if (StatusOr<double> timeout = readCollectiveTimeout(); !timeout.ok())
    return timeout.status();
  if (StatusOr<LaunchEnvironment> env = readLaunchEnvironment(); !env.ok())
    return env.status();
  return Status::success();
}

StatusOr<int> applyRankThreads() {
  if (Status s = checkEnvironment(); !s)
    return s;
  StatusOr<LaunchEnvironment> env = readLaunchEnvironment();
  if (!env.ok())
    return env.status();
  if (env->localSize <= 1 || threadCountSetByUser())
    return threadCount();
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t mask;
  int allowed = sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : int(online);
  int n = threadsPerRank(env->localSize, int(std::max(1L, online)), std::max(1, allowed));
  std::string value = std::to_string(n);
  setenv("TRC_NUM_THREADS", value.c_str(), 0);
  setenv("OMP_NUM_THREADS", value.c_str(), 0);
  return n;
}

} // namespace trc::rt
