//===- ScopedEnvironment.h - environment variables a test sets --------------===//
//
// Clears the launcher's variables (and the runtime's TRC_* communicator
// settings) for the life of the object, lets the test set its own, and
// restores every one of them afterwards.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TESTS_SCOPEDENVIRONMENT_H
#define TRC_RUNTIME_TESTS_SCOPEDENVIRONMENT_H

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trc::rt::test {

class ScopedEnvironment {
public:
  ScopedEnvironment() {
    for (const char *name :
         {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
          "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
          "PMIX_RANK", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
          "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_STEP_NUM_TASKS",
          "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NODEID",
          "TRC_MPI_LIBRARY", "TRC_NCCL_LIBRARY", "TRC_COLLECTIVE_TIMEOUT_S"})
      unset(name);
  }
  ~ScopedEnvironment() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
  }
  ScopedEnvironment(const ScopedEnvironment &) = delete;
  ScopedEnvironment &operator=(const ScopedEnvironment &) = delete;

  void set(const char *name, const char *value) {
    save(name);
    ::setenv(name, value, 1);
  }
  void unset(const char *name) {
    save(name);
    ::unsetenv(name);
  }

private:
  void save(const char *name) {
    const char *old = ::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old)
                                  : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

} // namespace trc::rt::test

#endif // TRC_RUNTIME_TESTS_SCOPEDENVIRONMENT_H
