//===- ImportContext.cpp - what an op handler sees -------------------------===//
#include "ImportContext.h"
#include "TensorData.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APSInt.h"

using namespace mlir;

namespace trc::import {

namespace {

/// `value` as an integer of type `elem`, saturated to its range (Clip's
/// default bounds are -inf and +inf, also for integer tensors); NaN is 0.
llvm::APInt saturatingInteger(Type elem, double value) {
  unsigned width = elem.getIntOrFloatBitWidth();
  llvm::APSInt result(width, /*isUnsigned=*/elem.isUnsignedInteger() || width == 1);
  bool exact = false;
  (void)llvm::APFloat(value).convertToInteger(result, llvm::APFloat::rmTowardZero, &exact);
  return result;
}

} // namespace

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::optional<llvm::SmallVector<int64_t>> constantIntsOf(Value v) {
  DenseElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) ||
      !isa<IntegerType>(attr.getElementType()))
    return std::nullopt;
  llvm::SmallVector<int64_t> out;
  bool isUnsigned = attr.getElementType().isUnsignedInteger();
  for (const APInt &i : attr.getValues<APInt>())
    out.push_back(isUnsigned ? static_cast<int64_t>(i.getZExtValue()) : i.getSExtValue());
  return out;
}

GraphState GraphState::nestedIn(const GraphState &outer) {
  GraphState state;
  state.fileName = outer.fileName;
  state.evaluation = outer.evaluation;
  state.opsets = outer.opsets;
  state.outer = &outer;
  return state;
}

Binding GraphState::lookup(StringRef name) const {
  for (const GraphState *scope = this; scope; scope = scope->outer) {
    if (auto it = scope->values.find(name); it != scope->values.end())
      return {it->second, std::nullopt};
    if (auto it = scope->sequences.find(name); it != scope->sequences.end())
      return {Value(), it->second};
  }
  return {};
}

void GraphState::bind(StringRef name, const Binding &binding) {
  values.erase(name);
  sequences.erase(name);
  if (binding.sequence)
    sequences[name] = *binding.sequence;
  else
    values[name] = binding.tensor;
}

int64_t GraphState::opsetOf(const onnx::NodeProto &node) const {
  bool isDefault = node.domain().empty() || node.domain() == "ai.onnx";
  auto it = opsets.find(isDefault ? "" : node.domain());
  return it == opsets.end() ? 0 : it->second;
}

ImportContext::ImportContext(OpBuilder &builder, GraphState &state,
                             const onnx::NodeProto &node, int64_t opset)
    : builder_(builder), state_(state), node_(node), opset_(opset),
      loc_(NameLoc::get(builder.getStringAttr(node.name().empty() ? node.op_type()
                                                                 : node.name()),
                        FileLineColLoc::get(builder.getContext(), state.fileName,
                                            0, 0))) {}

void ImportContext::recordError(const std::string &message) {
  state_.errors.push_back("node '" + node_.name() + "' (" + node_.op_type() +
                          "): " + message);
}

LogicalResult ImportContext::markUnsupported() {
  if (!state_.errors.empty())
    state_.outermost().unsupported.push_back(state_.errors.back());
  return failure();
}

bool ImportContext::hasInput(int i) const {
  return i < node_.input_size() && !node_.input(i).empty();
}

Value ImportContext::input(int i) {
  if (!hasInput(i)) {
    (void)fail("missing required input #", i);
    return {};
  }
  Binding binding = state_.lookup(node_.input(i));
  if (binding.sequence) {
    (void)fail("input '", node_.input(i), "' is a sequence; this op takes tensors");
    return {};
  }
  if (!binding.tensor)
    (void)fail("input '", node_.input(i), "' has no value");
  return binding.tensor;
}

std::optional<Sequence> ImportContext::sequenceInput(int i) {
  Binding binding = anyInput(i);
  if (binding.tensor)
    (void)fail("input '", node_.input(i), "' is a tensor; a sequence is expected");
  return binding.sequence;
}

Binding ImportContext::anyInput(int i) {
  if (!hasInput(i)) {
    (void)fail("missing required input #", i);
    return {};
  }
  Binding binding = state_.lookup(node_.input(i));
  if (!binding)
    (void)fail("input '", node_.input(i), "' has no value");
  return binding;
}

RankedTensorType ImportContext::inputType(int i) {
  Value v = input(i);
  return v ? cast<RankedTensorType>(v.getType()) : RankedTensorType();
}

DenseElementsAttr ImportContext::constantInput(int i, StringRef what, StringRef hint) {
  Value v = input(i);
  DenseElementsAttr attr;
  if (v && !matchPattern(v, m_Constant(&attr))) {
    std::vector<std::string> &needed = state_.outermost().neededConstants;
    if (llvm::find(needed, node_.input(i)) == needed.end())
      needed.push_back(node_.input(i));
    (void)fail(what, " (input '", node_.input(i), "') must be a compile-time constant; ",
               hint);
  }
  return attr;
}

std::optional<llvm::SmallVector<int64_t>>
ImportContext::constantInts(int i, StringRef what, StringRef hint) {
  DenseElementsAttr attr = constantInput(i, what, hint);
  if (!attr)
    return std::nullopt;
  auto values = constantIntsOf(input(i));
  if (!values)
    (void)fail(what, " (input '", node_.input(i), "') must hold integers");
  return values;
}

std::optional<double> ImportContext::constantFloat(int i, StringRef what) {
  DenseElementsAttr attr = constantInput(i, what);
  if (!attr)
    return std::nullopt;
  if (attr.getNumElements() != 1 || !isa<FloatType>(attr.getElementType())) {
    (void)fail(what, " (input '", node_.input(i), "') must be a scalar float");
    return std::nullopt;
  }
  return (*attr.getValues<APFloat>().begin()).convertToDouble();
}

const onnx::AttributeProto *ImportContext::attr(StringRef name) const {
  for (const auto &a : node_.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t ImportContext::intAttr(StringRef name, int64_t defaultValue) const {
  const auto *a = attr(name);
  return a ? a->i() : defaultValue;
}

float ImportContext::floatAttr(StringRef name, float defaultValue) const {
  const auto *a = attr(name);
  return a ? a->f() : defaultValue;
}

std::string ImportContext::stringAttr(StringRef name, StringRef defaultValue) const {
  const auto *a = attr(name);
  return a ? a->s() : defaultValue.str();
}

std::optional<llvm::SmallVector<int64_t>> ImportContext::intsAttr(StringRef name) const {
  const auto *a = attr(name);
  if (!a)
    return std::nullopt;
  return llvm::SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

bool ImportContext::wantsOutput(int i) const {
  return i < node_.output_size() && !node_.output(i).empty();
}

LogicalResult ImportContext::setOutput(int i, Value value) {
  if (!value)
    return failure();
  if (wantsOutput(i))
    state_.bind(node_.output(i), {value, std::nullopt});
  return success();
}

LogicalResult ImportContext::setSequenceOutput(int i, Sequence sequence) {
  if (wantsOutput(i))
    state_.bind(node_.output(i), {Value(), std::move(sequence)});
  return success();
}

LogicalResult ImportContext::setAnyOutput(int i, const Binding &binding) {
  if (!binding)
    return failure();
  if (wantsOutput(i))
    state_.bind(node_.output(i), binding);
  return success();
}

bool ImportContext::updateParameter(Value parameter, Value value) {
  auto read = parameter.getDefiningOp<GetParameterOp>();
  if (!read || !value || state_.outer)
    return false;
  std::string name = read.getName().str();
  for (const auto &[updated, unused] : state_.parameterUpdates)
    if (updated == name) {
      (void)fail("parameter '", name, "' is already updated by another node");
      return false;
    }
  state_.parameterUpdates.emplace_back(name, value);
  return true;
}

Value ImportContext::verifyAndFold(Operation *op) {
  // Shapes computed from a file's constants (Expand, Tile, Concat...) may be
  // negative or absurd; such a type must not reach verifiers or folders, which
  // multiply dimensions assuming they are sane.
  for (Type t : op->getResultTypes()) {
    auto type = dyn_cast<RankedTensorType>(t);
    if (!type)
      continue;
    std::string bad = checkDims(type.getShape());
    if (!bad.empty()) {
      op->erase();
      recordError("result shape " + shapeString(type.getShape()) + ": " + bad);
      return {};
    }
  }
  std::string messages;
  {
    ScopedDiagnosticHandler capture(context(), [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error)
        messages += (messages.empty() ? "" : "; ") + diag.str();
      return success();
    });
    if (failed(mlir::verify(op, /*verifyRecursively=*/false))) {
      op->erase();
      recordError(messages.empty() ? "invalid operation" : messages);
      return {};
    }
  }
  SmallVector<Value, 1> folded;
  if (op->getNumResults() == 1 && succeeded(builder_.tryFold(op, folded)) &&
      !folded.empty() && folded[0].getDefiningOp() != op) {
    op->erase();
    return folded[0];
  }
  return op->getResult(0);
}

Value ImportContext::splat(RankedTensorType type, double value) {
  Type elem = type.getElementType();
  Attribute scalarAttr;
  if (auto f = dyn_cast<FloatType>(elem))
    scalarAttr = builder_.getFloatAttr(f, value);
  else
    scalarAttr = builder_.getIntegerAttr(elem, saturatingInteger(elem, value));
  return builder_.create<ConstantOp>(loc_, SplatElementsAttr::get(type, scalarAttr));
}

Value ImportContext::int64s(llvm::ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    builder_.getI64Type());
  return builder_.create<ConstantOp>(loc_, DenseIntElementsAttr::get(type, values));
}

std::optional<int64_t> ImportContext::axis(int64_t a, int64_t rank, StringRef what) {
  if (a < -rank || a >= rank) {
    (void)fail(what, " ", a, " is out of range for rank ", rank);
    return std::nullopt;
  }
  return a < 0 ? a + rank : a;
}

std::optional<llvm::SmallVector<int64_t>>
ImportContext::broadcastShape(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  llvm::SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      (void)fail("shapes ", shapeString(a), " and ", shapeString(b),
                 " cannot be broadcast together");
      return std::nullopt;
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Value ImportContext::broadcastTo(Value v, llvm::ArrayRef<int64_t> shape) {
  if (!v)
    return {};
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getShape() == shape)
    return v;
  int64_t offset = static_cast<int64_t>(shape.size()) - type.getRank();
  if (offset < 0) {
    (void)fail("cannot broadcast ", shapeString(type.getShape()), " to ",
               shapeString(shape));
    return {};
  }
  llvm::SmallVector<int64_t> dims;
  for (int64_t i = 0; i < type.getRank(); ++i)
    dims.push_back(i + offset);
  return build<BroadcastInDimOp>(RankedTensorType::get(shape, type.getElementType()),
                                 v, dims);
}

bool ImportContext::broadcastPair(Value &a, Value &b) {
  if (!a || !b)
    return false;
  auto ta = cast<RankedTensorType>(a.getType()), tb = cast<RankedTensorType>(b.getType());
  if (ta.getElementType() != tb.getElementType()) {
    (void)fail("operand element types differ: ", ta.getElementType(), " and ",
               tb.getElementType());
    return false;
  }
  a = retraceFixedData(a, tb.getShape(), /*broadcast=*/true);
  b = retraceFixedData(b, cast<RankedTensorType>(a.getType()).getShape(), /*broadcast=*/true);
  ta = cast<RankedTensorType>(a.getType());
  tb = cast<RankedTensorType>(b.getType());
  auto shape = broadcastShape(ta.getShape(), tb.getShape());
  if (!shape)
    return false;
  a = broadcastTo(a, *shape);
  b = broadcastTo(b, *shape);
  return a && b;
}

Value ImportContext::reshape(Value v, llvm::ArrayRef<int64_t> shape) {
  if (!v)
    return {};
  auto type = cast<RankedTensorType>(v.getType());
  return build<ReshapeOp>(RankedTensorType::get(shape, type.getElementType()), v);
}

Value ImportContext::convert(Value v, Type elementType) {
  if (!v)
    return {};
  auto type = cast<RankedTensorType>(v.getType());
  return build<ConvertOp>(RankedTensorType::get(type.getShape(), elementType), v);
}

} // namespace trc::import
