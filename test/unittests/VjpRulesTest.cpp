//===- VjpRulesTest.cpp - every trc op has its VJP rule or says it has none ===//
//
// The VJP rules are VjpOpInterface models attached by registerVjpRules
// (lib/Training/RegisterVjpRules.cpp), which checks at compile time that each
// op of the dialect has a rule or the NoVjp trait. Here: what a context built
// by trc::registerAllDialects sees (every registered trc op has exactly one
// of the two), that trc-autodiff brings the rules along in a context that
// registered only the dialect, and the check's detection on an op that has
// neither. That such an op stops the build is the ctest
// `vjp-rule-missing-does-not-build` (VjpMissingRule.cpp).
//
//===----------------------------------------------------------------------===//
#include "VjpRules.h"

#include "trc/Dialect/Trc.h"
#include "trc/InitAllDialects.h"
#include "trc/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

/// What ODS would make of a new op added without a rule or NoVjp.
class OpWithoutRule : public Op<OpWithoutRule, OpTrait::OneResult> {
public:
  using Op::Op;
};

// The detection the build-time check relies on.
static_assert(trc::autodiff::hasVjpRule<trc::AddOp>);
static_assert(trc::autodiff::hasVjpRule<trc::AttentionOp>);
static_assert(!trc::autodiff::hasVjpRule<trc::CompareOp>);
static_assert(trc::autodiff::hasNoVjpTrait<trc::CompareOp>);
static_assert(!trc::autodiff::hasNoVjpTrait<trc::AddOp>);
static_assert(!trc::autodiff::hasVjpRule<OpWithoutRule>);
static_assert(!trc::autodiff::hasNoVjpTrait<OpWithoutRule>);

TEST(VjpRulesTest, EveryRegisteredTrcOpHasARuleOrNoVjp) {
  DialectRegistry registry;
  trc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadDialect<trc::TrcDialect>();
  int withRule = 0, without = 0;
  for (RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "trc")
      continue;
    bool rule = name.hasInterface<trc::VjpOpInterface>();
    bool noVjp = name.hasTrait<trc::NoVjp>();
    EXPECT_NE(rule, noVjp) << name.getStringRef().str()
                           << (rule ? " has a VJP rule and NoVjp"
                                    : " has neither a VJP rule nor NoVjp");
    (rule ? withRule : without) += 1;
  }
  // The rules of lib/Training/Vjp*.cpp; the ops without one by design.
  EXPECT_EQ(withRule, 39);
  EXPECT_EQ(without, 22);
  for (llvm::StringRef op : {"trc.add", "trc.dot_general", "trc.reduce", "trc.gather",
                             "trc.softmax", "trc.cross_entropy", "trc.attention"})
    EXPECT_TRUE(RegisteredOperationName::lookup(op, &context)
                    ->hasInterface<trc::VjpOpInterface>())
        << op.str();
  for (llvm::StringRef op : {"trc.compare", "trc.iota", "trc.dropout", "trc.all_reduce",
                             "trc.fusion", "trc.attention_grad"})
    EXPECT_TRUE(RegisteredOperationName::lookup(op, &context)->hasTrait<trc::NoVjp>())
        << op.str();
}

TEST(VjpRulesTest, AutodiffBringsTheRulesAlong) {
  // Only the dialects the IR names: the pass attaches the rules itself.
  MLIRContext context;
  context.loadDialect<trc::TrcDialect, func::FuncDialect>();
  EXPECT_FALSE(RegisteredOperationName::lookup("trc.mul", &context)
                   ->hasInterface<trc::VjpOpInterface>());
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    trc.parameter @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
    func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32> {trc.param = "w"}) -> tensor<f32> {
      %y = trc.mul %x, %w : tensor<4xf32>
      %l = trc.reduce sum %y dims = [0] : (tensor<4xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
  )mlir",
                                                             &context);
  ASSERT_TRUE(module);
  PassManager pm(&context);
  pm.addPass(trc::createAutodiff());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto grad = module->lookupSymbol<func::FuncOp>("main_grad");
  ASSERT_TRUE(grad);
  EXPECT_EQ(grad.getNumResults(), 2u);
  EXPECT_TRUE(RegisteredOperationName::lookup("trc.mul", &context)
                  ->hasInterface<trc::VjpOpInterface>());
}

} // namespace
