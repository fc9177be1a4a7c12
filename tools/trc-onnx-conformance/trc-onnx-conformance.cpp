//===- trc-onnx-conformance.cpp - ONNX backend node tests through trc ----===//
//
// Imports every ONNX backend node test (DIR/<test>/model.onnx; by default
// Debian's libonnx-testdata) and sorts them into
//   imported     the importer produced verified trc IR,
//   unsupported  the model uses an op, element type or feature trc does not
//                cover (the importer says "unsupported"/"not supported"),
//   failed       anything else: a bug to fix, listed with its reason.
// Prints every non-imported test with its first error line, then the counts.
// Node tests often feed shape-like operands (Reshape's shape, Slice's starts,
// axes...) as graph inputs; trc needs those at compile time, so when the
// importer asks for one, it is bound to the test's own data
// (test_data_set_0/input_N.pb) and the import is retried.
// Exit status: 0 when nothing failed, 1 otherwise (2 on bad usage).
//
//   trc-onnx-conformance [DIR] [--filter SUBSTRING] [--quiet]
//
//===----------------------------------------------------------------------===//
#include "trc/Import/OnnxImporter.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace cl = llvm::cl;

static cl::opt<std::string> testDir(cl::Positional, cl::desc("[node test folder]"),
                                    cl::init("/usr/share/libonnx-testdata/data/node"));
static cl::opt<std::string> filter("filter",
                                   cl::desc("only tests whose name contains this"),
                                   cl::init(""));
static cl::opt<bool> quiet("quiet", cl::desc("print only failures and counts"));

namespace {
enum class Outcome { Imported, Unsupported, Failed };

struct Result {
  std::string name;
  Outcome outcome;
  std::string reason;
};

std::string firstErrorLine(const std::string &diagnostics) {
  size_t at = diagnostics.find("error: ");
  if (at == std::string::npos)
    return diagnostics.empty() ? "no diagnostic printed" : diagnostics;
  size_t end = diagnostics.find('\n', at);
  return diagnostics.substr(at, end == std::string::npos ? end : end - at);
}

// Input name -> file of the test's first data set holding its value.
std::map<std::string, std::string> testInputFiles(const std::string &testPath) {
  std::map<std::string, std::string> files;
  for (int i = 0;; ++i) {
    std::string file = testPath + "/test_data_set_0/input_" + std::to_string(i) + ".pb";
    auto buffer = llvm::MemoryBuffer::getFile(file);
    onnx::TensorProto tensor;
    if (!buffer || !tensor.ParseFromArray((*buffer)->getBufferStart(),
                                          static_cast<int>((*buffer)->getBufferSize())))
      break;
    files[tensor.name()] = file;
  }
  return files;
}

// The input a "must be a compile-time ... constant" error asks for, if any.
std::string inputNeededAtCompileTime(const std::string &reason) {
  if (reason.find("compile-time") == std::string::npos)
    return "";
  size_t at = reason.find("(input '");
  if (at == std::string::npos)
    return "";
  at += 8;
  return reason.substr(at, reason.find('\'', at) - at);
}

Result runOne(const std::string &name, const std::string &testPath) {
  trc::ImportOptions options;
  auto dataFiles = testInputFiles(testPath);
  std::string reason;
  while (true) {
    mlir::MLIRContext context;
    std::string diagnostics;
    llvm::raw_string_ostream diag(diagnostics);
    if (trc::importOnnxFile(testPath + "/model.onnx", &context, options, diag))
      return {name, Outcome::Imported, ""};
    reason = firstErrorLine(diagnostics);
    std::string needed = inputNeededAtCompileTime(reason);
    if (needed.empty() || options.constantInputs.size() == dataFiles.size())
      break;
    if (dataFiles.count(needed) && !options.constantInputs.count(needed)) {
      options.constantInputs[needed] = dataFiles[needed];
      continue;
    }
    // The value is computed from graph inputs (e.g. a window size cast to
    // float): bind every input to its test data.
    if (dataFiles.count(needed))
      break;
    options.constantInputs = dataFiles;
  }
  bool unsupported = reason.find("unsupported") != std::string::npos ||
                     reason.find("not supported") != std::string::npos ||
                     reason.find("unknown domain") != std::string::npos;
  return {name, unsupported ? Outcome::Unsupported : Outcome::Failed, reason};
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
  std::sort(tests.begin(), tests.end());

  int counts[3] = {0, 0, 0};
  for (const auto &name : tests) {
    Result r = runOne(name, testDir + "/" + name);
    ++counts[static_cast<int>(r.outcome)];
    if (r.outcome == Outcome::Failed)
      llvm::outs() << "FAILED      " << name << ": " << r.reason << "\n";
    else if (r.outcome == Outcome::Unsupported && !quiet)
      llvm::outs() << "UNSUPPORTED " << name << ": " << r.reason << "\n";
  }
  llvm::outs() << "node tests: " << tests.size() << " total, " << counts[0]
               << " imported, " << counts[1] << " unsupported, " << counts[2]
               << " failed\n";
  return counts[2] == 0 ? 0 : 1;
}
