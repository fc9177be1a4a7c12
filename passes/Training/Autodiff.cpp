//===- Autodiff.cpp - trc-autodiff -----------------------------------------===//
//
// Reverse-mode automatic differentiation of @main (see Passes.td): @main is
// cloned into @main_grad, the values on a path from a trainable float
// parameter argument to the loss are found (forward: depends on such an
// argument and has a float type; backward: the loss depends on it), and the
// ops that produce them are visited in reverse order, each applying its VJP
// rule (VjpOpInterface; the rules are lib/Training/Vjp*.cpp) to the gradient
// accumulated for its result. Gradients of a value used several times are
// summed. @main_grad returns the loss, one gradient per trainable
// parameter argument, then @main's `trc.update` results (new values of
// frozen parameters, such as running statistics); forward values nothing
// needs any more are erased.
//
// Preconditions: @main has one block (no control flow) and takes its
// parameters as arguments (trc-parameters-to-arguments); its first result is
// a rank-0 float tensor. Integer and i1 values never carry gradients, nor do
// frozen parameters.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Passes.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Parallel/Pipeline.h"
#include "trc/Training/Vjp.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace trc {
#define GEN_PASS_DEF_AUTODIFF
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;
using namespace trc::autodiff;

namespace {

bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

using trc::analysis::inputsOf;

/// Differentiates `fn` (a clone of @main) in place with respect to the
/// arguments `params`; `names` are their parameter names.
LogicalResult differentiate(func::FuncOp fn, ArrayRef<unsigned> params,
                            ArrayRef<StringAttr> names, DictionaryAttr lossAttrs,
                            bool recomputeStatistics) {
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value loss = ret.getOperand(0);

  llvm::DenseSet<Value> active;
  for (unsigned i : params)
    active.insert(body.getArgument(i));
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(inputsOf(op), [&](Value v) { return active.contains(v); }))
      for (Value r : op.getResults())
        if (isFloatTensor(r))
          active.insert(r);
  llvm::DenseSet<Value> needed{loss};
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (llvm::any_of(op.getResults(), [&](Value v) { return needed.contains(v); }))
      for (Value v : inputsOf(op))
        needed.insert(v);
  auto onPath = [&](Value v) { return active.contains(v) && needed.contains(v); };

  SmallVector<Operation *> path;
  bool missing = false;
  for (Operation &op : body.without_terminator()) {
    if (!llvm::any_of(op.getResults(), onPath))
      continue;
    if (op.getNumResults() != 1 || op.getNumRegions() || !isa<VjpOpInterface>(op)) {
      op.emitError() << "'" << op.getName()
                     << "' has no VJP rule, and it is on the path from a trainable "
                        "parameter to the loss";
      missing = true;
    }
    path.push_back(&op);
  }
  if (missing)
    return failure();

  OpBuilder b(ret);
  ConstantCache constants;
  DenseMap<Value, Value> adjoint;
  auto accumulate = [&](Value v, Value g, Location loc) {
    auto [it, inserted] = adjoint.try_emplace(v, g);
    if (!inserted)
      it->second = VjpBuilder(b, loc, &constants).accumulate(it->second, g);
  };
  if (active.contains(loss))
    adjoint[loss] = VjpBuilder(b, loss.getLoc(), &constants).like(loss, 1.0);
  for (Operation *op : llvm::reverse(path)) {
    Value g = adjoint.lookup(op->getResult(0));
    if (!g)
      continue; // every use of the result had a zero gradient
    SmallVector<bool> wanted = llvm::map_to_vector(
        op->getOperands(), [&](Value v) { return onPath(v); });
    VjpContext context(b, op, g, wanted, &constants);
    context.recomputeStatistics = recomputeStatistics;
    Operation *before = ret->getPrevNode();
    if (failed(cast<VjpOpInterface>(op).buildVjp(context)))
      return failure();
    for (auto [operand, grad] : llvm::zip_equal(op->getOperands(), context.operandGrads())) {
      if (!grad)
        continue;
      if (grad.getType() != operand.getType())
        return op->emitError() << "internal error: the VJP rule of '" << op->getName()
                               << "' gave a gradient of type " << grad.getType()
                               << " for an operand of type " << operand.getType();
      accumulate(operand, grad, op->getLoc());
    }
    // A pipeline stage (trc-pipeline-stages) carries over to the op's VJP
    // and the sums of the gradients it gives.
    if (auto stage = op->getAttr(parallel::kStageAttr))
      for (Operation *made = before ? before->getNextNode() : &body.front(); made != ret;
           made = made->getNextNode()) {
        made->setAttr(parallel::kStageAttr, stage);
        made->setAttr(parallel::kBackwardAttr, b.getUnitAttr());
      }
  }

  SmallVector<Value> results{loss};
  SmallVector<Attribute> resultAttrs{lossAttrs ? lossAttrs : b.getDictionaryAttr({})};
  for (auto [i, name] : llvm::zip_equal(params, names)) {
    Value arg = body.getArgument(i);
    Value g = adjoint.lookup(arg);
    if (!g)
      g = VjpBuilder(b, fn.getLoc(), &constants).like(arg, 0.0);
    results.push_back(g);
    NamedAttrList attrs;
    attrs.set(trc::abi::kGradOfAttr, name);
    // The stage whose copy of a parameter this is (trc-pipeline-stages).
    if (auto stage = fn.getArgAttr(i, parallel::kStageAttr))
      attrs.set(parallel::kStageAttr, stage);
    resultAttrs.push_back(attrs.getDictionary(b.getContext()));
  }
  // New values of parameters the step updates besides the optimizer
  // (BatchNormalization's running statistics) follow the gradients.
  for (unsigned r = 1; r < ret.getNumOperands(); ++r)
    if (auto update = fn.getResultAttrOfType<StringAttr>(r, trc::abi::kUpdateAttr)) {
      results.push_back(ret.getOperand(r));
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(trc::abi::kUpdateAttr, update)));
    }
  b.create<func::ReturnOp>(ret.getLoc(), results);
  ret.erase();
  fn.setFunctionType(b.getFunctionType(body.getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  fn.setAllResultAttrs(resultAttrs);
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
  return success();
}

struct Autodiff : trc::impl::AutodiffBase<Autodiff> {
  using AutodiffBase::AutodiffBase;

  /// The rules come with the pass, whichever tool runs it (attaching them
  /// again is a no-op).
  void getDependentDialects(DialectRegistry &registry) const override {
    AutodiffBase::getDependentDialects(registry);
    registerVjpRules(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.getBody().empty()) {
      module.emitError("trc-autodiff needs a function @main with a body");
      return signalPassFailure();
    }
    if (!main.getBody().hasOneBlock()) {
      main.emitError("trc-autodiff needs @main to have a single block");
      return signalPassFailure();
    }
    if (module.lookupSymbol("main_grad")) {
      module.emitError("trc-autodiff: the module already has a symbol @main_grad");
      return signalPassFailure();
    }
    auto lossType = main.getNumResults()
                        ? dyn_cast<RankedTensorType>(main.getResultTypes()[0])
                        : RankedTensorType();
    if (!lossType || lossType.getRank() != 0 ||
        !isa<FloatType>(lossType.getElementType())) {
      auto diag = main.emitError("trc-autodiff needs @main's first result to be the "
                                 "loss, a scalar float tensor; ");
      if (main.getNumResults())
        diag << "got " << main.getResultTypes()[0];
      else
        diag << "@main has no results";
      return signalPassFailure();
    }

    // Trainable float parameters, in argument order.
    SmallVector<unsigned> params;
    SmallVector<StringAttr> names;
    bool bad = false;
    for (unsigned i = 0; i < main.getNumArguments(); ++i) {
      auto name = main.getArgAttrOfType<StringAttr>(i, trc::abi::kParamAttr);
      if (!name)
        continue;
      auto param = module.lookupSymbol<ParameterOp>(name.getValue());
      if (!param) {
        main.emitError() << "argument " << i << " is parameter '" << name.getValue()
                         << "', which the module does not declare";
        bad = true;
        continue;
      }
      if (param.isTrainable() && isFloatTensor(main.getArgument(i))) {
        params.push_back(i);
        names.push_back(name);
      }
    }
    main.walk([&](GetParameterOp op) {
      auto param = module.lookupSymbol<ParameterOp>(op.getNameAttr());
      if (param && param.isTrainable() && isFloatTensor(op.getResult())) {
        op.emitError() << "reads trainable parameter @" << op.getName()
                       << ": run trc-parameters-to-arguments before trc-autodiff";
        bad = true;
      }
    });
    if (bad)
      return signalPassFailure();

    auto grad = main.clone();
    grad.setSymName("main_grad");
    SymbolTable(module).insert(grad, std::next(main->getIterator()));
    if (failed(differentiate(grad, params, names, main.getResultAttrDict(0), recomputeStatistics))) {
      grad.erase();
      return signalPassFailure();
    }
  }
};

} // namespace
