//===- MatchGelu.cpp - GELU subgraphs for matmul epilogues -----------------===//
//
// Exporters spell GELU in many ways (x * 0.5 * (1 + erf(x / sqrt 2)),
// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), pow or mul for
// the cube, constants on either side...). Rather than matching each spelling,
// a candidate subgraph (elementwise ops from x whose other operands are
// constants) is evaluated at sample points and compared with both
// definitions.
//
//===----------------------------------------------------------------------===//
#include "trc/Analysis/FusionPlanner.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

using namespace mlir;

namespace trc::fusion {
namespace {

/// The value of a splat constant, possibly broadcast or converted.
std::optional<double> constantValue(Value v) {
  if (isImmediate(v)) {
    auto dense = cast<DenseElementsAttr>(v.getDefiningOp<ConstantOp>().getValue());
    Type element = dense.getElementType();
    if (isa<FloatType>(element))
      return dense.getSplatValue<APFloat>().convertToDouble();
    if (element.isInteger(1))
      return dense.getSplatValue<bool>() ? 1.0 : 0.0;
    if (element.isInteger())
      return static_cast<double>(dense.getSplatValue<APInt>().getSExtValue());
    return std::nullopt;
  }
  if (auto b = v.getDefiningOp<BroadcastInDimOp>())
    return constantValue(b.getOperand());
  if (auto c = v.getDefiningOp<ConvertOp>())
    return constantValue(c.getOperand());
  return std::nullopt;
}

/// The scalar function of an elementwise op, or nullopt.
std::optional<double> evaluate(Operation *op, ArrayRef<double> a) {
  auto unary = [&](double (*f)(double)) -> std::optional<double> { return f(a[0]); };
  if (isa<AddOp>(op)) return a[0] + a[1];
  if (isa<SubOp>(op)) return a[0] - a[1];
  if (isa<MulOp>(op)) return a[0] * a[1];
  if (isa<DivOp>(op)) return a[0] / a[1];
  if (isa<PowOp>(op)) return std::pow(a[0], a[1]);
  if (isa<MaxOp>(op)) return std::max(a[0], a[1]);
  if (isa<MinOp>(op)) return std::min(a[0], a[1]);
  if (isa<NegOp>(op)) return -a[0];
  if (isa<AbsOp>(op)) return std::fabs(a[0]);
  if (isa<ExpOp>(op)) return unary(std::exp);
  if (isa<LogOp>(op)) return unary(std::log);
  if (isa<SqrtOp>(op)) return unary(std::sqrt);
  if (isa<RsqrtOp>(op)) return 1.0 / std::sqrt(a[0]);
  if (isa<TanhOp>(op)) return unary(std::tanh);
  if (isa<ErfOp>(op)) return unary(std::erf);
  if (isa<LogisticOp>(op)) return 1.0 / (1.0 + std::exp(-a[0]));
  if (auto c = dyn_cast<ConvertOp>(op)) {
    if (isa<FloatType>(getElementTypeOrSelf(c.getOperand().getType())) &&
        isa<FloatType>(getElementTypeOrSelf(c.getType())))
      return a[0];
    return std::nullopt;
  }
  return std::nullopt;
}

double geluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double geluTanh(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

/// Evaluates `slice` (block order, ending in the candidate result) with x
/// at `sample`.
std::optional<double> run(Value x, ArrayRef<Operation *> slice, double sample) {
  llvm::DenseMap<Value, double> values;
  values[x] = sample;
  for (Operation *op : slice) {
    SmallVector<double, 2> args;
    for (Value operand : op->getOperands()) {
      auto it = values.find(operand);
      if (it != values.end()) {
        args.push_back(it->second);
        continue;
      }
      std::optional<double> c = constantValue(operand);
      if (!c)
        return std::nullopt;
      args.push_back(*c);
    }
    std::optional<double> r = evaluate(op, args);
    if (!r)
      return std::nullopt;
    values[op->getResult(0)] = *r;
  }
  return values[slice.back()->getResult(0)];
}

/// Whether `slice` computes f at every sample point.
bool computes(Value x, ArrayRef<Operation *> slice, double (*f)(double)) {
  static const double samples[] = {-4.0, -2.5, -1.3, -0.6, -0.05, 0.3, 0.9, 1.7, 3.1};
  for (double s : samples) {
    std::optional<double> got = run(x, slice, s);
    double want = f(s);
    if (!got || !std::isfinite(*got) ||
        std::fabs(*got - want) > 1e-5 * std::max(1.0, std::fabs(want)))
      return false;
  }
  return true;
}

} // namespace

std::optional<GeluMatch> matchGelu(Value x, function_ref<bool(OpOperand &)> ignoreUse) {
  auto type = dyn_cast<RankedTensorType>(x.getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return std::nullopt;
  for (Operation *user : x.getUsers())
    if (auto gelu = dyn_cast<GeluOp>(user)) {
      GeluMatch match;
      match.ops.push_back(gelu);
      match.tanhApproximation = gelu.getTanhApproximation();
      return match;
    }

  // Elementwise ops of x's shape reachable from x whose other operands are
  // constants.
  Block *block = x.getParentBlock();
  llvm::SetVector<Operation *> reach;
  llvm::DenseSet<Value> inside{x};
  SmallVector<Value> worklist{x};
  const unsigned limit = 48;
  while (!worklist.empty() && reach.size() < limit) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      if (reach.contains(user) || user->getBlock() != block ||
          classify(user) != OpClass::Elementwise || isa<GeluOp>(user))
        continue;
      auto resultType = dyn_cast<RankedTensorType>(user->getResult(0).getType());
      if (!resultType || resultType != type)
        continue;
      bool operandsKnown = llvm::all_of(user->getOperands(), [&](Value operand) {
        return inside.contains(operand) || constantValue(operand).has_value();
      });
      if (!operandsKnown)
        continue;
      reach.insert(user);
      inside.insert(user->getResult(0));
      worklist.push_back(user->getResult(0));
    }
  }
  SmallVector<Operation *> ordered(reach.begin(), reach.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });

  for (Operation *last : ordered) {
    // The ops `last` depends on, in block order.
    llvm::SetVector<Operation *> slice;
    SmallVector<Operation *> stack{last};
    while (!stack.empty()) {
      Operation *op = stack.pop_back_val();
      if (!slice.insert(op))
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp(); def && reach.contains(def))
          stack.push_back(def);
    }
    if (slice.size() < 3)
      continue;
    SmallVector<Operation *> sliceOps(slice.begin(), slice.end());
    llvm::sort(sliceOps, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    // Intermediates may only be read inside the slice.
    bool closed = llvm::all_of(sliceOps, [&](Operation *op) {
      if (op == last)
        return true;
      return llvm::all_of(op->getResult(0).getUses(), [&](OpOperand &use) {
        return slice.contains(use.getOwner()) || ignoreUse(use);
      });
    });
    if (!closed)
      continue;
    // It must read x (not only constants).
    bool readsX = llvm::any_of(sliceOps, [&](Operation *op) {
      return llvm::is_contained(op->getOperands(), x);
    });
    if (!readsX)
      continue;
    if (computes(x, sliceOps, geluTanh))
      return GeluMatch{std::move(sliceOps), /*tanhApproximation=*/true};
    if (computes(x, sliceOps, geluErf))
      return GeluMatch{std::move(sliceOps), /*tanhApproximation=*/false};
  }
  return std::nullopt;
}

} // namespace trc::fusion
