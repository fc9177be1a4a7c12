//===- ImporterTest.cpp - shape rules of the ONNX op handlers --------------===//
//
// Each test imports a one- or two-node model and checks the static result
// shape (or the error) the handler derives: MatMul broadcasting, Einsum,
// Slice with negative steps, Split/Squeeze/Reshape across opsets, and the
// registry's opset selection.
//
//===----------------------------------------------------------------------===//
#include "HandlerRegistry.h"
#include "OnnxBuilder.h"

#include <gtest/gtest.h>

using trc::test::OnnxBuilder;
using Shape = std::vector<int64_t>;

namespace {

Shape matmul(Shape a, Shape b) {
  OnnxBuilder m;
  m.input("a", a);
  m.input("b", b);
  m.node("MatMul", {"a", "b"}, {"y"});
  m.output("y");
  return m.resultShape();
}

TEST(MatMul, NumpyShapes) {
  EXPECT_EQ(matmul({2, 3}, {3, 4}), (Shape{2, 4}));
  EXPECT_EQ(matmul({8, 16, 32}, {32, 64}), (Shape{8, 16, 64}));  // linear layer
  EXPECT_EQ(matmul({2, 1, 5, 3}, {4, 3, 6}), (Shape{2, 4, 5, 6})); // batch broadcast
  EXPECT_EQ(matmul({3}, {3, 4}), (Shape{4}));                      // 1-D lhs
  EXPECT_EQ(matmul({2, 3}, {3}), (Shape{2}));                      // 1-D rhs
  EXPECT_EQ(matmul({3}, {3}), (Shape{}));                          // dot product
  EXPECT_EQ(matmul({2, 3}, {4, 5}), (Shape{-1}));                  // mismatch
}

TEST(MatMul, MismatchNamesTheNode) {
  OnnxBuilder m;
  m.input("a", {2, 3});
  m.input("b", {4, 5});
  m.node("MatMul", {"a", "b"}, {"y"}, "proj");
  m.output("y");
  EXPECT_EQ(m.resultShape(), (Shape{-1}));
  EXPECT_NE(m.lastError().find("error: unit.onnx: node 'proj' (MatMul): MatMul operands "
                               "[2, 3] and [4, 5] have different inner dimensions"),
            std::string::npos)
      << m.lastError();
}

Shape einsum(const std::string &equation, std::vector<Shape> inputs) {
  OnnxBuilder m(12);
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back("x" + std::to_string(i));
    m.input(names.back(), inputs[i]);
  }
  OnnxBuilder::stringAttr(m.node("Einsum", names, {"y"}), "equation", equation);
  m.output("y");
  return m.resultShape();
}

TEST(Einsum, Equations) {
  EXPECT_EQ(einsum("ij,jk->ik", {{2, 3}, {3, 4}}), (Shape{2, 4}));
  EXPECT_EQ(einsum("bqhd,bkhd->bhqk", {{2, 5, 4, 8}, {2, 7, 4, 8}}), (Shape{2, 4, 5, 7}));
  EXPECT_EQ(einsum("i,j->ij", {{3}, {4}}), (Shape{3, 4}));             // outer product
  EXPECT_EQ(einsum("ij->ji", {{3, 4}}), (Shape{4, 3}));                // transpose
  EXPECT_EQ(einsum("ij->i", {{3, 4}}), (Shape{3}));                    // reduction
  EXPECT_EQ(einsum("ij,jk", {{2, 3}, {3, 4}}), (Shape{2, 4}));         // implicit output
  EXPECT_EQ(einsum("...ij,...jk->...ik", {{5, 2, 3}, {5, 3, 4}}), (Shape{5, 2, 4}));
  EXPECT_EQ(einsum("ii->i", {{3, 3}}), (Shape{-1}));                   // diagonal
  EXPECT_EQ(einsum("ij,jk->ik", {{2, 3}, {4, 4}}), (Shape{-1}));       // size clash
}

TEST(Slice, NegativeStepsAndClamping) {
  OnnxBuilder m(13);
  m.input("x", {10, 6});
  m.initializer("starts", {2}, {-1, 100});
  m.initializer("ends", {2}, {-100, 1});
  m.initializer("axes", {2}, {0, 1});
  m.initializer("steps", {2}, {-3, -2});
  m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  m.output("y");
  // axis 0: 9, 6, 3, 0 -> 4; axis 1: start clamps to 5: 5, 3 -> 2.
  EXPECT_EQ(m.resultShape(), (Shape{4, 2})) << m.lastError();
}

TEST(Split, Opset18NumOutputsLastChunkSmaller) {
  OnnxBuilder m(18);
  m.input("x", {7, 2});
  OnnxBuilder::intAttr(m.node("Split", {"x"}, {"a", "b", "c"}), "num_outputs", 3);
  m.output("a");
  m.output("c");
  EXPECT_EQ(m.resultShape(0), (Shape{3, 2})) << m.lastError();
  EXPECT_EQ(m.resultShape(1), (Shape{1, 2}));
}

TEST(Reshape, ZeroCopiesAndMinusOneInfers) {
  OnnxBuilder m(14);
  m.input("x", {2, 3, 4});
  m.initializer("shape", {3}, {0, -1, 2});
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y");
  EXPECT_EQ(m.resultShape(), (Shape{2, 6, 2})) << m.lastError();
}

/// What an import of Slice(Reshape(x, shape), starts, ends) reports it
/// needs at compile time, with `shape` a graph input or an initializer.
std::vector<std::string> neededConstants(bool shapeIsInput) {
  OnnxBuilder m(14);
  m.input("x", {2, 3, 4});
  if (shapeIsInput)
    m.input("shape", {3}, onnx::TensorProto::INT64);
  else
    m.initializer("shape", {3}, {0, -1, 2});
  m.input("starts", {1}, onnx::TensorProto::INT64);
  m.input("ends", {1}, onnx::TensorProto::INT64);
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.node("Slice", {"y", "starts", "ends"}, {"z"});
  m.output("z");
  mlir::MLIRContext context;
  std::string diagnostics;
  trc::ImportReport report;
  EXPECT_FALSE(m.import(context, diagnostics, {}, &report));
  return report.neededConstants;
}

TEST(Reshape, RunTimeOperandsAreReportedAsNeededAtCompileTime) {
  // The import fails and says, as data, which values it needs bound
  // (trc-run binds them from its --input files and imports again): the
  // import stops at the first node that needs one, so each round names the
  // next value.
  EXPECT_EQ(neededConstants(true), (std::vector<std::string>{"shape"}));
  EXPECT_EQ(neededConstants(false), (std::vector<std::string>{"starts"}));
}

TEST(Squeeze, AttributeBefore13InputAfter) {
  OnnxBuilder old(11);
  old.input("x", {1, 3, 1});
  OnnxBuilder::intsAttr(old.node("Squeeze", {"x"}, {"y"}), "axes", {0});
  old.output("y");
  EXPECT_EQ(old.resultShape(), (Shape{3, 1})) << old.lastError();

  OnnxBuilder now(13);
  now.input("x", {1, 3, 1});
  now.initializer("axes", {1}, {-1});
  now.node("Squeeze", {"x", "axes"}, {"y"});
  now.output("y");
  EXPECT_EQ(now.resultShape(), (Shape{1, 3})) << now.lastError();
}

TEST(ShapeSubgraph, FoldsToStaticReshape) {
  // Reshape(x, Concat(Gather(Shape(x), 0), [-1])) as dynamic-axes exports emit.
  OnnxBuilder m(13);
  m.input("x", {4, 3, 5});
  m.initializer("zero", {}, {0});
  m.initializer("minus_one", {1}, {-1});
  m.initializer("axes", {1}, {0});
  m.node("Shape", {"x"}, {"s"});
  m.node("Gather", {"s", "zero"}, {"batch"});
  m.node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  OnnxBuilder::intAttr(m.node("Concat", {"batch1", "minus_one"}, {"shape"}), "axis", 0);
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y");
  EXPECT_EQ(m.resultShape(), (Shape{4, 15})) << m.lastError();
}

TEST(Unsupported, AllReportedTogether) {
  OnnxBuilder m;
  m.input("x", {2});
  m.node("FooBar", {"x"}, {"a"}, "first");
  m.node("Relu", {"a"}, {"b"});
  m.node("BazQux", {"b"}, {"c"}, "second");
  m.output("c");
  mlir::MLIRContext context;
  std::string diagnostics;
  EXPECT_FALSE(m.import(context, diagnostics));
  EXPECT_NE(diagnostics.find("unsupported op 'FooBar' (domain 'ai.onnx', opset 17) at "
                             "node 'first'"),
            std::string::npos)
      << diagnostics;
  EXPECT_NE(diagnostics.find("unsupported op 'BazQux' (domain 'ai.onnx', opset 17) at "
                             "node 'second'"),
            std::string::npos)
      << diagnostics;
}

TEST(Registry, PicksNewestHandlerAtOrBelowOpset) {
  const auto &registry = trc::import::HandlerRegistry::get();
  EXPECT_NE(registry.lookup("Softmax", 1), nullptr);
  EXPECT_EQ(registry.lookup("LayerNormalization", 16), nullptr);
  EXPECT_NE(registry.lookup("LayerNormalization", 17), nullptr);
  EXPECT_EQ(registry.lookup("Gelu", 19), nullptr);
  EXPECT_NE(registry.lookup("Gelu", 20), nullptr);
  EXPECT_EQ(registry.lookup("NoSuchOp", 17), nullptr);
  auto types = registry.opTypes();
  EXPECT_TRUE(std::is_sorted(types.begin(), types.end()));
}

TEST(Softmax, Before13FlattensToTwoD) {
  // Opset 11 softmax over axis 1 of [2, 3, 4] normalizes each row of 12.
  OnnxBuilder m(11);
  m.input("x", {2, 3, 4});
  m.node("Softmax", {"x"}, {"y"});
  m.output("y");
  mlir::MLIRContext context;
  std::string diagnostics;
  auto module = m.import(context, diagnostics);
  ASSERT_TRUE(module) << diagnostics;
  int softmaxes = 0;
  module->walk([&](trc::SoftmaxOp op) {
    ++softmaxes;
    EXPECT_EQ(op.getType().getShape(), (llvm::ArrayRef<int64_t>{2, 12}));
    EXPECT_EQ(op.getAxis(), 1u);
  });
  EXPECT_EQ(softmaxes, 1);
}

TEST(Specs, DimAndInputShapeParsing) {
  trc::ImportOptions options;
  std::string error;
  EXPECT_TRUE(trc::parseDimSpec("batch=8,sequence=256", options, error));
  EXPECT_EQ(options.dimSizes["batch"], 8);
  EXPECT_EQ(options.dimSizes["sequence"], 256);
  EXPECT_FALSE(trc::parseDimSpec("batch=-1", options, error));
  EXPECT_NE(error.find("--dim expects NAME=N"), std::string::npos);
  EXPECT_TRUE(trc::parseInputShapeSpec("ids=8x256", options, error));
  EXPECT_EQ(options.inputShapes["ids"], (Shape{8, 256}));
  EXPECT_TRUE(trc::parseInputShapeSpec("s=scalar", options, error));
  EXPECT_EQ(options.inputShapes["s"], (Shape{}));
  EXPECT_FALSE(trc::parseInputShapeSpec("ids=8xq", options, error));
}

} // namespace
