//===- ConstantEvalTest.cpp - compile-time evaluation of trc ops ----------===//
//
// The evaluators behind trc's folders, checked element by element on small
// tensors (the shapes exporters' shape subgraphs produce).
//
//===----------------------------------------------------------------------===//
#include "ConstantEval.h"

#include "mlir/IR/Builders.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class ConstantEvalTest : public ::testing::Test {
protected:
  ConstantEvalTest() : b(&context) { context.loadDialect<trc::TrcDialect>(); }

  RankedTensorType i64(llvm::ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getI64Type());
  }
  DenseElementsAttr ints(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> v) {
    return DenseElementsAttr::get(i64(shape), v);
  }
  static std::vector<int64_t> values(Attribute a) {
    std::vector<int64_t> out;
    for (const APInt &v : cast<DenseElementsAttr>(a).getValues<APInt>())
      out.push_back(v.getSExtValue());
    return out;
  }

  MLIRContext context;
  Builder b;
};

TEST_F(ConstantEvalTest, RemapTransposes) {
  auto m = ints({2, 3}, {1, 2, 3, 4, 5, 6});
  // result[i][j] = m[j][i]: linear i -> (i % 2) * 3 + i / 2
  Attribute t = trc::eval::remap(m, i64({3, 2}), [](int64_t i) { return (i % 2) * 3 + i / 2; });
  EXPECT_EQ(values(t), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
}

TEST_F(ConstantEvalTest, RemapOfSplatStaysSplat) {
  auto splat = DenseElementsAttr::get(i64({4}), llvm::ArrayRef<int64_t>{7});
  Attribute r = trc::eval::remap(splat, i64({2, 2}), [](int64_t) { return 0; });
  EXPECT_TRUE(cast<DenseElementsAttr>(r).isSplat());
}

TEST_F(ConstantEvalTest, RemapRefusesHugeResults) {
  auto v = ints({2}, {1, 2});
  EXPECT_FALSE(trc::eval::remap(v, i64({trc::eval::kMaxFoldElements + 1}),
                                [](int64_t i) { return i % 2; }));
}

TEST_F(ConstantEvalTest, CompareAndSelect) {
  auto a = ints({3}, {1, -1, 5});
  auto minus = ints({3}, {-1, -1, -1});
  auto predType = RankedTensorType::get({3}, b.getI1Type());
  auto eq = cast<DenseElementsAttr>(
      trc::eval::compare(trc::CompareDirection::EQ, a, minus, predType));
  EXPECT_EQ(llvm::to_vector(eq.getValues<bool>()), (llvm::SmallVector<bool>{false, true, false}));
  auto lt = cast<DenseElementsAttr>(
      trc::eval::compare(trc::CompareDirection::LT, a, minus, predType));
  EXPECT_EQ(llvm::to_vector(lt.getValues<bool>()), (llvm::SmallVector<bool>{false, false, false}));
  auto fill = ints({3}, {9, 9, 9});
  EXPECT_EQ(values(trc::eval::select(eq, fill, a)), (std::vector<int64_t>{1, 9, 5}));
}

TEST_F(ConstantEvalTest, UnsignedCompareUsesUnsignedOrder) {
  auto u8 = RankedTensorType::get({1}, b.getIntegerType(8, false));
  auto big = DenseElementsAttr::get(u8, llvm::ArrayRef<APInt>{APInt(8, 200)});
  auto small = DenseElementsAttr::get(u8, llvm::ArrayRef<APInt>{APInt(8, 3)});
  auto gt = cast<DenseElementsAttr>(trc::eval::compare(
      trc::CompareDirection::GT, big, small, RankedTensorType::get({1}, b.getI1Type())));
  EXPECT_TRUE(*gt.getValues<bool>().begin());
}

TEST_F(ConstantEvalTest, ConvertBetweenIntsFloatsAndBools) {
  auto v = ints({3}, {-2, 0, 3});
  auto f = cast<DenseElementsAttr>(
      trc::eval::convert(v, RankedTensorType::get({3}, b.getF32Type())));
  EXPECT_EQ((*f.getValues<APFloat>().begin()).convertToDouble(), -2.0);
  auto back = trc::eval::convert(f, RankedTensorType::get({3}, b.getI32Type()));
  EXPECT_EQ(cast<DenseElementsAttr>(back).getValues<APInt>()[0].getSExtValue(), -2);
  auto flags = cast<DenseElementsAttr>(
      trc::eval::convert(v, RankedTensorType::get({3}, b.getI1Type())));
  EXPECT_EQ(llvm::to_vector(flags.getValues<bool>()),
            (llvm::SmallVector<bool>{true, false, true}));
}

TEST_F(ConstantEvalTest, ConcatenateAlongInnerDimension) {
  auto a = ints({2, 1}, {1, 2});
  auto c = ints({2, 2}, {3, 4, 5, 6});
  Attribute r = trc::eval::concatenate({a, c}, 1, i64({2, 3}));
  EXPECT_EQ(values(r), (std::vector<int64_t>{1, 3, 4, 2, 5, 6}));
}

TEST_F(ConstantEvalTest, Strides) {
  EXPECT_EQ(trc::eval::stridesOf({2, 3, 4}), (llvm::SmallVector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(trc::eval::stridesOf({}).empty());
}

} // namespace
