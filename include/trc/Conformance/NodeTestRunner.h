//===- NodeTestRunner.h - node tests in child processes ---------*- C++ -*-===//
//
// Runs node tests (NodeTest.h) each in a forked child process, `jobs` at a
// time, so that a crash or a hang of a compiled program is that test's
// failure ("run error: crashed (signal 11: ...)", "timed out after N s"),
// named with the stage it was in, not the runner's. The parent never
// creates an MLIRContext or a thread, so forking is safe. Results come back
// in the order of `dirs` whatever the completion order.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_CONFORMANCE_NODETESTRUNNER_H
#define TRC_CONFORMANCE_NODETESTRUNNER_H

#include "trc/Conformance/NodeTest.h"

#include <string>
#include <vector>

namespace trc::conformance {

struct RunnerOptions {
  unsigned jobs = 2;
  unsigned timeoutSeconds = 120; // per test
};

/// The result of every test folder of `dirs`, in order; scratch folders
/// live under `scratchRoot` while their test runs.
std::vector<NodeTestResult> runNodeTests(const std::vector<std::string> &dirs,
                                         const NodeTestOptions &test, const RunnerOptions &runner,
                                         const mlir::DialectRegistry &registry,
                                         const std::string &scratchRoot);

} // namespace trc::conformance

#endif // TRC_CONFORMANCE_NODETESTRUNNER_H
