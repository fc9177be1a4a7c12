//===- InterruptCleanupTest.cpp - staging removed when a process is ended -===//
//
// A child process registers a staging folder and is sent SIGTERM: the folder
// is gone and the child ended by SIGTERM (the signal kept its course). A
// folder forgotten before the signal stays. Staging names of dead processes
// are removed by removeStaleStaging; a live process's are kept.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/InterruptCleanup.h"

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

using namespace trc::rt;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const char *name) {
  fs::path dir = fs::temp_directory_path() /
                 (std::string("trc-interrupt-") + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Forks a child that makes `folder` (with a file in it), registers it, maybe
// forgets it, then raises SIGTERM; returns the child's wait status.
int childInterrupted(const fs::path &folder, bool forget) {
  pid_t child = ::fork();
  if (child == 0) {
    fs::create_directories(folder / "inner");
    std::ofstream(folder / "inner" / "part.bin") << "partial";
    if (!removeOnInterrupt(folder.string()))
      ::_exit(3);
    if (forget)
      forgetOnInterrupt(folder.string());
    ::raise(SIGTERM);
    ::_exit(4); // not reached: SIGTERM ends the child
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

TEST(InterruptCleanup, SigtermRemovesTheStagingFolderAndStillEndsTheProcess) {
  fs::path dir = scratch("term");
  int status = childInterrupted(dir / "out.partial", /*forget=*/false);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_FALSE(fs::exists(dir / "out.partial"));
  fs::remove_all(dir);
}

TEST(InterruptCleanup, AForgottenFolderStays) {
  fs::path dir = scratch("forget");
  int status = childInterrupted(dir / "out", /*forget=*/true);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_TRUE(fs::exists(dir / "out" / "inner" / "part.bin"));
  fs::remove_all(dir);
}

TEST(InterruptCleanup, StaleStagingOfDeadProcessesIsRemoved) {
  fs::path dir = scratch("stale");
  std::string target = (dir / "model.trc").string();
  // pid_max is at most 2^22: this process cannot exist.
  fs::create_directories(target + ".partial-99999999-abc123/inner");
  fs::create_directories(target + ".partial-99999998");
  fs::create_directories(stagingName(target) + "-live");   // this process: kept
  fs::create_directories(target + ".partial-notapid");      // not ours: kept
  fs::create_directories(dir / "other.trc.partial-99999999"); // another target: kept
  EXPECT_EQ(removeStaleStaging(target), 2);
  EXPECT_FALSE(fs::exists(target + ".partial-99999999-abc123"));
  EXPECT_FALSE(fs::exists(target + ".partial-99999998"));
  EXPECT_TRUE(fs::exists(stagingName(target) + "-live"));
  EXPECT_TRUE(fs::exists(target + ".partial-notapid"));
  EXPECT_TRUE(fs::exists(dir / "other.trc.partial-99999999"));
  fs::remove_all(dir);
}

} // namespace
