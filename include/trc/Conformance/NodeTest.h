//===- NodeTest.h - one ONNX backend node test through trc ------*- C++ -*-===//
//
// An ONNX backend node test is a folder: model.onnx and test_data_set_K
// folders of input_N.pb / output_N.pb. runNodeTest imports the model,
// compiles it for the CPU (compileToArtifact), loads the artifact with the
// runtime, feeds every data set's inputs and compares each output with the
// expected one (TestTensors.h's compareTensors). The outcome is
//   Passed       every output of every data set matched,
//   Imported     (importOnly) the model imported,
//   Unsupported  the model uses what trc does not cover, as the importer
//                and the lowering report it as data (ImportReport::
//                unsupported, CompileReport::unsupported), not by the text
//                of their messages,
//   Failed       anything else, with its reason: an import or compile
//                error, a run error, or the first mismatching output.
// Node tests often feed shape-like operands (Reshape's shape, Slice's
// starts...) as graph inputs; trc needs those at compile time, so the
// inputs the importer asks for (ImportReport::neededConstants) are bound to
// the data set's values and the import is retried; such inputs are not fed
// at run time. Test data holds bfloat16 tensors as UINT16 (NumPy has no
// bfloat16): fed to and compared with bf16 slots as the bits they are.
//
// Preconditions: `registry` holds trc's dialects, the native target is
// initialized; compiled programs call trc_rt_*, which the executable
// exports. Runs in the calling process: a crash of a compiled program is
// the caller's (NodeTestRunner.h runs each test in a child process).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_CONFORMANCE_NODETEST_H
#define TRC_CONFORMANCE_NODETEST_H

#include "trc/Conformance/TestTensors.h"

#include "mlir/IR/DialectRegistry.h"

#include <functional>
#include <string>

namespace trc::conformance {

enum class Outcome { Passed, Imported, Unsupported, Failed };

struct NodeTestResult {
  Outcome outcome = Outcome::Failed;
  std::string reason; // the first error line or mismatch; "" when passed
};

struct NodeTestOptions {
  bool importOnly = false;
  int optLevel = 3; // LLVM's, as trc-opt --trc-compile
  Tolerance tolerance;
};

/// Runs the node test in folder `dir` (see above), compiling into
/// `scratch`; `onStage` hears "import", "compile" and "run" as each starts.
NodeTestResult runNodeTest(const std::string &dir, const std::string &scratch,
                           const NodeTestOptions &options, const mlir::DialectRegistry &registry,
                           const std::function<void(const char *stage)> &onStage);

} // namespace trc::conformance

#endif // TRC_CONFORMANCE_NODETEST_H
