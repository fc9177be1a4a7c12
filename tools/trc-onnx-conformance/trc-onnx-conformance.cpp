//===- trc-onnx-conformance.cpp - ONNX backend node tests through trc ----===//
//
// Runs every ONNX backend node test (DIR/<test>/model.onnx and its
// test_data_set_K folders; by default Debian's libonnx-testdata): imports the
// model, compiles it for the CPU (trc::compileToArtifact), loads the artifact
// with the runtime, feeds every data set's inputs and compares each output
// with the expected one (|got - want| <= atol + rtol * |want|, NaN matches
// NaN, integers and booleans exactly; dtype and shape must match). Each test
// is one of
//   passed       every output of every data set matched,
//   unsupported  the model uses an op, element type or feature trc does not
//                cover: the importer or the CPU lowering says "unsupported" /
//                "not supported" (e.g. unsigned element types),
//   failed       anything else, listed with its reason: an import error, a
//                compile error, a run error (a runtime message, a crash or a
//                timeout) or the first mismatching output (index, got, want).
// With --import-only the models are only imported (imported/unsupported/
// failed, as before the runner executed anything).
// Node tests often feed shape-like operands (Reshape's shape, Slice's starts,
// axes...) as graph inputs; trc needs those at compile time, so when the
// importer asks for one, it is bound to the data set's own value and the
// import is retried; such inputs are not fed at run time. Test data holds
// bfloat16 tensors as UINT16 (NumPy has no bfloat16): fed to and compared
// with bf16 slots as the bits they are.
//
// Each test runs in a forked child process (-j at a time), so a crash or a
// hang of a compiled program is that test's failure, not the runner's; the
// parent never creates an MLIRContext or a thread, so forking is safe. Lines
// are printed in test-name order whatever the completion order.
// Exit status: 0 when nothing failed (or --allow-failures), 1 otherwise, 2 on
// bad usage.
//
//   trc-onnx-conformance [DIR] [--filter S] [--quiet] [--print-passed]
//                        [--import-only] [--allow-failures] [-j N] [--opt 0..3]
//                        [--rtol R] [--atol A] [--timeout SECONDS]
//
//===----------------------------------------------------------------------===//
#include "TestTensors.h"

#include "trc/Dialect/Trc.h"
#include "trc/Import/OnnxImporter.h"
#include "trc/InitAllDialects.h"
#include "trc/InitAllPasses.h"
#include "trc/Passes.h"
#include "trc/Pipelines/Pipelines.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/artifact/Session.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace cl = llvm::cl;
using trc::conformance::Tolerance;

static cl::opt<std::string> testDir(cl::Positional, cl::desc("[node test folder]"),
                                    cl::init("/usr/share/libonnx-testdata/data/node"));
static cl::opt<std::string> filter("filter",
                                   cl::desc("only tests whose name contains this"),
                                   cl::init(""));
static cl::opt<bool> quiet("quiet", cl::desc("print only failures and counts"));
static cl::opt<bool> printPassed("print-passed",
                                 cl::desc("also list passed (or imported) tests"));
static cl::opt<bool> importOnly("import-only",
                                cl::desc("only import the models (no compile or run)"));
static cl::opt<bool> allowFailures("allow-failures",
                                   cl::desc("exit 0 even when tests failed"));
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

namespace {

enum class Outcome { Passed, Imported, Unsupported, Failed };

struct Result {
  Outcome outcome;
  std::string reason;
};

//===----------------------------------------------------------------------===//
// Classifying messages
//===----------------------------------------------------------------------===//

std::string firstErrorLine(const std::string &diagnostics) {
  size_t at = diagnostics.find("error: ");
  if (at == std::string::npos)
    return diagnostics.empty() ? "no diagnostic printed" : diagnostics;
  size_t end = diagnostics.find('\n', at);
  return diagnostics.substr(at, end == std::string::npos ? end : end - at);
}

bool saysUnsupported(const std::string &message) {
  return message.find("unsupported") != std::string::npos ||
         message.find("not supported") != std::string::npos ||
         message.find("unknown domain") != std::string::npos;
}

// A failure of `stage` ("import", "compile", "run"): unsupported when the
// message says so (listed as printed), otherwise failed ("<stage> error: ...").
Result stageFailure(const std::string &stage, const std::string &message) {
  if (saysUnsupported(message))
    return {Outcome::Unsupported, message};
  llvm::StringRef text(message);
  text.consume_front("error: ");
  return {Outcome::Failed, stage + " error: " + text.str()};
}

//===----------------------------------------------------------------------===//
// One test (in a child process)
//===----------------------------------------------------------------------===//

struct TestCase {
  std::string name, path;
  std::vector<std::string> inputNames, outputNames; // the graph's, in order
  std::vector<std::string> dataSets;                // test_data_set_K folders
};

// The graph's input (less initializers) and output names, and the data sets.
std::string loadTestCase(TestCase &test) {
  auto buffer = llvm::MemoryBuffer::getFile(test.path + "/model.onnx");
  onnx::ModelProto model;
  if (!buffer || !model.ParseFromArray((*buffer)->getBufferStart(),
                                       static_cast<int>((*buffer)->getBufferSize())))
    return "cannot read " + test.path + "/model.onnx";
  std::vector<std::string> initializers;
  for (const auto &init : model.graph().initializer())
    initializers.push_back(init.name());
  for (const auto &in : model.graph().input())
    if (!llvm::is_contained(initializers, in.name()))
      test.inputNames.push_back(in.name());
  for (const auto &out : model.graph().output())
    test.outputNames.push_back(out.name());
  for (int k = 0;; ++k) {
    std::string set = test.path + "/test_data_set_" + std::to_string(k);
    if (!llvm::sys::fs::is_directory(set))
      break;
    test.dataSets.push_back(set);
  }
  return "";
}

// The files of data set `set` named `kind`_N.pb (kind: input/output), in order.
std::vector<std::string> dataFiles(const std::string &set, const char *kind) {
  std::vector<std::string> files;
  for (int n = 0;; ++n) {
    std::string file = set + "/" + kind + "_" + std::to_string(n) + ".pb";
    if (!llvm::sys::fs::exists(file))
      break;
    files.push_back(file);
  }
  return files;
}

// The name a data file's tensor is for: its own name, or the graph's N-th.
std::string tensorName(const onnx::TensorProto &tensor,
                       const std::vector<std::string> &graphNames, size_t n) {
  if (!tensor.name().empty() || n >= graphNames.size())
    return tensor.name();
  return graphNames[n];
}

// Input name -> file of data set `set` holding its value.
std::map<std::string, std::string> inputFilesByName(const TestCase &test,
                                                    const std::string &set) {
  std::map<std::string, std::string> byName;
  std::vector<std::string> files = dataFiles(set, "input");
  for (size_t n = 0; n < files.size(); ++n) {
    onnx::TensorProto tensor;
    if (trc::conformance::parseTensorFile(files[n], tensor).empty())
      byName[tensorName(tensor, test.inputNames, n)] = files[n];
  }
  return byName;
}

// Imports the model, binding inputs to data set `set` as the importer asks.
// On failure returns null and sets `reason`.
mlir::OwningOpRef<mlir::ModuleOp> importTest(const TestCase &test, const std::string &set,
                                             mlir::MLIRContext &context,
                                             trc::ImportOptions &options,
                                             std::string &reason) {
  auto files = inputFilesByName(test, set);
  while (true) {
    std::string diagnostics;
    llvm::raw_string_ostream diag(diagnostics);
    trc::ImportReport report;
    if (auto module = trc::importOnnxFile(test.path + "/model.onnx", &context, options, diag,
                                          nullptr, &report))
      return module;
    reason = firstErrorLine(diagnostics);
    std::string needed = report.neededConstants.empty() ? "" : report.neededConstants.front();
    if (needed.empty() || options.constantInputs.size() == files.size())
      return nullptr;
    if (files.count(needed) && !options.constantInputs.count(needed)) {
      options.constantInputs[needed] = files[needed];
      continue;
    }
    // The value is computed from graph inputs (e.g. a window size cast to
    // float): bind every input to its test data.
    if (files.count(needed))
      return nullptr;
    options.constantInputs = files;
  }
}

// Compiles `module` into `dir`; "" or the first "error: ..." line (of the
// lowering's diagnostics, or compileToArtifact's own message).
std::string compileTest(mlir::ModuleOp module, const std::string &dir) {
  std::string diagnostics, log;
  llvm::raw_string_ostream diag(diagnostics), logStream(log);
  mlir::ScopedDiagnosticHandler handler(module.getContext(), [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      diag << "error: " << d << "\n";
    return mlir::success();
  });
  trc::CompileOptions options;
  options.optLevel = static_cast<int>(optLevel);
  if (mlir::succeeded(trc::compileToArtifact(module, options, dir, logStream)))
    return "";
  return firstErrorLine(diagnostics.empty() ? log : diagnostics);
}

// ONNX test data stores bfloat16 tensors as UINT16 (NumPy has no bfloat16):
// a u16 value for a bf16 slot holds the bf16 bits.
void bf16AsStored(trc::rt::DType slotType, trc::rt::HostTensor &value) {
  if (slotType == trc::rt::DType::BF16 && value.dtype == trc::rt::DType::U16)
    value.dtype = trc::rt::DType::BF16;
}

// Feeds data set `set` (less the inputs bound at compile time), runs, and
// compares the outputs; "" or the first problem. `mismatch` tells a wrong
// output from a run error.
std::string runDataSet(const TestCase &test, const std::string &set,
                       const trc::ImportOptions &options, trc::rt::Session &session,
                       bool &mismatch) {
  namespace rt = trc::rt;
  using namespace trc::conformance;
  mismatch = false;
  std::vector<std::string> inputs = dataFiles(set, "input");
  for (size_t n = 0; n < inputs.size(); ++n) {
    onnx::TensorProto proto;
    rt::HostTensor value;
    std::string error = parseTensorFile(inputs[n], proto);
    std::string name = tensorName(proto, test.inputNames, n);
    if (error.empty() && options.constantInputs.count(name))
      continue;
    if (error.empty())
      error = toHostTensor(proto, value);
    if (const rt::Slot *slot = session.manifest().find(rt::SlotKind::Input, name))
      bf16AsStored(slot->dtype, value);
    if (error.empty())
      if (rt::Status s = session.setInput(name, value); !s)
        error = s.message();
    if (!error.empty())
      return "input " + std::to_string(n) + " '" + name + "': " + error;
  }
  if (rt::Status s = session.run(); !s)
    return s.message();
  std::vector<std::string> outputs = dataFiles(set, "output");
  auto slots = session.manifest().slotsOfKind(rt::SlotKind::Output);
  if (outputs.size() != slots.size())
    return "the artifact has " + std::to_string(slots.size()) + " outputs, the test " +
           std::to_string(outputs.size());
  Tolerance tolerance{relTolerance, absTolerance};
  for (size_t n = 0; n < outputs.size(); ++n) {
    onnx::TensorProto proto;
    rt::HostTensor want, got;
    std::string error = parseTensorFile(outputs[n], proto);
    std::string name = tensorName(proto, test.outputNames, n);
    if (name.empty() || !session.manifest().find(rt::SlotKind::Output, name))
      name = slots[n]->name;
    if (error.empty())
      error = toHostTensor(proto, want);
    if (error.empty()) {
      rt::StatusOr<rt::HostTensor> output = session.getOutput(name);
      if (output.ok())
        got = *std::move(output);
      else
        error = std::string(output.status().message());
    }
    if (!error.empty())
      return "output " + std::to_string(n) + " '" + name + "': " + error;
    bf16AsStored(got.dtype, want);
    error = compareTensors(got, want, tolerance);
    if (!error.empty()) {
      mismatch = true;
      return "output " + std::to_string(n) + " '" + name + "': " + error;
    }
  }
  return "";
}

// Tells the parent which stage the child is in (so a crash names it).
void reportStage(int fd, const char *stage) {
  std::string line = std::string("stage ") + stage + "\n";
  (void)!::write(fd, line.data(), line.size());
}

// Imports, compiles, loads and runs one data set's test.
Result runOnDataSet(const TestCase &test, size_t k, const std::string &scratch,
                    const mlir::DialectRegistry &registry, int fd) {
  const std::string &set = test.dataSets[k];
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  trc::ImportOptions options;
  options.refuseFoldedParameters = false; // a forward run: nothing trains
  std::string reason;
  reportStage(fd, "import");
  auto module = importTest(test, set, context, options, reason);
  if (!module)
    return stageFailure("import", reason);
  if (importOnly)
    return {Outcome::Imported, ""};

  reportStage(fd, "compile");
  std::string dir = scratch + "/artifact" + std::to_string(k);
  if (std::string error = compileTest(*module, dir); !error.empty())
    return stageFailure("compile", error);

  reportStage(fd, "run");
  namespace rt = trc::rt;
  rt::CpuBackend backend;
  rt::StatusOr<std::unique_ptr<rt::Artifact>> artifact = rt::Artifact::load(dir, backend.target());
  if (!artifact.ok())
    return stageFailure("run", std::string(artifact.status().message()));
  rt::StatusOr<std::unique_ptr<rt::Session>> session =
      rt::Session::create(**artifact, backend);
  if (!session.ok())
    return stageFailure("run", std::string(session.status().message()));
  bool mismatch;
  std::string error = runDataSet(test, set, options, **session, mismatch);
  std::string where = test.dataSets.size() > 1
                          ? llvm::sys::path::filename(set).str() + ": "
                          : std::string();
  if (mismatch)
    return {Outcome::Failed, where + error};
  if (!error.empty())
    return stageFailure("run", where + error);
  return {Outcome::Passed, ""};
}

// The whole test: every data set (a data set binds its own compile-time
// inputs, so each is imported and compiled from its own files).
Result runTest(const std::string &name, const std::string &scratch,
               const mlir::DialectRegistry &registry, int fd) {
  TestCase test;
  test.name = name;
  test.path = testDir + "/" + name;
  if (std::string error = loadTestCase(test); !error.empty())
    return {Outcome::Failed, "import error: " + error};
  if (test.dataSets.empty())
    test.dataSets.push_back(test.path + "/test_data_set_0");
  Result result{Outcome::Passed, ""};
  for (size_t k = 0; k < test.dataSets.size(); ++k) {
    result = runOnDataSet(test, k, scratch, registry, fd);
    if (result.outcome != Outcome::Passed)
      return result;
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Child processes
//===----------------------------------------------------------------------===//

struct Child {
  pid_t pid;
  size_t index;
  int fd;
  std::chrono::steady_clock::time_point start;
};

// In the child: runs test `name` and writes "result <outcome> <reason>".
[[noreturn]] void childMain(const std::string &name, const std::string &scratch,
                            const mlir::DialectRegistry &registry, int fd) {
  Result r = runTest(name, scratch, registry, fd);
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
Result childResult(const std::string &text, int status, bool timedOut) {
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

// Runs every test in a child process, `jobs` at a time.
std::vector<Result> runAll(const std::vector<std::string> &tests,
                           const std::string &scratchRoot,
                           const mlir::DialectRegistry &registry) {
  std::vector<Result> results(tests.size());
  std::vector<Child> running;
  size_t next = 0;
  unsigned width = std::max(1u, static_cast<unsigned>(jobs));
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
        childMain(tests[next], scratch, registry, fds[1]);
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
                      std::chrono::seconds(timeoutSeconds);
      if (timedOut)
        ::kill(c.pid, SIGKILL);
      pid_t done = ::waitpid(c.pid, &status, timedOut ? 0 : WNOHANG);
      if (done != c.pid) {
        ++i;
        continue;
      }
      results[c.index] = childResult(readAll(c.fd), status, timedOut);
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
} // namespace

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
  std::vector<Result> results = runAll(tests, scratchRoot.str().str(), registry);
  llvm::sys::fs::remove_directories(scratchRoot);

  int counts[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < tests.size(); ++i) {
    const Result &r = results[i];
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
  int passed = counts[0], imported = counts[1], unsupported = counts[2],
      failed = counts[3];
  if (importOnly)
    llvm::outs() << "node tests: " << tests.size() << " total, " << imported
                 << " imported, " << unsupported << " unsupported, " << failed
                 << " failed\n";
  else
    llvm::outs() << "node tests: " << tests.size() << " total, " << passed << " passed, "
                 << failed << " failed, " << unsupported << " unsupported\n";
  return failed == 0 || allowFailures ? 0 : 1;
}
