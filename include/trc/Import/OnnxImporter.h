//===- OnnxImporter.h - ONNX ModelProto -> trc IR ---------------*- C++ -*-===//
//
// Imports an ONNX model file into a module of the trc dialect with static
// shapes. Dynamic axes are fixed by `ImportOptions` (symbolic dimension names
// or whole input shapes); shape-computation subgraphs fold to constants.
//
// Errors are printed as `error: <file>: ...` lines (every unsupported op at
// once, or the first structural/shape error) and the result is null; nothing
// else is written. Warnings (`warning: ...`) do not stop the import.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_IMPORT_ONNXIMPORTER_H
#define TRC_IMPORT_ONNXIMPORTER_H

#include "trc/Import/InitializerRoles.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace onnx {
class GraphProto;
} // namespace onnx

namespace trc {

struct ImportOptions {
  /// Sizes of symbolic dimensions by name (`--dim batch=8`).
  std::map<std::string, int64_t> dimSizes;
  /// Whole shapes of named graph inputs (`--input-shape ids=8x256`).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Graph inputs bound to compile-time values: name -> a file holding a
  /// serialized TensorProto (as in ONNX test data). Such inputs leave @main's
  /// arguments and fold like constants (e.g. a Reshape's shape input).
  std::map<std::string, std::string> constantInputs;
  /// Which float initializers train (trc/Import/InitializerRoles.h):
  /// names matching a `trainablePatterns` regex train, else names matching a
  /// `frozenPatterns` regex are frozen, else the exporter's tags decide.
  std::vector<std::string> frozenPatterns;    // --freeze
  std::vector<std::string> trainablePatterns; // --trainable
  /// Whether an export's folded parameters (InitializerRoles.h rule 4) are an
  /// error. Forward-only users, where nothing trains, turn it off.
  bool refuseFoldedParameters = true;
  /// Import as the model's evaluation (PyTorch's module.eval()), whatever
  /// the export's training_mode says: Dropout is the identity and
  /// BatchNormalization normalizes with its running statistics (which it
  /// outputs unchanged). The forward programs of --eval-data and predict() set
  /// it; a training step never does.
  bool evaluation = false;
  /// Cross-check our shapes against ONNX shape inference (opsets <= 17).
  bool onnxShapeInference = true;
  /// Whether tensors may load external data from files beside `path`. Off:
  /// every external-data tensor is an error and no file is opened (the fuzzer
  /// sets this, so its in-memory inputs never read from the working folder).
  bool allowExternalData = true;
};

/// How an import re-specialized a static export to the input shapes asked
/// for (ImportOptions::inputShapes other than the file's fixed sizes): the
/// shape constants the exporter traced are re-derived for the new sizes.
struct RespecializeReport {
  /// "'input_ids' [2, 16] -> [4, 16]", per graph input given other sizes.
  std::vector<std::string> inputs;
  /// The shape each such input was traced at, by name.
  std::map<std::string, std::vector<int64_t>> tracedShapes;
  /// "node 'N' (Reshape) shape [2, 16, 4, 8] -> [4, 16, 4, 8]", per change.
  std::vector<std::string> constants;
};

/// What an import learned beside its module, as data.
struct ImportReport {
  /// How a static export was re-specialized (empty when it was not).
  RespecializeReport respecialized;
  /// On failure: the values nodes needed as compile-time constants (a
  /// Reshape's shape, Slice's starts, Tile's repeats...), in order, each
  /// once. Tools that hold input values (trc-run, trc-onnx-conformance)
  /// bind those through `constantInputs` and import again.
  std::vector<std::string> neededConstants;
  /// On failure: the errors that say what trc does not cover (an op, an
  /// element type, an op's mode or attribute, a value known only at run
  /// time where trc needs it at import), each as printed after the file
  /// name; empty when the model is malformed or nothing failed. Tools
  /// classify failures by it (trc-onnx-conformance's "unsupported").
  std::vector<std::string> unsupported;
};

/// Reads `path` (an .onnx file, external data beside it) into a trc module.
/// Diagnostics go to `diag`; returns null on error. When `choices` is given,
/// it receives the decision for every float initializer declared as a
/// parameter (which train, which are frozen, and why); `report`, what else
/// the import learned (ImportReport).
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxFile(llvm::StringRef path, mlir::MLIRContext *context, const ImportOptions &options,
               llvm::raw_ostream &diag, std::vector<InitializerChoice> *choices = nullptr,
               ImportReport *report = nullptr);

/// Same, from bytes already in memory (the fuzzer's entry point). `path` names
/// the model in diagnostics and anchors relative external-data locations.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxBytes(llvm::StringRef bytes, llvm::StringRef path, mlir::MLIRContext *context,
                const ImportOptions &options, llvm::raw_ostream &diag,
                std::vector<InitializerChoice> *choices = nullptr,
                ImportReport *report = nullptr);

/// Parses "name=value[,name=value]" into `options.dimSizes` and
/// "name=AxBxC" into `options.inputShapes`; false (and a message) on bad text.
bool parseDimSpec(llvm::StringRef spec, ImportOptions &options, std::string &error);
bool parseInputShapeSpec(llvm::StringRef spec, ImportOptions &options,
                         std::string &error);
/// Parses "name=FILE.pb" into `options.constantInputs`.
bool parseConstantInputSpec(llvm::StringRef spec, ImportOptions &options,
                            std::string &error);

/// A graph input (not an initializer) as the file declares it.
struct GraphInputInfo {
  std::string name;
  bool isInteger = false;
  int rank = 0;
  /// The element type in the runtime's spelling ("f32", "i64", "i1", ...;
  /// "" for a type it has no name for) and the dims (-1: dynamic).
  std::string dtype;
  std::vector<int64_t> dims;
  /// The node that slices this [batch, sequence] input from position 1
  /// (labels a causal LM shifts itself, LabelShift.h); "" when none does.
  std::string shiftedBy;
};

/// The graph inputs of a model file, in order; false with `error` set if the
/// file does not parse as an ONNX model.
bool listGraphInputs(llvm::StringRef path, std::vector<GraphInputInfo> &inputs,
                     std::string &error);

/// An initializer that the importer does not declare as a parameter but ties
/// to one: an exporter's constant-folded copy of a weight (PyTorch's
/// "onnx::MatMul_N" = transpose("wte.weight")) is imported as a use of that
/// parameter, so the two train as one.
struct TiedInitializer {
  std::string name;      // the copy in the file
  std::string parameter; // the initializer (parameter) it was computed from
  bool transposed;       // name == transpose(parameter), else name == parameter
};

/// The tied initializers of `graph`, by the importer's own rule (ties are
/// found only among initializers whose data is in the file). A writer of
/// trained weights must write each as the same function of the trained
/// parameter. Needs the ONNX protobuf headers (trc_onnx) to call.
std::vector<TiedInitializer> findTiedInitializers(const onnx::GraphProto &graph);

/// Loads every dialect the importer creates ops of.
void loadImportDialects(mlir::MLIRContext &context);

} // namespace trc

#endif // TRC_IMPORT_ONNXIMPORTER_H
