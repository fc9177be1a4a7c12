//===- FusionCostModelTest.cpp - trc-fuse's cost model and matchers --------===//
//
// The byte counts and recomputation costs trc-fuse decides with
// (include/trc/Analysis/FusionCostModel.h), the GELU recognizer, and the planner on
// small functions.
//
//===----------------------------------------------------------------------===//
#include "trc/Analysis/FusionCostModel.h"
#include "trc/Analysis/FusionPlanner.h"
#include "trc/Dialect/Trc.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace trc::fusion;

namespace {

class FusionCostModelTest : public ::testing::Test {
protected:
  FusionCostModelTest() : b(&context) {
    context.loadDialect<trc::TrcDialect, func::FuncDialect>();
  }

  /// The body of the only function of `source`.
  Block &parse(llvm::StringRef source) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    return (*module->getOps<func::FuncOp>().begin()).getBody().front();
  }
  template <typename OpTy> OpTy first(Block &block) {
    return *block.getOps<OpTy>().begin();
  }

  MLIRContext context;
  Builder b;
  OwningOpRef<ModuleOp> module;
};

TEST_F(FusionCostModelTest, TensorBytes) {
  EXPECT_EQ(tensorBytes(RankedTensorType::get({4, 8}, b.getF32Type())), 128);
  EXPECT_EQ(tensorBytes(RankedTensorType::get({4, 8}, b.getBF16Type())), 64);
  EXPECT_EQ(tensorBytes(RankedTensorType::get({3}, b.getI64Type())), 24);
  EXPECT_EQ(tensorBytes(RankedTensorType::get({10}, b.getI1Type())), 10); // a byte each
  EXPECT_EQ(tensorBytes(RankedTensorType::get({}, b.getF32Type())), 4);
  EXPECT_EQ(tensorBytes(b.getF32Type()), 0);
}

TEST_F(FusionCostModelTest, OpBytesAndClasses) {
  Block &block = parse(R"mlir(
    func.func @f(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<2xi64>) -> tensor<4x8xf32> {
      %c = trc.constant dense<2.0> : tensor<4x8xf32>
      %t = trc.constant dense<[1.0, 2.0]> : tensor<2xf32>
      %bb = trc.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
      %0 = trc.mul %x, %c : tensor<4x8xf32>
      %1 = trc.add %0, %bb : tensor<4x8xf32>
      %2 = trc.reshape %1 : (tensor<4x8xf32>) -> tensor<32xf32>
      %3 = trc.reshape %2 : (tensor<32xf32>) -> tensor<4x8xf32>
      %4 = trc.softmax %3 axis = 1 : tensor<4x8xf32>
      %5 = trc.gather %4, %i axis = 0 : (tensor<4x8xf32>, tensor<2xi64>) -> tensor<2x8xf32>
      return %4 : tensor<4x8xf32>
    })mlir");
  auto ops = llvm::to_vector(llvm::map_range(block, [](Operation &op) { return &op; }));
  EXPECT_EQ(classify(ops[0]), OpClass::Free);
  EXPECT_TRUE(isImmediate(ops[0]->getResult(0)));
  EXPECT_FALSE(isImmediate(ops[1]->getResult(0))); // not a splat: read from memory
  EXPECT_EQ(classify(ops[2]), OpClass::Broadcast);
  EXPECT_EQ(classify(ops[3]), OpClass::Elementwise);
  EXPECT_EQ(classify(ops[5]), OpClass::Free); // a reshape is a view
  EXPECT_EQ(classify(ops[7]), OpClass::Reduction);
  EXPECT_EQ(classify(ops[8]), OpClass::Opaque);
  // x * 2: reads x (the splat is an immediate), writes the product.
  EXPECT_EQ(unfusedBytes(ops[3]), 128 + 128);
  EXPECT_EQ(unfusedBytes(ops[2]), 32 + 128);
  EXPECT_EQ(unfusedBytes(ops[5]), 0);
  // Each distinct input counts once.
  Value x = block.getArgument(0);
  EXPECT_EQ(kernelBytes({x, x}, {ops[3]->getResult(0)}), 256);
  // 5 kernels: broadcast, mul, add, softmax, gather (constants and
  // reshapes are none).
  KernelTotals t = measure(block);
  EXPECT_EQ(t.kernels, 5);
  EXPECT_EQ(t.bytes, 160 + 256 + 384 + 256 + (128 + 16 + 64));
}

TEST_F(FusionCostModelTest, RecomputationCost) {
  Block &block = parse(R"mlir(
    func.func @f(%x: tensor<1000xf32>) -> tensor<1000xf32> {
      %0 = trc.tanh %x : tensor<1000xf32>
      %1 = trc.add %0, %0 : tensor<1000xf32>
      %2 = trc.reduce sum %1 dims = [0] : (tensor<1000xf32>) -> tensor<f32>
      return %1 : tensor<1000xf32>
    })mlir");
  Operation *tanh = &block.front(), *add = tanh->getNextNode(), *reduce = add->getNextNode();
  CostParameters params; // 0.05 bytes per flop
  EXPECT_EQ(flopsPerElement(tanh), 16);
  EXPECT_EQ(flopsPerElement(add), 1);
  EXPECT_DOUBLE_EQ(recomputeCost({tanh, add}, params), 17 * 1000 * 0.05);
  EXPECT_TRUE(duplicationPays(1000, {tanh, add}, params));  // 850 < 1000
  EXPECT_FALSE(duplicationPays(800, {tanh, add}, params));
  params.bytesPerFlop = 1;
  EXPECT_FALSE(duplicationPays(4000, {tanh}, params)); // 16000 > 4000
  // Reductions are never recomputed.
  EXPECT_TRUE(std::isinf(recomputeCost({reduce}, params)));
  EXPECT_FALSE(duplicationPays(1 << 30, {reduce}, params));
}

TEST_F(FusionCostModelTest, GeluSpellings) {
  Block &block = parse(R"mlir(
    func.func @f(%x: tensor<8xf32>, %z: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
      // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x * x * x)))
      %h = trc.constant dense<0.5> : tensor<8xf32>
      %k = trc.constant dense<0.044715> : tensor<8xf32>
      %s = trc.constant dense<0.797884583> : tensor<8xf32>
      %one = trc.constant dense<1.0> : tensor<8xf32>
      %x2 = trc.mul %x, %x : tensor<8xf32>
      %x3 = trc.mul %x2, %x : tensor<8xf32>
      %a = trc.mul %k, %x3 : tensor<8xf32>
      %b = trc.add %x, %a : tensor<8xf32>
      %c = trc.mul %s, %b : tensor<8xf32>
      %t = trc.tanh %c : tensor<8xf32>
      %u = trc.add %one, %t : tensor<8xf32>
      %hx = trc.mul %h, %x : tensor<8xf32>
      %g = trc.mul %hx, %u : tensor<8xf32>
      // z * sigmoid(1.702 z): close to GELU, but not GELU
      %q = trc.constant dense<1.702> : tensor<8xf32>
      %qz = trc.mul %z, %q : tensor<8xf32>
      %sg = trc.logistic %qz : tensor<8xf32>
      %y = trc.mul %z, %sg : tensor<8xf32>
      return %g, %y, %x2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
    })mlir");
  Value x = block.getArgument(0), z = block.getArgument(1);
  auto none = [](OpOperand &) { return false; };
  // x * x is also returned: the GELU's intermediate is read outside.
  EXPECT_FALSE(matchGelu(x, none));
  auto returned = [](OpOperand &use) { return isa<func::ReturnOp>(use.getOwner()); };
  auto match = matchGelu(x, returned);
  ASSERT_TRUE(match);
  EXPECT_TRUE(match->tanhApproximation);
  EXPECT_EQ(match->ops.size(), 9u);
  EXPECT_EQ(match->ops.back()->getResult(0), block.getTerminator()->getOperand(0));
  EXPECT_FALSE(matchGelu(z, none));
}

TEST_F(FusionCostModelTest, PlanGroupsAKernel) {
  Block &block = parse(R"mlir(
    func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
      %0 = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
      %1 = trc.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
      %2 = trc.add %0, %1 : tensor<4x8xf32>
      %3 = trc.softmax %2 axis = 1 : tensor<4x8xf32>
      %4 = trc.exp %3 : tensor<4x8xf32>
      return %4 : tensor<4x8xf32>
    })mlir");
  FusionPlan plan = planFusion(block, FusionOptions());
  ASSERT_EQ(plan.fusions.size(), 2u);
  EXPECT_EQ(plan.fusions[0].kind, trc::FusionKind::MatmulEpilogue);
  EXPECT_EQ(plan.fusions[0].epilogue, "bias");
  EXPECT_EQ(plan.fusions[0].bodyOps.size(), 3u); // dot, broadcast copy, add
  EXPECT_EQ(plan.fusions[1].kind, trc::FusionKind::Reduction);
  ASSERT_EQ(plan.fusions[1].outputs.size(), 1u);
  EXPECT_EQ(plan.fusions[1].outputs[0], block.getTerminator()->getOperand(0));
  // The product, the add, softmax and exp go; the broadcast is left for the
  // rewrite to drop once nothing reads it.
  EXPECT_EQ(plan.erased.size(), 4u);
}

} // namespace
