//===- NodeTestRunner.cpp - node tests in child processes -----------------===//
//
// See NodeTestRunner.h. A child writes "stage <name>" lines as it goes and
// one "result <outcome> <reason>" line at the end into a pipe; a child that
// dies without the result line is failed in the last stage it named.
//
//===----------------------------------------------------------------------===//
#include "trc/Conformance/NodeTestRunner.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace trc::conformance {
namespace {

//===----------------------------------------------------------------------===//
// Child processes
//===----------------------------------------------------------------------===//

struct Child {
  pid_t pid;
  size_t index;
  int fd;
  std::chrono::steady_clock::time_point start;
};

// In the child: runs the test in `dir`, writing "stage <name>" as each
// stage starts (so that a crash names it) and "result <outcome> <reason>".
[[noreturn]] void childMain(const std::string &dir, const std::string &scratch,
                            const NodeTestOptions &options,
                            const mlir::DialectRegistry &registry, int fd) {
  NodeTestResult r = runNodeTest(dir, scratch, options, registry, [fd](const char *stage) {
    std::string line = std::string("stage ") + stage + "\n";
    (void)!::write(fd, line.data(), line.size());
  });
  std::string reason = r.reason.substr(0, 2000);
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  std::string line = "result " + std::to_string(static_cast<int>(r.outcome)) + " " +
                     reason + "\n";
  (void)!::write(fd, line.data(), line.size());
  ::_exit(0);
}

std::string readAll(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<size_t>(n));
  return text;
}

// The result a child reported, or what its death says.
NodeTestResult childResult(const std::string &text, int status, bool timedOut,
                           unsigned timeoutSeconds) {
  size_t at = text.rfind("result ");
  if (at != std::string::npos && (at == 0 || text[at - 1] == '\n')) {
    std::string rest = text.substr(at + 7);
    if (!rest.empty() && rest.back() == '\n')
      rest.pop_back();
    int outcome = rest.empty() ? 3 : rest[0] - '0';
    return {static_cast<Outcome>(std::clamp(outcome, 0, 3)),
            rest.size() > 2 ? rest.substr(2) : ""};
  }
  std::string stage = "import";
  size_t s = text.rfind("stage ");
  if (s != std::string::npos)
    stage = text.substr(s + 6, text.find('\n', s) - s - 6);
  std::string how;
  if (timedOut)
    how = "timed out after " + std::to_string(timeoutSeconds) + " s";
  else if (WIFSIGNALED(status))
    how = "crashed (signal " + std::to_string(WTERMSIG(status)) + ": " +
          ::strsignal(WTERMSIG(status)) + ")";
  else
    how = "exited with status " + std::to_string(WEXITSTATUS(status)) +
          " without a result";
  return {Outcome::Failed, stage + " error: " + how};
}

} // namespace

std::vector<NodeTestResult> runNodeTests(const std::vector<std::string> &tests,
                                         const NodeTestOptions &options,
                                         const RunnerOptions &runner,
                                         const mlir::DialectRegistry &registry,
                                         const std::string &scratchRoot) {
  std::vector<NodeTestResult> results(tests.size());
  std::vector<Child> running;
  size_t next = 0;
  unsigned width = std::max(1u, runner.jobs);
  while (next < tests.size() || !running.empty()) {
    while (next < tests.size() && running.size() < width) {
      int fds[2];
      std::string scratch = scratchRoot + "/" + std::to_string(next);
      if (::pipe2(fds, O_CLOEXEC) != 0 ||
          llvm::sys::fs::create_directories(scratch)) {
        results[next++] = {Outcome::Failed, "runner error: cannot set up the test"};
        continue;
      }
      llvm::outs().flush();
      pid_t pid = ::fork();
      if (pid == 0) {
        ::close(fds[0]);
        childMain(tests[next], scratch, options, registry, fds[1]);
      }
      ::close(fds[1]);
      if (pid < 0) {
        ::close(fds[0]);
        results[next++] = {Outcome::Failed, "runner error: fork failed"};
        continue;
      }
      running.push_back({pid, next++, fds[0], std::chrono::steady_clock::now()});
    }
    // Reap whoever finished; kill whoever ran out of time.
    bool reaped = false;
    for (size_t i = 0; i < running.size();) {
      Child &c = running[i];
      int status = 0;
      bool timedOut = std::chrono::steady_clock::now() - c.start >
                      std::chrono::seconds(runner.timeoutSeconds);
      if (timedOut)
        ::kill(c.pid, SIGKILL);
      pid_t done = ::waitpid(c.pid, &status, timedOut ? 0 : WNOHANG);
      if (done != c.pid) {
        ++i;
        continue;
      }
      results[c.index] = childResult(readAll(c.fd), status, timedOut, runner.timeoutSeconds);
      ::close(c.fd);
      llvm::sys::fs::remove_directories(scratchRoot + "/" + std::to_string(c.index));
      running.erase(running.begin() + static_cast<long>(i));
      reaped = true;
    }
    if (!reaped && !running.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return results;
}

} // namespace trc::conformance
