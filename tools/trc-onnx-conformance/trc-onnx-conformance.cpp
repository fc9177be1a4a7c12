//===- trc-onnx-conformance.cpp - ONNX backend node tests through trc ----===//
//
// Runs every ONNX backend node test of DIR (default: Debian's
// libonnx-testdata) through trc (lib/Conformance: NodeTest.h says what a
// test does and how its outcome is decided, NodeTestRunner.h how tests run
// in child processes) and prints, in test-name order, the failures with
// their reasons, the unsupported tests (unless --quiet), the passed ones
// with --print-passed, and the counts. With --import-only the models are
// only imported. Exit status: 0 when nothing failed (or --allow-failures),
// 1 otherwise, 2 on bad usage.
//
//   trc-onnx-conformance [DIR] [--filter S] [--quiet] [--print-passed]
//                        [--import-only] [--allow-failures] [-j N] [--opt 0..3]
//                        [--rtol R] [--atol A] [--timeout SECONDS]
//
//===----------------------------------------------------------------------===//
#include "trc/Conformance/NodeTestRunner.h"
#include "trc/InitAllDialects.h"
#include "trc/InitAllPasses.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace cl = llvm::cl;
using namespace trc::conformance;

static cl::opt<std::string> testDir(cl::Positional, cl::desc("[node test folder]"),
                                    cl::init("/usr/share/libonnx-testdata/data/node"));
static cl::opt<std::string> filter("filter", cl::desc("only tests whose name contains this"),
                                   cl::init(""));
static cl::opt<bool> quiet("quiet", cl::desc("print only failures and counts"));
static cl::opt<bool> printPassed("print-passed",
                                 cl::desc("also list passed (or imported) tests"));
static cl::opt<bool> importOnly("import-only",
                                cl::desc("only import the models (no compile or run)"));
static cl::opt<bool> allowFailures("allow-failures", cl::desc("exit 0 even when tests failed"));
static cl::opt<unsigned> jobs("j", cl::Prefix, cl::desc("tests run at once (default 2)"),
                              cl::init(2));
static cl::opt<unsigned> optLevel("opt",
                                  cl::desc("LLVM optimization level 0..3 (default 3, "
                                           "as trc-opt --trc-compile)"),
                                  cl::init(3));
static cl::opt<double> relTolerance("rtol", cl::desc("relative tolerance"), cl::init(1e-3));
static cl::opt<double> absTolerance("atol", cl::desc("absolute tolerance"), cl::init(1e-5));
static cl::opt<unsigned> timeoutSeconds("timeout", cl::desc("seconds per test"),
                                        cl::init(120));

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "ONNX node-test conformance of trc\n");
  std::error_code ec;
  std::vector<std::string> tests;
  for (llvm::sys::fs::directory_iterator it(testDir, ec), end; it != end && !ec;
       it.increment(ec)) {
    std::string name = llvm::sys::path::filename(it->path()).str();
    if (name.find(filter) != std::string::npos &&
        llvm::sys::fs::exists(it->path() + "/model.onnx"))
      tests.push_back(name);
  }
  if (ec || tests.empty()) {
    llvm::errs() << "error: " << testDir << ": no node tests found"
                 << (ec ? " (" + ec.message() + ")" : "") << "\n";
    return 2;
  }
  if (optLevel > 3) {
    llvm::errs() << "error: --opt must be 0..3\n";
    return 2;
  }
  std::sort(tests.begin(), tests.end());

  // Everything the children share, set up once before forking.
  trc::registerAllPasses();
  mlir::DialectRegistry registry;
  trc::registerAllDialects(registry);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::SmallString<128> scratchRoot;
  if (auto error = llvm::sys::fs::createUniqueDirectory("trc-conformance", scratchRoot)) {
    llvm::errs() << "error: cannot create a temporary folder: " << error.message() << "\n";
    return 2;
  }
  std::vector<std::string> dirs;
  for (const std::string &name : tests)
    dirs.push_back(testDir + "/" + name);
  NodeTestOptions options{importOnly, static_cast<int>(optLevel),
                          Tolerance{relTolerance, absTolerance}};
  std::vector<NodeTestResult> results =
      runNodeTests(dirs, options, RunnerOptions{jobs, timeoutSeconds}, registry,
                   scratchRoot.str().str());
  llvm::sys::fs::remove_directories(scratchRoot);

  int counts[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < tests.size(); ++i) {
    const NodeTestResult &r = results[i];
    ++counts[static_cast<int>(r.outcome)];
    if (r.outcome == Outcome::Failed)
      llvm::outs() << "FAILED      " << tests[i] << ": " << r.reason << "\n";
    else if (r.outcome == Outcome::Unsupported && !quiet)
      llvm::outs() << "UNSUPPORTED " << tests[i] << ": " << r.reason << "\n";
    else if (r.outcome == Outcome::Passed && printPassed)
      llvm::outs() << "PASSED      " << tests[i] << "\n";
    else if (r.outcome == Outcome::Imported && printPassed)
      llvm::outs() << "IMPORTED    " << tests[i] << "\n";
  }
  int passed = counts[0], imported = counts[1], unsupported = counts[2], failed = counts[3];
  if (importOnly)
    llvm::outs() << "node tests: " << tests.size() << " total, " << imported << " imported, "
                 << unsupported << " unsupported, " << failed << " failed\n";
  else
    llvm::outs() << "node tests: " << tests.size() << " total, " << passed << " passed, "
                 << failed << " failed, " << unsupported << " unsupported\n";
  return failed == 0 || allowFailures ? 0 : 1;
}
