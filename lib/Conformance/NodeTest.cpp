//===- NodeTest.cpp - one ONNX backend node test through trc --------------===//
//
// See NodeTest.h.
//
//===----------------------------------------------------------------------===//
#include "trc/Conformance/NodeTest.h"

#include "trc/Import/OnnxImporter.h"
#include "trc/Pipelines/Pipelines.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/artifact/Session.h"
#include "runtime/backends/cpu/CpuBackend.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <vector>

namespace trc::conformance {
namespace {

//===----------------------------------------------------------------------===//
// Failures
//===----------------------------------------------------------------------===//

std::string firstErrorLine(const std::string &diagnostics) {
  size_t at = diagnostics.find("error: ");
  if (at == std::string::npos)
    return diagnostics.empty() ? "no diagnostic printed" : diagnostics;
  size_t end = diagnostics.find('\n', at);
  return diagnostics.substr(at, end == std::string::npos ? end : end - at);
}

// A failure of `stage` ("import", "compile", "run"): unsupported when the
// stage reported it as such (listed as printed), otherwise failed
// ("<stage> error: ...").
NodeTestResult stageFailure(const std::string &stage, const std::string &message,
                            bool unsupported = false) {
  if (unsupported)
    return {Outcome::Unsupported, message};
  llvm::StringRef text(message);
  text.consume_front("error: ");
  return {Outcome::Failed, stage + " error: " + text.str()};
}

//===----------------------------------------------------------------------===//
// One test (in a child process)
//===----------------------------------------------------------------------===//

struct TestCase {
  std::string path;
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
// On failure returns null and sets `reason` and `unsupported` (the last
// attempt's report).
mlir::OwningOpRef<mlir::ModuleOp> importTest(const TestCase &test, const std::string &set,
                                             mlir::MLIRContext &context,
                                             trc::ImportOptions &options,
                                             std::string &reason, bool &unsupported) {
  auto files = inputFilesByName(test, set);
  while (true) {
    std::string diagnostics;
    llvm::raw_string_ostream diag(diagnostics);
    trc::ImportReport report;
    if (auto module = trc::importOnnxFile(test.path + "/model.onnx", &context, options, diag,
                                          nullptr, &report))
      return module;
    reason = firstErrorLine(diagnostics);
    unsupported = !report.unsupported.empty();
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
// lowering's diagnostics, or compileToArtifact's own message), and whether
// the lowering reported it as unsupported.
std::string compileTest(mlir::ModuleOp module, const std::string &dir, int optLevel,
                        bool &unsupported) {
  std::string diagnostics, log;
  llvm::raw_string_ostream diag(diagnostics), logStream(log);
  mlir::ScopedDiagnosticHandler handler(module.getContext(), [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      diag << "error: " << d << "\n";
    return mlir::success();
  });
  trc::CompileOptions options;
  options.optLevel = optLevel;
  trc::CompileReport report;
  if (mlir::succeeded(trc::compileToArtifact(module, options, dir, logStream, nullptr, &report)))
    return "";
  unsupported = report.unsupported;
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
                       const Tolerance &tolerance, bool &mismatch) {
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

// Imports, compiles, loads and runs one data set's test.
NodeTestResult runOnDataSet(const TestCase &test, size_t k, const std::string &scratch,
                            const NodeTestOptions &testOptions,
                            const mlir::DialectRegistry &registry,
                            const std::function<void(const char *)> &onStage) {
  const std::string &set = test.dataSets[k];
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  trc::ImportOptions options;
  options.refuseFoldedParameters = false; // a forward run: nothing trains
  std::string reason;
  bool unsupported = false;
  onStage("import");
  auto module = importTest(test, set, context, options, reason, unsupported);
  if (!module)
    return stageFailure("import", reason, unsupported);
  if (testOptions.importOnly)
    return {Outcome::Imported, ""};

  onStage("compile");
  std::string dir = scratch + "/artifact" + std::to_string(k);
  if (std::string error = compileTest(*module, dir, testOptions.optLevel, unsupported);
      !error.empty())
    return stageFailure("compile", error, unsupported);

  onStage("run");
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
  std::string error =
      runDataSet(test, set, options, **session, testOptions.tolerance, mismatch);
  std::string where = test.dataSets.size() > 1
                          ? llvm::sys::path::filename(set).str() + ": "
                          : std::string();
  if (mismatch)
    return {Outcome::Failed, where + error};
  if (!error.empty())
    return stageFailure("run", where + error);
  return {Outcome::Passed, ""};
}

} // namespace

// The whole test: every data set (a data set binds its own compile-time
// inputs, so each is imported and compiled from its own files).
NodeTestResult runNodeTest(const std::string &dir, const std::string &scratch,
                           const NodeTestOptions &options, const mlir::DialectRegistry &registry,
                           const std::function<void(const char *stage)> &onStage) {
  TestCase test;
  test.path = dir;
  if (std::string error = loadTestCase(test); !error.empty())
    return {Outcome::Failed, "import error: " + error};
  if (test.dataSets.empty())
    test.dataSets.push_back(test.path + "/test_data_set_0");
  NodeTestResult result{Outcome::Passed, ""};
  for (size_t k = 0; k < test.dataSets.size(); ++k) {
    result = runOnDataSet(test, k, scratch, options, registry, onStage);
    if (result.outcome != Outcome::Passed)
      return result;
  }
  return result;
}

} // namespace trc::conformance
