//===- DetectAnomaly.cpp - trc-detect-anomaly ------------------------------===//
//
// Instruments the training step so that the runtime can name the first op
// that made a NaN or inf (see Passes.td and include/trc/Abi/AnomalySites.h).
// Each checked value costs a comparison per element and a max reduction to
// one code; the codes of @main_grad and of @train_step's own ops are joined
// into the step's `trc.anomaly` output, in program order.
// Preconditions: trc-build-train-step has run (one @train_step calling
// @main_grad once); shapes are static.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AnomalySites.h"
#include "trc/Abi/AttrNames.h"
#include "trc/Abi/SlotNames.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace trc {
#define GEN_PASS_DEF_DETECTANOMALY
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;

namespace {

struct Site {
  std::string op, node, phase;
  SmallVector<int64_t> operands; // ids of the sites the op reads
};

/// A float tensor of static shape: what a site's check can read.
RankedTensorType checkable(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !isa<FloatType>(t.getElementType()) || !t.hasStaticShape())
    return {};
  return t;
}

/// The sites of one step, in program order, and the checks that compute
/// their codes (each a tensor<1xf32> built where its value is defined).
class Instrumenter {
  static constexpr size_t kJoinFanIn = 16;

public:
  explicit Instrumenter(MLIRContext *ctx) : b_(ctx) {}

  /// Makes `v` (defined just before the builder's point) a site.
  void add(Value v, Location loc, Site site) {
    siteOf_[v] = int64_t(sites_.size());
    sites_.push_back(std::move(site));
    codes_.push_back(check(v, loc));
  }

  /// Every float result of the ops of `fn`'s body, `phaseOf` naming each
  /// op's phase; calls and the terminator excluded.
  void addOps(func::FuncOp fn, llvm::function_ref<StringRef(Operation &)> phaseOf) {
    for (Operation &op : llvm::make_early_inc_range(fn.getBody().front())) {
      if (op.hasTrait<OpTrait::IsTerminator>() || isa<func::CallOp>(op) || isChecking(&op))
        continue;
      SmallVector<int64_t> operands;
      for (Value v : analysis::inputsOf(op))
        if (auto it = siteOf_.find(v); it != siteOf_.end() && !llvm::is_contained(operands, it->second))
          operands.push_back(it->second);
      b_.setInsertionPointAfter(&op);
      for (Value r : op.getResults())
        if (checkable(r))
          add(r, op.getLoc(),
              Site{op.getName().getStringRef().str(), analysis::nodeOf(op.getLoc()),
                   phaseOf(op).str(), operands});
    }
  }

  /// The codes from site `first` on, joined into one tensor<Nxf32> before
  /// `at`: a tree of small concatenations, since one-shot bufferization's
  /// analysis of a single concatenation of thousands is superlinear.
  Value join(Operation *at, size_t first) {
    b_.setInsertionPoint(at);
    SmallVector<Value> level(codes_.begin() + first, codes_.end());
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i < level.size(); i += kJoinFanIn)
        next.push_back(concatenate(at->getLoc(), ArrayRef(level).slice(
                                                      i, std::min(kJoinFanIn, level.size() - i))));
      level = std::move(next);
    }
    return level.front();
  }

  Value concatenate(Location loc, ArrayRef<Value> pieces) {
    if (pieces.size() == 1)
      return pieces.front();
    int64_t n = 0;
    for (Value p : pieces)
      n += cast<RankedTensorType>(p.getType()).getDimSize(0);
    return b_.create<ConcatenateOp>(loc, RankedTensorType::get({n}, b_.getF32Type()), pieces, 0);
  }

  OpBuilder &builder() { return b_; }
  llvm::DenseMap<Value, int64_t> &siteOf() { return siteOf_; }
  size_t size() const { return sites_.size(); }

  /// The module attribute: [op, node, phase, "operand,ids"] per site.
  ArrayAttr table() {
    SmallVector<Attribute> rows;
    for (const Site &s : sites_) {
      std::string operands;
      for (int64_t id : s.operands)
        operands += (operands.empty() ? "" : ",") + std::to_string(id);
      rows.push_back(b_.getStrArrayAttr({s.op, s.node, s.phase, operands}));
    }
    return b_.getArrayAttr(rows);
  }

private:
  /// tensor<1xf32>: max over `v`'s elements of 2 (NaN), 1 (+-inf) or 0.
  Value check(Value v, Location loc) {
    RankedTensorType t = checkable(v);
    auto pred = t.clone(b_.getI1Type());
    auto f32 = t.clone(b_.getF32Type());
    auto splat = [&](RankedTensorType type, const APFloat &x) -> Value {
      Attribute element = FloatAttr::get(type.getElementType(), x);
      return mark(b_.create<ConstantOp>(loc, DenseElementsAttr::get(type, element)));
    };
    auto code = [&](double x) { return splat(f32, APFloat(float(x))); };
    const auto &semantics = cast<FloatType>(t.getElementType()).getFloatSemantics();
    // x != x (unordered) holds for NaN only; |x| == inf for +-inf only.
    Value isNaN = mark(b_.create<CompareOp>(loc, pred, CompareDirection::NE, v, v));
    Value magnitude = mark(b_.create<AbsOp>(loc, v));
    Value isInf = mark(b_.create<CompareOp>(loc, pred, CompareDirection::EQ, magnitude,
                                            splat(t, APFloat::getInf(semantics))));
    Value inf = mark(b_.create<SelectOp>(loc, isInf, code(abi::kAnomalyInf), code(0)));
    Value each = mark(b_.create<SelectOp>(loc, isNaN, code(abi::kAnomalyNaN), inf));
    SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, t.getRank()));
    auto scalar = RankedTensorType::get({}, b_.getF32Type());
    Value max = t.getRank() ? mark(b_.create<ReduceOp>(loc, scalar, ReduceKind::Max, each, all))
                            : each;
    return mark(b_.create<ReshapeOp>(loc, RankedTensorType::get({1}, b_.getF32Type()), max));
  }

  /// The checks' own ops are not sites.
  Value mark(Operation *op) {
    checking_.insert(op);
    return op->getResult(0);
  }
  bool isChecking(Operation *op) const { return checking_.contains(op); }

  OpBuilder b_;
  SmallVector<Site> sites_;
  SmallVector<Value> codes_;
  llvm::DenseMap<Value, int64_t> siteOf_;
  llvm::DenseSet<Operation *> checking_;
};

/// The ops of @main_grad the loss or a `trc.update` result depends on: the
/// forward (the rest computes gradients).
llvm::DenseSet<Operation *> forwardOps(func::FuncOp grad) {
  Block &body = grad.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  llvm::DenseSet<Value> needed{ret.getOperand(0)};
  for (unsigned r = 1; r < ret.getNumOperands(); ++r)
    if (grad.getResultAttr(r, abi::kUpdateAttr))
      needed.insert(ret.getOperand(r));
  llvm::DenseSet<Operation *> forward;
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (llvm::any_of(op.getResults(), [&](Value v) { return needed.contains(v); })) {
      forward.insert(&op);
      for (Value v : analysis::inputsOf(op))
        needed.insert(v);
    }
  return forward;
}

struct DetectAnomaly : trc::impl::DetectAnomalyBase<DetectAnomaly> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto grad = module.lookupSymbol<func::FuncOp>("main_grad");
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    SmallVector<func::CallOp> calls;
    if (step)
      step.walk([&](func::CallOp c) {
        if (c.getCallee() == "main_grad")
          calls.push_back(c);
      });
    if (!grad || !step || calls.size() != 1) {
      module.emitError("trc-detect-anomaly needs @train_step calling @main_grad once "
                       "(trc-build-train-step; pipeline stages are not supported)");
      return signalPassFailure();
    }
    if (module->hasAttr(abi::kAnomalySitesAttr)) {
      module.emitError("trc-detect-anomaly: the step is already instrumented");
      return signalPassFailure();
    }
    Instrumenter in(&getContext());
    OpBuilder &b = in.builder();

    // @main_grad: its float arguments, then its ops.
    Block &body = grad.getBody().front();
    b.setInsertionPointToStart(&body);
    for (BlockArgument arg : body.getArguments()) {
      if (!checkable(arg))
        continue;
      auto param = grad.getArgAttrOfType<StringAttr>(arg.getArgNumber(), abi::kParamAttr);
      auto input = grad.getArgAttrOfType<StringAttr>(arg.getArgNumber(), abi::kInputAttr);
      std::string name = param ? param.str() : input ? input.str() : "";
      in.add(arg, grad.getLoc(),
             Site{"", name, param ? abi::kPhaseParameter : abi::kPhaseInput, {}});
    }
    llvm::DenseSet<Operation *> forward = forwardOps(grad);
    in.addOps(grad, [&](Operation &op) -> StringRef {
      return forward.contains(&op) ? abi::kPhaseForward : abi::kPhaseBackward;
    });
    auto gradReturn = cast<func::ReturnOp>(body.getTerminator());
    Value gradCodes = in.join(gradReturn, 0);
    size_t gradSites = in.size();
    SmallVector<Value> gradResults(gradReturn.getOperands());
    gradResults.push_back(gradCodes);
    b.setInsertionPoint(gradReturn);
    b.create<func::ReturnOp>(gradReturn.getLoc(), gradResults);
    gradReturn.erase();
    SmallVector<DictionaryAttr> gradAttrs;
    grad.getAllResultAttrs(gradAttrs);
    gradAttrs.push_back(b.getDictionaryAttr({}));
    grad.setType(b.getFunctionType(grad.getArgumentTypes(), ValueRange(gradResults).getTypes()));
    grad.setAllResultAttrs(gradAttrs);

    // @train_step: the call gains the codes; its operands and results are
    // the sites of @main_grad's arguments and returned values; then the
    // optimizer's ops.
    func::CallOp call = calls.front();
    b.setInsertionPoint(call);
    auto newCall = b.create<func::CallOp>(call.getLoc(), grad, call.getOperands());
    // What @train_step passes in is what @main_grad's argument sites checked.
    for (auto [operand, arg] : llvm::zip_equal(call.getOperands(), body.getArguments()))
      if (auto it = in.siteOf().find(arg); it != in.siteOf().end())
        in.siteOf().try_emplace(operand, it->second);
    for (unsigned r = 0; r < call.getNumResults(); ++r) {
      call.getResult(r).replaceAllUsesWith(newCall.getResult(r));
      if (auto it = in.siteOf().find(gradResults[r]); it != in.siteOf().end())
        in.siteOf()[newCall.getResult(r)] = it->second;
    }
    call.erase();
    in.addOps(step, [](Operation &) -> StringRef { return abi::kPhaseOptimizer; });
    auto stepReturn = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    Value codes = newCall.getResults().back();
    if (in.size() > gradSites) {
      Value own = in.join(stepReturn, gradSites);
      b.setInsertionPoint(stepReturn);
      codes = b.create<ConcatenateOp>(
          stepReturn.getLoc(), RankedTensorType::get({int64_t(in.size())}, b.getF32Type()),
          ValueRange{codes, own}, 0);
    }
    stepReturn->insertOperands(stepReturn.getNumOperands(), codes);
    SmallVector<DictionaryAttr> stepAttrs;
    step.getAllResultAttrs(stepAttrs);
    stepAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(abi::kOutputAttr, b.getStringAttr(abi::kAnomalyOutput))));
    step.setType(b.getFunctionType(step.getArgumentTypes(), stepReturn.getOperandTypes()));
    step.setAllResultAttrs(stepAttrs);
    module->setAttr(abi::kAnomalySitesAttr, in.table());
  }
};

} // namespace
