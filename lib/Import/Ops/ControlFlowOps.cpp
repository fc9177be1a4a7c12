//===- ControlFlowOps.cpp - Loop and If, unrolled at import -----------------===//
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
// Preconditions: the trip count M (if any), the condition input (if any) and
// every iteration's condition output are compile-time constants, at most
// kMaxUnrolledIterations iterations run, and a scan output of a loop that
// runs no iteration has a shape the body declares. Otherwise an error names
// the input or output that is not constant.
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
  if (!ctx.constantInput(input, what, hint))
    return std::nullopt;
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
    if (m && m->size() == 1)
      tripCount = (*m)[0];
    else if (m)
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
    return ctx.fail("trip count M is ", *tripCount, "; loops of more than ",
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
      return ctx.fail("the condition is still true after ", kMaxUnrolledIterations,
                      " iterations; loops of more iterations are not supported (trc "
                      "unrolls Loop at import)");
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
      return ctx.fail(what, ": the condition output '", body->output(0).name(),
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

} // namespace

void registerControlFlowHandlers(HandlerRegistry &r) {
  r.add("Loop", 1, importLoop);
  r.add("If", 1, importIf);
}

} // namespace trc::import
