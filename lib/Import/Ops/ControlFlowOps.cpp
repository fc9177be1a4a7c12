//===- ControlFlowOps.cpp - Loop, Scan and If, unrolled at import -----------===//
//
// trc compiles for concrete shapes, so the control flow of exported models
// (torch.onnx writes repeat_interleave over a dynamic batch as a Loop that
// fills a sequence) is decided at compile time: a Loop whose trip count and
// conditions fold to constants is unrolled, its body imported once per
// iteration; an If whose condition folds imports only the branch taken. Each
// import of a subgraph is a scope nested in the node's (Subgraph.h).
//
// Loop: the body gets (iteration number: an i64 scalar, condition: an i1
// scalar, the loop-carried values: tensors or sequences) and returns (the
// next condition, the next loop-carried values, the scan outputs). The
// Loop's outputs are the final loop-carried values, then each scan output's
// values of every iteration stacked along a new axis 0.
//
// Scan (opset 9 on): one iteration per slice of the scan inputs along their
// axes (in their directions); the body gets the states and the slices and
// returns the next states and the scan outputs' slices, stacked along their
// axes (in their directions).
//
// Preconditions: the trip count M (if any), the condition input (if any) and
// every iteration's condition output are compile-time constants, at most
// kMaxUnrolledIterations iterations run (kMaxUnrolledInModel in all loops of
// the model), and a scan output of a loop that runs no iteration has a
// shape the body declares. Otherwise an error names the input or output
// that is not constant, or the limit.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "../Subgraph.h"
#include "../TensorData.h"
#include "Common.h"

using namespace mlir;

namespace trc::import {
namespace {

constexpr int64_t kMaxUnrolledIterations = 4096;
// All iterations of all loops of a model, nested ones multiplied (a bound on
// the import's time and the program's size).
constexpr int64_t kMaxUnrolledInModel = 65536;
// Why an operand must be constant (the importer's generic hint is about
// dynamic axes; here it is what trc cannot do).
constexpr const char *kLoopHint =
    "a Loop decided at run time is not supported (trc unrolls Loop at import)";
constexpr const char *kIfHint =
    "an If decided at run time is not supported (trc imports the branch taken)";

// Whether a constant tensor of one element is non-zero (true), or nullopt.
std::optional<bool> constantTruth(Value v) {
  DenseElementsAttr attr;
  if (!v || !matchPattern(v, m_Constant(&attr)) || attr.getNumElements() != 1)
    return std::nullopt;
  if (isa<IntegerType>(attr.getElementType()))
    return !(*attr.getValues<APInt>().begin()).isZero();
  if (isa<FloatType>(attr.getElementType()))
    return !(*attr.getValues<APFloat>().begin()).isZero();
  return std::nullopt;
}

// A condition input that folds to a constant; nullopt after an error.
std::optional<bool> constantCondition(ImportContext &ctx, int input, StringRef what,
                                      StringRef hint) {
  if (!ctx.constantInput(input, what, hint)) {
    (void)ctx.markUnsupported(); // decided at run time: what trc does not cover
    return std::nullopt;
  }
  auto truth = constantTruth(ctx.input(input));
  if (!truth)
    (void)ctx.fail(what, " (input '", ctx.node().input(input),
                   "') must be a boolean scalar");
  return truth;
}

// The graph attribute `name` of the node, or null after an error.
const onnx::GraphProto *graphAttr(ImportContext &ctx, StringRef name) {
  const auto *attr = ctx.attr(name);
  if (!attr || !attr->has_g()) {
    (void)ctx.fail("the graph attribute ", name, " is missing");
    return nullptr;
  }
  return &attr->g();
}

// Counts one more unrolled iteration against the model's budget; an error
// past it.
LogicalResult countIteration(ImportContext &ctx) {
  if (++ctx.state().outermost().unrolledIterations <= kMaxUnrolledInModel)
    return success();
  return ctx.unsupported("more than ", kMaxUnrolledInModel,
                  " loop iterations in the model (nested loops multiply); models that "
                  "large are not supported (trc unrolls loops at import)");
}

// A scan output of a loop that ran no iteration: [0, <the body's declared
// shape>], or null after an error when the body does not declare it fully.
Value emptyScanOutput(ImportContext &ctx, const onnx::ValueInfoProto &declared) {
  const auto &tensorType = declared.type().tensor_type();
  Type elem = elementTypeOf(tensorType.elem_type(), ctx.context());
  SmallVector<int64_t> shape{0};
  bool known = declared.type().has_tensor_type() && elem && tensorType.has_shape();
  for (int i = 0; known && i < tensorType.shape().dim_size(); ++i) {
    known = tensorType.shape().dim(i).has_dim_value();
    shape.push_back(tensorType.shape().dim(i).dim_value());
  }
  if (!known) {
    (void)ctx.fail("the loop runs no iteration and the body does not declare the "
                   "element type and shape of its scan output '",
                   declared.name(), "'");
    return {};
  }
  return ctx.splat(RankedTensorType::get(shape, elem), 0);
}

// The values of one scan output of every iteration along a new axis 0.
Value stackScanOutput(ImportContext &ctx, ArrayRef<Value> values, StringRef name) {
  SmallVector<Value> rows;
  auto first = typeOf(values[0]);
  for (auto [i, v] : llvm::enumerate(values)) {
    if (typeOf(v) != first) {
      (void)ctx.fail("scan output '", name, "' is ", typeOf(v), " in iteration ", i,
                     " but ", first, " in iteration 0");
      return {};
    }
    SmallVector<int64_t> shape{1};
    shape.append(first.getShape().begin(), first.getShape().end());
    rows.push_back(ctx.reshape(v, shape));
    if (!rows.back())
      return {};
  }
  return concatAlong(ctx, rows, 0);
}

LogicalResult importLoop(ImportContext &ctx) {
  const onnx::GraphProto *body = graphAttr(ctx, "body");
  if (!body)
    return failure();
  int numCarried = std::max(ctx.numInputs() - 2, 0);
  int numScans = body->output_size() - 1 - numCarried;
  if (body->input_size() != 2 + numCarried || numScans < 0 ||
      ctx.numOutputs() > numCarried + numScans)
    return ctx.fail("the body has ", body->input_size(), " inputs and ",
                    body->output_size(), " outputs for ", numCarried,
                    " loop-carried values and ", ctx.numOutputs(), " outputs");

  // Both operands are checked before failing, so one import names both.
  std::optional<int64_t> tripCount;
  bool constantOperands = true;
  if (ctx.hasInput(0)) {
    auto m = ctx.constantInts(0, "trip count M", kLoopHint);
    if (!m)
      (void)ctx.markUnsupported();
    else if (m->size() == 1)
      tripCount = (*m)[0];
    else
      (void)ctx.fail("trip count M must be a scalar");
    constantOperands = tripCount.has_value();
  }
  std::optional<bool> condition = true;
  if (ctx.hasInput(1))
    condition = constantCondition(ctx, 1, "condition cond", kLoopHint);
  if (!constantOperands || !condition)
    return failure();
  if (!tripCount && !ctx.hasInput(1))
    return ctx.fail("neither a trip count M nor a condition: the loop never ends");
  if (tripCount && *tripCount > kMaxUnrolledIterations)
    return ctx.unsupported("trip count M is ", *tripCount, "; loops of more than ",
                    kMaxUnrolledIterations,
                    " iterations are not supported (trc unrolls Loop at import)");

  SmallVector<Binding> carried;
  for (int i = 0; i < numCarried; ++i) {
    carried.push_back(ctx.anyInput(2 + i));
    if (!carried.back())
      return failure();
  }
  std::vector<SmallVector<Value>> scans(numScans);
  Type i64 = ctx.builder().getI64Type(), i1 = ctx.builder().getI1Type();
  int64_t iteration = 0;
  for (; *condition && (!tripCount || iteration < *tripCount); ++iteration) {
    if (iteration == kMaxUnrolledIterations)
      return ctx.unsupported("the condition is still true after ", kMaxUnrolledIterations,
                      " iterations; loops of more iterations are not supported (trc "
                      "unrolls Loop at import)");
    if (failed(countIteration(ctx)))
      return failure();
    SmallVector<Binding> inputs{
        {ctx.scalar(i64, static_cast<double>(iteration)), std::nullopt},
        {ctx.scalar(i1, 1), std::nullopt}};
    inputs.append(carried.begin(), carried.end());
    std::string what = "iteration " + std::to_string(iteration) + " of the body";
    auto outputs = importSubgraph(ctx, *body, inputs, what);
    if (!outputs)
      return failure();
    condition = (*outputs)[0].tensor ? constantTruth((*outputs)[0].tensor) : std::nullopt;
    if (!condition)
      return ctx.unsupported(what, ": the condition output '", body->output(0).name(),
                      "' is not a compile-time constant boolean scalar; ", kLoopHint);
    for (int i = 0; i < numCarried; ++i)
      carried[i] = (*outputs)[1 + i];
    for (int k = 0; k < numScans; ++k) {
      Value v = (*outputs)[1 + numCarried + k].tensor;
      if (!v)
        return ctx.fail(what, ": scan output '", body->output(1 + numCarried + k).name(),
                        "' is a sequence, not a tensor");
      scans[k].push_back(v);
    }
  }

  for (int i = 0; i < numCarried; ++i)
    if (failed(ctx.setAnyOutput(i, carried[i])))
      return failure();
  for (int k = 0; k < numScans; ++k) {
    if (!ctx.wantsOutput(numCarried + k))
      continue;
    const auto &declared = body->output(1 + numCarried + k);
    Value stacked = scans[k].empty() ? emptyScanOutput(ctx, declared)
                                     : stackScanOutput(ctx, scans[k], declared.name());
    if (failed(ctx.setOutput(numCarried + k, stacked)))
      return failure();
  }
  return success();
}

LogicalResult importIf(ImportContext &ctx) {
  auto condition = constantCondition(ctx, 0, "condition cond", kIfHint);
  if (!condition)
    return failure();
  StringRef branchName = *condition ? "then_branch" : "else_branch";
  const onnx::GraphProto *branch = graphAttr(ctx, branchName);
  if (!branch)
    return failure();
  if (branch->output_size() != ctx.numOutputs())
    return ctx.fail(branchName, " has ", branch->output_size(), " outputs, the node ",
                    ctx.numOutputs());
  auto outputs = importSubgraph(ctx, *branch, {}, branchName);
  if (!outputs)
    return failure();
  for (int i = 0; i < ctx.numOutputs(); ++i)
    if (failed(ctx.setAnyOutput(i, (*outputs)[i])))
      return failure();
  return success();
}

// Scan's per-axis attribute `name` for `count` values: the attribute's, or
// all `fill`; an error when the length differs.
std::optional<SmallVector<int64_t>> scanInts(ImportContext &ctx, StringRef name,
                                             int64_t count, int64_t fill) {
  auto values = ctx.intsAttr(name);
  if (!values)
    return SmallVector<int64_t>(count, fill);
  if (static_cast<int64_t>(values->size()) != count) {
    (void)ctx.fail(name, " has ", values->size(), " values, expected ", count);
    return std::nullopt;
  }
  return values;
}

LogicalResult importScan(ImportContext &ctx) {
  const onnx::GraphProto *body = graphAttr(ctx, "body");
  if (!body)
    return failure();
  int64_t numScanInputs = ctx.intAttr("num_scan_inputs", 0);
  int64_t numStates = ctx.numInputs() - numScanInputs;
  int64_t numScanOutputs = body->output_size() - numStates;
  if (numScanInputs < 1 || numStates < 0 || numScanOutputs < 0 ||
      body->input_size() != ctx.numInputs())
    return ctx.fail("the body has ", body->input_size(), " inputs and ",
                    body->output_size(), " outputs for ", ctx.numInputs(),
                    " inputs of which ", numScanInputs, " are scanned");
  auto inAxes = scanInts(ctx, "scan_input_axes", numScanInputs, 0);
  auto inDirections = scanInts(ctx, "scan_input_directions", numScanInputs, 0);
  auto outAxes = scanInts(ctx, "scan_output_axes", numScanOutputs, 0);
  auto outDirections = scanInts(ctx, "scan_output_directions", numScanOutputs, 0);
  if (!inAxes || !inDirections || !outAxes || !outDirections)
    return failure();

  SmallVector<Binding> states;
  for (int64_t i = 0; i < numStates; ++i) {
    Value v = ctx.input(i);
    if (!v)
      return failure();
    states.push_back({v, std::nullopt});
  }
  // Each scan input cut into its slices along its axis (the axis dropped),
  // in the order the iterations read them.
  std::vector<SmallVector<Value>> slices;
  int64_t length = -1;
  for (int64_t j = 0; j < numScanInputs; ++j) {
    Value x = ctx.input(numStates + j);
    if (!x)
      return failure();
    auto type = typeOf(x);
    auto axis = ctx.axis((*inAxes)[j], type.getRank(), "scan_input_axes value");
    if (!axis)
      return failure();
    int64_t n = type.getDimSize(*axis);
    if (length >= 0 && n != length)
      return ctx.fail("scan inputs of lengths ", length, " and ", n);
    length = n;
    SmallVector<Value> pieces = splitAlong(ctx, x, *axis, SmallVector<int64_t>(n, 1));
    if (static_cast<int64_t>(pieces.size()) != n)
      return failure();
    SmallVector<int64_t> shape(type.getShape());
    shape.erase(shape.begin() + *axis);
    for (Value &piece : pieces)
      if (!(piece = ctx.reshape(piece, shape)))
        return failure();
    if ((*inDirections)[j])
      std::reverse(pieces.begin(), pieces.end());
    slices.push_back(std::move(pieces));
  }
  if (length > kMaxUnrolledIterations)
    return ctx.unsupported("scans ", length, " iterations; scans of more than ",
                    kMaxUnrolledIterations,
                    " iterations are not supported (trc unrolls Scan at import)");

  std::vector<SmallVector<Value>> scans(numScanOutputs);
  for (int64_t t = 0; t < length; ++t) {
    if (failed(countIteration(ctx)))
      return failure();
    SmallVector<Binding> inputs(states);
    for (auto &pieces : slices)
      inputs.push_back({pieces[t], std::nullopt});
    std::string what = "iteration " + std::to_string(t) + " of the body";
    auto outputs = importSubgraph(ctx, *body, inputs, what);
    if (!outputs)
      return failure();
    for (int64_t i = 0; i < numStates + numScanOutputs; ++i)
      if (!(*outputs)[i].tensor)
        return ctx.fail(what, ": output '", body->output(i).name(),
                        "' is a sequence, not a tensor");
    for (int64_t i = 0; i < numStates; ++i)
      states[i] = (*outputs)[i];
    for (int64_t k = 0; k < numScanOutputs; ++k)
      scans[k].push_back((*outputs)[numStates + k].tensor);
  }

  for (int64_t i = 0; i < numStates; ++i)
    if (failed(ctx.setOutput(i, states[i].tensor)))
      return failure();
  for (int64_t k = 0; k < numScanOutputs; ++k) {
    if (!ctx.wantsOutput(numStates + k))
      continue;
    const auto &declared = body->output(numStates + k);
    if ((*outDirections)[k])
      std::reverse(scans[k].begin(), scans[k].end());
    Value stacked = scans[k].empty() ? emptyScanOutput(ctx, declared)
                                     : stackScanOutput(ctx, scans[k], declared.name());
    if (!stacked)
      return failure();
    // Stacked along axis 0; moved to the scan output axis.
    int64_t rank = typeOf(stacked).getRank();
    auto axis = ctx.axis((*outAxes)[k], rank, "scan_output_axes value");
    if (!axis)
      return failure();
    if (*axis != 0) {
      SmallVector<int64_t> permutation, shape;
      for (int64_t d = 1; d < rank; ++d)
        permutation.push_back(d);
      permutation.insert(permutation.begin() + *axis, 0);
      for (int64_t d : permutation)
        shape.push_back(typeOf(stacked).getDimSize(d));
      stacked = ctx.build<TransposeOp>(
          RankedTensorType::get(shape, typeOf(stacked).getElementType()), stacked,
          permutation);
    }
    if (failed(ctx.setOutput(numStates + k, stacked)))
      return failure();
  }
  return success();
}

} // namespace

void registerControlFlowHandlers(HandlerRegistry &r) {
  r.add("Loop", 1, importLoop);
  r.add("If", 1, importIf);
  // Scan-8 (a batch axis and sequence_lens) is not supported.
  r.add("Scan", 9, importScan);
}

} // namespace trc::import
