//===- ImportContext.h - what an op handler sees ----------------*- C++ -*-===//
//
// An op handler turns one ONNX node into trc ops. It reads its inputs as MLIR
// values (compile-time constants fold as they are built, so shape subgraphs
// disappear), its attributes, and sets its outputs. Every op it builds is
// verified on the spot, so a shape mismatch becomes an error naming the node.
//
// Values live in scopes: the graph's, and one nested scope per import of a
// subgraph (a Loop body's iteration, an If's branch) whose nodes also read
// the names of the scopes around it. A name holds a tensor (an MLIR value) or
// a sequence: a compile-time list of tensors that exists only while
// importing (ONNX sequence ops rearrange the list; no trc op or type
// represents it).
//
// Preconditions: the node's inputs were imported (nodes run in topological
// order) and its op type has a handler for the model's opset.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_IMPORTCONTEXT_H
#define TRC_LIB_IMPORT_IMPORTCONTEXT_H

#include "OnnxProto.h"
#include "Respecialize.h"
#include "trc/Dialect/Trc.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

#include <optional>
#include <string>
#include <vector>

namespace trc::import {

/// An ONNX sequence known at import: its tensors in order, and the element
/// type its tensors have (known even when it is empty: SequenceEmpty's dtype).
struct Sequence {
  llvm::SmallVector<mlir::Value> tensors;
  mlir::Type elementType;
};

/// What a name is bound to in a scope: a tensor or a sequence (one of them).
struct Binding {
  mlir::Value tensor;
  std::optional<Sequence> sequence;
  explicit operator bool() const { return tensor || sequence; }
};

/// Values of one scope by ONNX name, and where errors go. A nested scope
/// (`outer` set) sees every name of the scopes around it unless it binds the
/// name itself.
struct GraphState {
  llvm::StringMap<mlir::Value> values;
  llvm::StringMap<Sequence> sequences;
  std::vector<std::string> errors;
  std::string fileName;
  // Parameters a node gives a new value each training step (BatchNormalization's
  // running statistics), in the order recorded: @main returns each with
  // `trc.update = <parameter>` after the graph's outputs. The model's scope
  // only (subgraphs do not update parameters).
  std::vector<std::pair<std::string, mlir::Value>> parameterUpdates;
  /// Set while a static export is re-specialized to other input sizes
  /// (Respecialize.h); the model's scope only.
  Retrace *retrace = nullptr;
  /// ImportOptions::evaluation (the model's scope; nested scopes copy it).
  bool evaluation = false;
  /// Opset version of each imported domain ("" is ai.onnx).
  std::map<std::string, int64_t> opsets;
  const GraphState *outer = nullptr;
  /// Loop and Scan iterations unrolled so far in the whole model (counted in
  /// the outermost scope; nested loops multiply).
  mutable int64_t unrolledIterations = 0;
  /// Values nodes needed as compile-time constants and found computed at
  /// run time (a Reshape's shape, Slice's starts...), in order, each once
  /// (collected in the outermost scope; ImportReport::neededConstants).
  mutable std::vector<std::string> neededConstants;
  /// Errors about what trc does not cover (ImportReport::unsupported),
  /// collected in the outermost scope.
  mutable std::vector<std::string> unsupported;

  /// A scope nested in `outer` (same file and opsets, no names yet).
  static GraphState nestedIn(const GraphState &outer);
  /// The innermost binding of `name`, or an empty one.
  Binding lookup(llvm::StringRef name) const;
  /// Binds `name` in this scope (replacing what it held here).
  void bind(llvm::StringRef name, const Binding &binding);
  /// The outermost scope (the model's graph).
  const GraphState &outermost() const { return outer ? outer->outermost() : *this; }
  /// The opset version a node imports for its domain (0: not imported).
  int64_t opsetOf(const onnx::NodeProto &node) const;
};

class ImportContext {
public:
  ImportContext(mlir::OpBuilder &builder, GraphState &state,
                const onnx::NodeProto &node, int64_t opset);

  const onnx::NodeProto &node() const { return node_; }
  int64_t opset() const { return opset_; }
  mlir::OpBuilder &builder() { return builder_; }
  mlir::Location loc() const { return loc_; }
  mlir::MLIRContext *context() { return builder_.getContext(); }

  //===--- errors --------------------------------------------------------===//
  /// Records "node 'NAME' (OP): <args...>" and returns failure.
  template <typename... Args> mlir::LogicalResult fail(const Args &...args) {
    std::string message;
    llvm::raw_string_ostream os(message);
    (os << ... << args);
    recordError(message);
    return mlir::failure();
  }
  void recordError(const std::string &message);
  /// As fail, for what trc does not cover (an op's mode or attribute, an
  /// element type, a value known only at run time where trc needs it at
  /// import): also listed in ImportReport::unsupported.
  template <typename... Args> mlir::LogicalResult unsupported(const Args &...args) {
    (void)fail(args...);
    return markUnsupported();
  }
  /// Lists the error recorded last as one of what trc does not cover
  /// (after constantInput and the like with a hint saying so); failure.
  mlir::LogicalResult markUnsupported();

  //===--- inputs --------------------------------------------------------===//
  /// Number of inputs including trailing empty (omitted) ones.
  int numInputs() const { return node_.input_size(); }
  /// True if input `i` is present (optional inputs may be "" or absent).
  bool hasInput(int i) const;
  /// Input `i`; records an error and returns null if it is missing or is a
  /// sequence.
  mlir::Value input(int i);
  /// Input `i` as a sequence; records an error and returns nullopt if it is
  /// missing or a tensor.
  std::optional<Sequence> sequenceInput(int i);
  /// Input `i` whatever it holds; records an error if it has no value.
  Binding anyInput(int i);
  mlir::RankedTensorType inputType(int i);
  /// The value of input `i` if it is a compile-time constant; otherwise
  /// records "<what> (input 'NAME') must be a compile-time constant; <hint>".
  mlir::DenseElementsAttr constantInput(int i, llvm::StringRef what,
                                        llvm::StringRef hint = kDynamicAxisHint);
  /// Values of a constant integer input (axes, shapes, pads...); records an
  /// error naming `what` if it is not a compile-time constant.
  std::optional<llvm::SmallVector<int64_t>>
  constantInts(int i, llvm::StringRef what, llvm::StringRef hint = kDynamicAxisHint);
  /// A shape-like constant integer input (Reshape's and Expand's shape,
  /// Slice's starts and ends, Tile's repeats): as
  /// constantInts, re-derived for the new sizes when the import re-specializes
  /// a static export (Respecialize.h). `axes`: Slice's normalized axes.
  std::optional<llvm::SmallVector<int64_t>> shapeInts(int i, llvm::StringRef what,
                                                      ShapeOperand kind,
                                                      llvm::ArrayRef<int64_t> axes = {},
                                                      bool allowZero = false);
  /// Input `i`, the constant indices of an embedding lookup (positions,
  /// token types) into a table of `rows` rows, re-derived for the new sizes
  /// when the import re-specializes a static export (Respecialize.h);
  /// otherwise as it is. Null (an error recorded) when the re-derived
  /// indices need more rows than the table has.
  mlir::Value embeddingIndices(int i, mlir::Value indices, int64_t rows);
  /// The usual end of the message of an input that is not constant.
  static constexpr const char *kDynamicAxisHint = "is a dynamic axis unset?";
  /// A constant scalar float input (e.g. Dropout's ratio).
  std::optional<double> constantFloat(int i, llvm::StringRef what);

  //===--- attributes ----------------------------------------------------===//
  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t defaultValue) const;
  float floatAttr(llvm::StringRef name, float defaultValue) const;
  std::string stringAttr(llvm::StringRef name, llvm::StringRef defaultValue) const;
  std::optional<llvm::SmallVector<int64_t>> intsAttr(llvm::StringRef name) const;

  //===--- outputs -------------------------------------------------------===//
  int numOutputs() const { return node_.output_size(); }
  /// True if output `i` exists and is named (so something may read it).
  bool wantsOutput(int i) const;
  /// Binds output `i`; fails if `value` is null (an error was recorded).
  mlir::LogicalResult setOutput(int i, mlir::Value value);
  /// When `parameter` is read straight from a parameter (an initializer)
  /// in the model's own graph (not a subgraph), makes `value` its new value
  /// after each training step (the parameter becomes frozen: the optimizer
  /// does not also update it) and returns true; otherwise false. A
  /// parameter updated twice is an error.
  bool updateParameter(mlir::Value parameter, mlir::Value value);
  /// Binds output `i` to a sequence.
  mlir::LogicalResult setSequenceOutput(int i, Sequence sequence);
  /// Binds output `i` to a tensor or sequence; fails if `binding` is empty.
  mlir::LogicalResult setAnyOutput(int i, const Binding &binding);
  /// The scope the node's outputs go to (subgraph imports nest in it).
  GraphState &state() { return state_; }

  //===--- building ------------------------------------------------------===//
  /// Creates an op, verifies it (an invalid op becomes an error of this node
  /// and null), then folds it when it can.
  template <typename OpT, typename... Args> mlir::Value build(Args &&...args) {
    auto op = builder_.create<OpT>(loc_, std::forward<Args>(args)...);
    return verifyAndFold(op.getOperation());
  }
  mlir::Value verifyAndFold(mlir::Operation *op);

  /// A constant tensor of `type` with every element `value`.
  mlir::Value splat(mlir::RankedTensorType type, double value);
  mlir::Value scalar(mlir::Type elementType, double value) {
    return splat(mlir::RankedTensorType::get({}, elementType), value);
  }
  /// A constant 1-D i64 tensor.
  mlir::Value int64s(llvm::ArrayRef<int64_t> values);

  /// Normalizes a possibly negative axis against `rank`; error if out of range.
  std::optional<int64_t> axis(int64_t axis, int64_t rank, llvm::StringRef what = "axis");

  /// Numpy-style broadcast shape of `a` and `b`, or an error.
  std::optional<llvm::SmallVector<int64_t>> broadcastShape(llvm::ArrayRef<int64_t> a,
                                                           llvm::ArrayRef<int64_t> b);
  /// Broadcasts `v` (right-aligned, numpy rules) to `shape`.
  mlir::Value broadcastTo(mlir::Value v, llvm::ArrayRef<int64_t> shape);
  /// Broadcasts two operands to their common shape; checks element types match.
  bool broadcastPair(mlir::Value &a, mlir::Value &b);

  mlir::Value reshape(mlir::Value v, llvm::ArrayRef<int64_t> shape);
  mlir::Value convert(mlir::Value v, mlir::Type elementType);

private:
public:
  /// When re-specializing: `fixed`, data the export fixed (a constant or
  /// frozen initializer: a folded mask, a fill of start tokens) that no
  /// longer fits `want` (the other operand's shape, right-aligned) on an axis
  /// along which it repeats, cut to one slice there: left at 1 to broadcast
  /// (`broadcast`), or repeated to `want`'s size (a Concat's other axes).
  /// Otherwise `fixed` as it is.
  mlir::Value retraceFixedData(mlir::Value fixed, llvm::ArrayRef<int64_t> want, bool broadcast);

private:
  /// The value of data the export fixed: a constant, or a frozen
  /// parameter's initial value; null for anything else.
  mlir::ElementsAttr fixedData(mlir::Value v);
  /// Whether `v` is computed from no graph input (a buffer, or slices of one).
  bool independentOfInputs(mlir::Value v);

  mlir::OpBuilder &builder_;
  GraphState &state_;
  const onnx::NodeProto &node_;
  int64_t opset_;
  mlir::Location loc_;
};

/// "[2, 3, 4]" for messages.
std::string shapeString(llvm::ArrayRef<int64_t> shape);

/// Reads a constant value's integers (i.e. folded shape math), if it is one.
std::optional<llvm::SmallVector<int64_t>> constantIntsOf(mlir::Value v);

} // namespace trc::import

#endif
