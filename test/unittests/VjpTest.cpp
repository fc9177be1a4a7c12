//===- VjpTest.cpp - every VJP rule against float64 finite differences ----===//
//
// Each case is a small f64 function of trc.parameter values: `loss =
// sum(out * r)` with a fixed random r (or an op that already gives a scalar).
// The module goes through trc-parameters-to-arguments and trc-autodiff;
// @main_grad is compiled for the CPU (compileToArtifact, entry=main_grad)
// and run with the runtime. Each gradient is compared with central finite
// differences of the loss the same program returns, parameters set through
// Session::setParam: max |grad - fd| <= 1e-6 max |fd| (f64, h = 1e-5).
// Cases with `decompose` run trc-decompose-composites first, so composites
// are checked both by their own rules and through their decomposition.
// Frozen parameters and integer paths must get no gradient; a parameter
// used twice gets the sum.
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"
#include "trc/InitAllDialects.h"
#include "trc/InitAllPasses.h"
#include "trc/Passes.h"
#include "trc/Pipelines/Pipelines.h"

#include "runtime/artifact/Artifact.h"
#include "runtime/backends/cpu/CpuBackend.h"
#include "runtime/artifact/Session.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

namespace rt = trc::rt;

namespace {

struct Param {
  std::string name;
  std::vector<int64_t> shape;
  double lo = -1.0, hi = 1.0;
  bool frozen = false;
  std::vector<double> values = {}; // explicit values instead of uniform(lo, hi)
  std::string element = "f64";
};

std::string typeOf(const std::vector<int64_t> &shape, const std::string &element) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + element + ">";
}

int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// dense<"0x..."> of little-endian doubles (or floats).
std::string denseHex(const std::vector<double> &values, const std::string &element) {
  std::string hex = "0x";
  auto append = [&](const void *p, size_t n) {
    static const char digits[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; ++i) {
      unsigned char c = static_cast<const unsigned char *>(p)[i];
      hex += digits[c >> 4];
      hex += digits[c & 15];
    }
  };
  for (double v : values) {
    if (element == "f32") {
      float f = static_cast<float>(v);
      append(&f, sizeof f);
    } else {
      append(&v, sizeof v);
    }
  }
  return "dense<\"" + hex + "\">";
}

mlir::DialectRegistry &registry() {
  static mlir::DialectRegistry *r = [] {
    auto *reg = new mlir::DialectRegistry;
    trc::registerAllDialects(*reg);
    trc::registerAllPasses();
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return reg;
  }();
  return *r;
}

class VjpTest : public ::testing::Test {
protected:
  /// The module text: parameters, @main reading them, `body`, and the loss
  /// sum(out * r) over the value `out` of type `outType`.
  std::string moduleText(const std::vector<Param> &params, const std::string &body,
                         const std::string &out, const std::string &outType,
                         std::vector<int64_t> outShape) {
    std::mt19937_64 rng(42);
    std::ostringstream m;
    m << "module {\n";
    for (const Param &p : params) {
      std::vector<double> v = p.values;
      if (v.empty()) {
        std::uniform_real_distribution<double> u(p.lo, p.hi);
        for (int64_t i = 0; i < count(p.shape); ++i)
          v.push_back(u(rng));
      }
      std::string t = typeOf(p.shape, p.element);
      m << "  trc.parameter @" << p.name << (p.frozen ? " frozen" : "") << " : " << t
        << " = " << denseHex(v, p.element) << " : " << t << "\n";
    }
    m << "  func.func @main() -> tensor<f64> {\n";
    for (const Param &p : params)
      m << "    %" << p.name << " = trc.get_parameter @" << p.name << " : "
        << typeOf(p.shape, p.element) << "\n";
    m << body << "\n";
    std::vector<double> r;
    std::uniform_real_distribution<double> u(0.5, 1.5);
    for (int64_t i = 0; i < count(outShape); ++i)
      r.push_back(u(rng) * (i % 2 ? -1.0 : 1.0));
    std::string dims;
    for (size_t i = 0; i < outShape.size(); ++i)
      dims += (i ? ", " : "") + std::to_string(i);
    m << "    %loss_r = trc.constant " << denseHex(r, "f64") << " : " << outType << "\n"
      << "    %loss_p = trc.mul " << out << ", %loss_r : " << outType << "\n"
      << "    %loss = trc.reduce sum %loss_p dims = [" << dims << "] : (" << outType
      << ") -> tensor<f64>\n"
      << "    return %loss : tensor<f64>\n  }\n}\n";
    return m.str();
  }

  /// Parses `text`, differentiates and compiles @main_grad; loads a session.
  void compile(const std::string &text, bool decompose = false) {
    context = std::make_unique<mlir::MLIRContext>(registry(),
                                                  mlir::MLIRContext::Threading::DISABLED);
    context->loadAllAvailableDialects();
    std::string diagnostics;
    llvm::raw_string_ostream diag(diagnostics);
    mlir::ScopedDiagnosticHandler handler(context.get(), [&](mlir::Diagnostic &d) {
      diag << d << "\n";
      return mlir::success();
    });
    auto module = mlir::parseSourceString<mlir::ModuleOp>(text, context.get());
    ASSERT_TRUE(module) << diagnostics << "\n" << text;
    mlir::PassManager pm(context.get());
    if (decompose)
      pm.addPass(trc::createDecomposeComposites());
    pm.addPass(trc::createParametersToArguments());
    pm.addPass(trc::createAutodiff());
    ASSERT_TRUE(mlir::succeeded(pm.run(*module))) << diagnostics << "\n" << text;
    auto grad = module->lookupSymbol<mlir::func::FuncOp>("main_grad");
    ASSERT_TRUE(grad);
    gradNames.clear();
    for (unsigned i = 1; i < grad.getNumResults(); ++i)
      gradNames.push_back(
          grad.getResultAttrOfType<mlir::StringAttr>(i, "trc.grad_of").str());

    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("trc-vjp-test", dir));
    artifactDir = std::string(dir) + "/artifact";
    trc::CompileOptions options;
    options.entry = "main_grad";
    std::string log;
    llvm::raw_string_ostream logStream(log);
    ASSERT_TRUE(mlir::succeeded(trc::compileToArtifact(*module, options, artifactDir,
                                                       logStream)))
        << diagnostics << log;
    rt::StatusOr<std::unique_ptr<rt::Artifact>> loaded =
        rt::Artifact::load(artifactDir, backend.target());
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    artifact = *std::move(loaded);
    rt::StatusOr<std::unique_ptr<rt::Session>> created = rt::Session::create(*artifact, backend);
    ASSERT_TRUE(created.ok()) << created.status().message();
    session = *std::move(created);
  }

  void TearDown() override {
    session.reset();
    artifact.reset();
    if (!artifactDir.empty())
      llvm::sys::fs::remove_directories(llvm::sys::path::parent_path(artifactDir));
  }

  static std::vector<double> toDoubles(const rt::HostTensor &t) {
    std::vector<double> v(t.numElements());
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = t.dtype == rt::DType::F64 ? t.as<double>()[i] : t.as<float>()[i];
    return v;
  }
  static void fromDoubles(rt::HostTensor &t, const std::vector<double> &v) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (t.dtype == rt::DType::F64)
        t.as<double>()[i] = v[i];
      else
        t.as<float>()[i] = static_cast<float>(v[i]);
    }
  }

  double loss() {
    rt::Status s = session->run();
    EXPECT_TRUE(s) << s.message();
    rt::StatusOr<rt::HostTensor> out = session->getOutput("output0");
    EXPECT_TRUE(out.ok()) << out.status().message();
    return out.ok() ? toDoubles(*out)[0] : 0.0;
  }

  std::vector<double> gradient(const std::string &name) {
    rt::Status s = session->run();
    EXPECT_TRUE(s) << s.message();
    rt::StatusOr<rt::HostTensor> out = session->getOutput("grad:" + name);
    EXPECT_TRUE(out.ok()) << out.status().message();
    return out.ok() ? toDoubles(*out) : std::vector<double>();
  }

  /// Central differences of the loss in each element of parameter `name`.
  /// The step is measured on the stored values (f32 parameters round it).
  std::vector<double> finiteDifferences(const std::string &name, double h = 1e-5) {
    rt::StatusOr<rt::HostTensor> param = session->getParam(name);
    EXPECT_TRUE(param.ok()) << param.status().message();
    rt::HostTensor p = param.ok() ? *std::move(param) : rt::HostTensor();
    std::vector<double> x = toDoubles(p), fd(x.size());
    for (size_t k = 0; k < x.size(); ++k) {
      std::vector<double> plus = x, minus = x;
      plus[k] += h;
      minus[k] -= h;
      fromDoubles(p, plus);
      double xp = toDoubles(p)[k];
      EXPECT_TRUE(session->setParam(name, p));
      double lp = loss();
      fromDoubles(p, minus);
      double xm = toDoubles(p)[k];
      EXPECT_TRUE(session->setParam(name, p));
      double lm = loss();
      fd[k] = (lp - lm) / (xp - xm);
    }
    fromDoubles(p, x);
    EXPECT_TRUE(session->setParam(name, p));
    return fd;
  }

  /// Compiles and checks every gradient against finite differences;
  /// `expected` lists the parameters that must get one, in order.
  void check(const std::vector<Param> &params, const std::string &body,
             const std::string &out, std::vector<int64_t> outShape,
             bool decompose = false, double tolerance = 1e-6) {
    std::string outType = typeOf(outShape, "f64");
    std::string text = moduleText(params, body, out, outType, outShape);
    compile(text, decompose);
    if (HasFatalFailure())
      return;
    std::vector<std::string> trainable;
    for (const Param &p : params)
      if (!p.frozen)
        trainable.push_back(p.name);
    EXPECT_EQ(gradNames, trainable);
    for (const std::string &name : gradNames) {
      std::vector<double> g = gradient(name), fd = finiteDifferences(name);
      ASSERT_EQ(g.size(), fd.size());
      double scale = 0, diff = 0;
      size_t worst = 0;
      for (size_t k = 0; k < g.size(); ++k) {
        scale = std::max(scale, std::fabs(fd[k]));
        if (std::fabs(g[k] - fd[k]) > diff) {
          diff = std::fabs(g[k] - fd[k]);
          worst = k;
        }
      }
      if (!zeroGradient)
        EXPECT_GT(scale, 1e-3) << "gradient of " << name << " is zero:\n" << text;
      EXPECT_LE(diff, tolerance * std::max(scale, 1e-8))
          << "gradient of " << name << ": element " << worst << " is " << g[worst]
          << ", finite differences give " << fd[worst] << "\n"
          << text;
    }
  }

  bool zeroGradient = false; // the case's gradients are all zero (floor)
  std::unique_ptr<mlir::MLIRContext> context;
  std::vector<std::string> gradNames;
  std::string artifactDir;
  rt::CpuBackend backend;
  std::unique_ptr<rt::Artifact> artifact;
  std::unique_ptr<rt::Session> session;
};

/// A unary elementwise op on a 2x3 parameter in [lo, hi].
#define UNARY_TEST(NAME, OP, LO, HI)                                                 \
  TEST_F(VjpTest, NAME) {                                                            \
    check({{"x", {2, 3}, LO, HI}}, "    %y = trc." OP " %x : tensor<2x3xf64>", "%y", \
          {2, 3});                                                                   \
  }

UNARY_TEST(Neg, "neg", -1, 1)
UNARY_TEST(Abs, "abs", -1, 1)
UNARY_TEST(Exp, "exp", -1, 1)
UNARY_TEST(Log, "log", 0.5, 2)
UNARY_TEST(Sqrt, "sqrt", 0.5, 2)
UNARY_TEST(Rsqrt, "rsqrt", 0.5, 2)
UNARY_TEST(Tanh, "tanh", -1.5, 1.5)
UNARY_TEST(Erf, "erf", -1.5, 1.5)
UNARY_TEST(Sin, "sin", -2, 2)
UNARY_TEST(Cos, "cos", -2, 2)
UNARY_TEST(Logistic, "logistic", -2, 2)

// floor has a zero gradient (finite differences away from integers agree).
TEST_F(VjpTest, Floor) {
  zeroGradient = true;
  check({{"x", {2, 3}, 0.2, 0.8}}, "    %y = trc.floor %x : tensor<2x3xf64>", "%y", {2, 3});
}

#define BINARY_TEST(NAME, OP, LO, HI)                                                \
  TEST_F(VjpTest, NAME) {                                                            \
    check({{"x", {2, 3}, LO, HI}, {"y", {2, 3}, LO, HI}},                            \
          "    %z = trc." OP " %x, %y : tensor<2x3xf64>", "%z", {2, 3});             \
  }

BINARY_TEST(Add, "add", -1, 1)
BINARY_TEST(Sub, "sub", -1, 1)
BINARY_TEST(Mul, "mul", -1, 1)
BINARY_TEST(Div, "div", 0.5, 2)
BINARY_TEST(Pow, "pow", 0.5, 2)
BINARY_TEST(Max, "max", -1, 1)
BINARY_TEST(Min, "min", -1, 1)

// x * x: both operands are the same value, the gradients add up.
TEST_F(VjpTest, MulSquare) {
  check({{"x", {2, 3}}}, "    %z = trc.mul %x, %x : tensor<2x3xf64>", "%z", {2, 3});
}

// Constant exponents (x^3 from GPT-2's gelu, x^2, x^0.5, x^1).
TEST_F(VjpTest, PowConstantExponents) {
  check({{"x", {2, 3}, 0.5, 2}},
        "    %c3 = trc.constant dense<3.0> : tensor<2x3xf64>\n"
        "    %c2 = trc.constant dense<2.0> : tensor<2x3xf64>\n"
        "    %ch = trc.constant dense<0.5> : tensor<2x3xf64>\n"
        "    %c1 = trc.constant dense<1.0> : tensor<2x3xf64>\n"
        "    %a = trc.pow %x, %c3 : tensor<2x3xf64>\n"
        "    %b = trc.pow %x, %c2 : tensor<2x3xf64>\n"
        "    %c = trc.pow %x, %ch : tensor<2x3xf64>\n"
        "    %d = trc.pow %x, %c1 : tensor<2x3xf64>\n"
        "    %ab = trc.add %a, %b : tensor<2x3xf64>\n"
        "    %cd = trc.add %c, %d : tensor<2x3xf64>\n"
        "    %z = trc.add %ab, %cd : tensor<2x3xf64>",
        "%z", {2, 3});
}

// ReLU as max(x, 0): only x is differentiable.
TEST_F(VjpTest, MaxWithConstant) {
  check({{"x", {2, 3}}},
        "    %c = trc.constant dense<0.0> : tensor<2x3xf64>\n"
        "    %z = trc.max %x, %c : tensor<2x3xf64>",
        "%z", {2, 3});
}

// Ties of max/min split the gradient in halves.
TEST_F(VjpTest, MaxTiesShareTheGradient) {
  compile(moduleText({{"x", {3}, 0, 0, false, {1.0, 2.0, 3.0}},
                      {"y", {3}, 0, 0, false, {2.0, 2.0, 2.0}}},
                     "    %z = trc.max %x, %y : tensor<3xf64>", "%z", "tensor<3xf64>",
                     {3}));
  if (HasFatalFailure())
    return;
  std::vector<double> gx = gradient("x"), gy = gradient("y");
  // loss_r = (r0, -r1, r2): only the signs and ratios matter here.
  EXPECT_EQ(gx[0], 0.0);
  EXPECT_NE(gx[2], 0.0);
  EXPECT_EQ(gy[2], 0.0);
  EXPECT_NE(gy[0], 0.0);
  EXPECT_EQ(gx[1], gy[1]);
  EXPECT_NE(gx[1], 0.0);
  EXPECT_DOUBLE_EQ(gx[1] * 2, gx[1] + gy[1]);
}

// Both branches of a select get the gradient where they were picked; the
// predicate (from a comparison) none.
TEST_F(VjpTest, Select) {
  check({{"x", {2, 3}}, {"y", {2, 3}}},
        "    %zero = trc.constant dense<0.0> : tensor<2x3xf64>\n"
        "    %p = trc.compare gt, %x, %zero : tensor<2x3xf64> -> tensor<2x3xi1>\n"
        "    %e = trc.exp %y : tensor<2x3xf64>\n"
        "    %z = trc.select %p, %x, %e : tensor<2x3xi1>, tensor<2x3xf64>",
        "%z", {2, 3});
}

// float -> float: the gradient converts back (an f32 parameter into f64).
TEST_F(VjpTest, ConvertFloat) {
  Param x{"x", {2, 3}};
  x.element = "f32";
  check({x},
        "    %y = trc.convert %x : tensor<2x3xf32> -> tensor<2x3xf64>\n"
        "    %z = trc.mul %y, %y : tensor<2x3xf64>",
        "%z", {2, 3}, false, 1e-5);
}

// A path through integers carries no gradient: x -> i64 -> f64 adds nothing
// to the gradient of the x * 2 term.
TEST_F(VjpTest, IntegerPathHasNoGradient) {
  check({{"x", {2, 3}, -3, 3}},
        "    %i = trc.convert %x : tensor<2x3xf64> -> tensor<2x3xi64>\n"
        "    %f = trc.convert %i : tensor<2x3xi64> -> tensor<2x3xf64>\n"
        "    %two = trc.constant dense<2.0> : tensor<2x3xf64>\n"
        "    %d = trc.mul %x, %two : tensor<2x3xf64>\n"
        "    %z = trc.add %f, %d : tensor<2x3xf64>",
        "%z", {2, 3});
}

// Frozen parameters get no gradient result; the others are still right.
TEST_F(VjpTest, FrozenParameterHasNoGradient) {
  check({{"x", {2, 3}}, {"w", {2, 3}, -1, 1, /*frozen=*/true}},
        "    %z = trc.mul %x, %w : tensor<2x3xf64>", "%z", {2, 3});
}

// Tied weights: one table read by gather (embedding) and by a transpose
// feeding a matrix product (LM head); the gradients add up.
TEST_F(VjpTest, TiedEmbeddingSumsGradients) {
  check({{"wte", {5, 3}}, {"h", {4, 3}}},
        "    %ids = trc.constant dense<[1, 4, 1, 0]> : tensor<4xi64>\n"
        "    %e = trc.gather %wte, %ids axis = 0 : (tensor<5x3xf64>, tensor<4xi64>) -> tensor<4x3xf64>\n"
        "    %x = trc.add %e, %h : tensor<4x3xf64>\n"
        "    %wt = trc.transpose %wte, perm = [1, 0] : (tensor<5x3xf64>) -> tensor<3x5xf64>\n"
        "    %logits = trc.dot_general %x, %wt, batch = [] x [], contract = [1] x [0] : (tensor<4x3xf64>, tensor<3x5xf64>) -> tensor<4x5xf64>",
        "%logits", {4, 5});
}

//===--- dot_general and reduce ---------------------------------------------===//

TEST_F(VjpTest, DotGeneralMatmul) {
  check({{"a", {2, 3}}, {"b", {3, 4}}},
        "    %c = trc.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>",
        "%c", {2, 4});
}

// Batch dims, two contracting dims in another order on each side, free dims
// in the middle: the gradients need transposes back.
TEST_F(VjpTest, DotGeneralBatchAndPermutedContraction) {
  check({{"a", {2, 3, 4, 5}}, {"b", {5, 2, 6, 3}}},
        "    %c = trc.dot_general %a, %b, batch = [0] x [1], contract = [1, 3] x [3, 0] : (tensor<2x3x4x5xf64>, tensor<5x2x6x3xf64>) -> tensor<2x4x6xf64>",
        "%c", {2, 4, 6});
}

// Batch dims that are not leading; the lhs contracts its first dim.
TEST_F(VjpTest, DotGeneralInnerBatch) {
  check({{"a", {4, 2, 3}}, {"b", {5, 2, 4}}},
        "    %c = trc.dot_general %a, %b, batch = [1] x [1], contract = [0] x [2] : (tensor<4x2x3xf64>, tensor<5x2x4xf64>) -> tensor<2x3x5xf64>",
        "%c", {2, 3, 5});
}

TEST_F(VjpTest, ReduceSum) {
  check({{"x", {3, 4, 2}}},
        "    %s = trc.reduce sum %x dims = [0, 2] : (tensor<3x4x2xf64>) -> tensor<4xf64>",
        "%s", {4});
}

TEST_F(VjpTest, ReduceMax) {
  check({{"x", {3, 4, 2}}},
        "    %s = trc.reduce max %x dims = [1] : (tensor<3x4x2xf64>) -> tensor<3x2xf64>",
        "%s", {3, 2});
}

TEST_F(VjpTest, ReduceMin) {
  check({{"x", {3, 4, 2}}},
        "    %s = trc.reduce min %x dims = [2, 0] : (tensor<3x4x2xf64>) -> tensor<4xf64>",
        "%s", {4});
}

TEST_F(VjpTest, ReduceProd) {
  check({{"x", {3, 4}, 0.5, 1.5}},
        "    %s = trc.reduce prod %x dims = [1] : (tensor<3x4xf64>) -> tensor<3xf64>",
        "%s", {3});
}

// Rows with no zero, one zero and two zeros: the product is multilinear, so
// finite differences are exact there too.
TEST_F(VjpTest, ReduceProdWithZeros) {
  check({{"x", {3, 4}, 0, 0, false,
          {0.5, 1.5, -2.0, 0.75, 0.0, 1.25, 0.5, -1.5, 0.0, 2.0, 0.0, 0.5}}},
        "    %s = trc.reduce prod %x dims = [1] : (tensor<3x4xf64>) -> tensor<3xf64>",
        "%s", {3});
}

// Ties of reduce max all get the gradient.
TEST_F(VjpTest, ReduceMaxRoutesToEveryTie) {
  compile(moduleText({{"x", {4}, 0, 0, false, {1.0, 3.0, 3.0, 2.0}}},
                     "    %s = trc.reduce max %x dims = [0] : (tensor<4xf64>) -> tensor<f64>",
                     "%s", "tensor<f64>", {}));
  if (HasFatalFailure())
    return;
  std::vector<double> g = gradient("x");
  EXPECT_EQ(g[0], 0.0);
  EXPECT_NE(g[1], 0.0);
  EXPECT_EQ(g[1], g[2]);
  EXPECT_EQ(g[3], 0.0);
}

//===--- data movement ------------------------------------------------------===//

// Broadcast along a new dim, and a size-1 dim stretched (sum, then reshape).
TEST_F(VjpTest, BroadcastInDim) {
  check({{"x", {3}}, {"y", {3, 1}}},
        "    %bx = trc.broadcast_in_dim %x, dims = [1] : (tensor<3xf64>) -> tensor<2x3x4xf64>\n"
        "    %by = trc.broadcast_in_dim %y, dims = [1, 2] : (tensor<3x1xf64>) -> tensor<2x3x4xf64>\n"
        "    %z = trc.mul %bx, %by : tensor<2x3x4xf64>",
        "%z", {2, 3, 4});
}

TEST_F(VjpTest, Transpose) {
  check({{"x", {2, 3, 4}}},
        "    %t = trc.transpose %x, perm = [2, 0, 1] : (tensor<2x3x4xf64>) -> tensor<4x2x3xf64>",
        "%t", {4, 2, 3});
}

TEST_F(VjpTest, Reshape) {
  check({{"x", {2, 6}}},
        "    %t = trc.reshape %x : (tensor<2x6xf64>) -> tensor<3x4xf64>", "%t", {3, 4});
}

TEST_F(VjpTest, Slice) {
  check({{"x", {5, 6}}},
        "    %s = trc.slice %x[[1, 2] : [4, 6] : [1, 1]] : (tensor<5x6xf64>) -> tensor<3x4xf64>",
        "%s", {3, 4});
}

// Strides: dim 0 fills the operand exactly, dim 1 ends before its last element.
TEST_F(VjpTest, SliceStrided) {
  check({{"x", {7, 6}}},
        "    %s = trc.slice %x[[1, 0] : [7, 5] : [2, 3]] : (tensor<7x6xf64>) -> tensor<3x2xf64>",
        "%s", {3, 2});
}

// Strides whose interleaved zeros run past the operand (trimmed).
TEST_F(VjpTest, SliceStridedTrimmed) {
  check({{"x", {5, 7}}},
        "    %s = trc.slice %x[[0, 1] : [5, 7] : [2, 4]] : (tensor<5x7xf64>) -> tensor<3x2xf64>",
        "%s", {3, 2});
}

// Slices splitting a tensor (with a gap, an unread tail, and two that
// overlap): their zero-padded gradients are joined or added.
TEST_F(VjpTest, SlicesOfOneTensor) {
  check({{"x", {2, 9}}},
        "    %a = trc.slice %x[[0, 0] : [2, 2] : [1, 1]] : (tensor<2x9xf64>) -> tensor<2x2xf64>\n"
        "    %b = trc.slice %x[[0, 3] : [2, 5] : [1, 1]] : (tensor<2x9xf64>) -> tensor<2x2xf64>\n"
        "    %c = trc.slice %x[[0, 4] : [2, 6] : [1, 1]] : (tensor<2x9xf64>) -> tensor<2x2xf64>\n"
        "    %d = trc.slice %x[[0, 6] : [2, 8] : [1, 1]] : (tensor<2x9xf64>) -> tensor<2x2xf64>\n"
        "    %ab = trc.mul %a, %b : tensor<2x2xf64>\n"
        "    %cd = trc.mul %c, %d : tensor<2x2xf64>\n"
        "    %z = trc.add %ab, %cd : tensor<2x2xf64>",
        "%z", {2, 2});
}

TEST_F(VjpTest, Reverse) {
  check({{"x", {2, 3, 4}}},
        "    %r = trc.reverse %x, dims = [0, 2] : tensor<2x3x4xf64>", "%r", {2, 3, 4});
}

TEST_F(VjpTest, Concatenate) {
  check({{"a", {2, 1}}, {"b", {2, 3}}, {"c", {2, 2}}},
        "    %r = trc.concatenate %a, %b, %c dim = 1 : (tensor<2x1xf64>, tensor<2x3xf64>, tensor<2x2xf64>) -> tensor<2x6xf64>",
        "%r", {2, 6});
}

// The operand gets the interior, the padding value the sum of the border.
TEST_F(VjpTest, Pad) {
  check({{"x", {2, 3}}, {"v", {}}},
        "    %r = trc.pad %x, %v, low = [1, 0], high = [0, 2] : (tensor<2x3xf64>, tensor<f64>) -> tensor<3x5xf64>",
        "%r", {3, 5});
}

// Repeated and negative indices: scatter_add sums into the wrapped rows.
TEST_F(VjpTest, Gather) {
  check({{"x", {5, 3}}},
        "    %i = trc.constant dense<[[0, 4], [-1, 2], [0, 0]]> : tensor<3x2xi64>\n"
        "    %g = trc.gather %x, %i axis = 0 : (tensor<5x3xf64>, tensor<3x2xi64>) -> tensor<3x2x3xf64>",
        "%g", {3, 2, 3});
}

TEST_F(VjpTest, GatherInnerAxis) {
  check({{"x", {2, 5, 3}}},
        "    %i = trc.constant dense<[4, 1, -5, 1]> : tensor<4xi32>\n"
        "    %g = trc.gather %x, %i axis = 1 : (tensor<2x5x3xf64>, tensor<4xi32>) -> tensor<2x4x3xf64>",
        "%g", {2, 4, 3});
}

TEST_F(VjpTest, ScatterAdd) {
  check({{"x", {5, 3}}, {"u", {4, 3}}},
        "    %i = trc.constant dense<[3, -1, 3, 0]> : tensor<4xi64>\n"
        "    %s = trc.scatter_add %x, %i, %u axis = 0 : (tensor<5x3xf64>, tensor<4xi64>, tensor<4x3xf64>) -> tensor<5x3xf64>\n"
        "    %z = trc.mul %s, %s : tensor<5x3xf64>",
        "%z", {5, 3});
}

//===--- composites, with their rules and through their decompositions ------===//

class CompositeVjpTest : public VjpTest, public ::testing::WithParamInterface<bool> {};

TEST_P(CompositeVjpTest, Softmax) {
  check({{"x", {2, 5}, -2, 2}},
        "    %s = trc.softmax %x axis = 1 : tensor<2x5xf64>", "%s", {2, 5}, GetParam());
}

TEST_P(CompositeVjpTest, SoftmaxLeadingAxis) {
  check({{"x", {3, 2, 4}, -2, 2}},
        "    %s = trc.softmax %x axis = 0 : tensor<3x2x4xf64>", "%s", {3, 2, 4}, GetParam());
}

TEST_P(CompositeVjpTest, LogSoftmax) {
  check({{"x", {2, 5}, -2, 2}},
        "    %s = trc.log_softmax %x axis = 1 : tensor<2x5xf64>", "%s", {2, 5}, GetParam());
}

TEST_P(CompositeVjpTest, LayerNorm) {
  check({{"x", {3, 4}, -2, 2}, {"g", {4}, 0.5, 1.5}, {"b", {4}}},
        "    %y = trc.layer_norm %x scale %g bias %b axis = 1 eps = 1.0e-05 : (tensor<3x4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<3x4xf64>",
        "%y", {3, 4}, GetParam());
}

// Two normalized dims, scale only.
TEST_P(CompositeVjpTest, LayerNormTwoDimsScaleOnly) {
  check({{"x", {2, 3, 4}, -2, 2}, {"g", {3, 4}, 0.5, 1.5}},
        "    %y = trc.layer_norm %x scale %g axis = 1 eps = 1.0e-05 : (tensor<2x3x4xf64>, tensor<3x4xf64>) -> tensor<2x3x4xf64>",
        "%y", {2, 3, 4}, GetParam());
}

TEST_P(CompositeVjpTest, LayerNormNoAffine) {
  check({{"x", {3, 4}, -2, 2}},
        "    %y = trc.layer_norm %x axis = 1 eps = 1.0e-05 : (tensor<3x4xf64>) -> tensor<3x4xf64>",
        "%y", {3, 4}, GetParam());
}

TEST_P(CompositeVjpTest, Gelu) {
  check({{"x", {2, 3}, -3, 3}}, "    %y = trc.gelu %x : tensor<2x3xf64>", "%y", {2, 3},
        GetParam());
}

TEST_P(CompositeVjpTest, GeluTanh) {
  check({{"x", {2, 3}, -3, 3}}, "    %y = trc.gelu %x tanh : tensor<2x3xf64>", "%y",
        {2, 3}, GetParam());
}

// Mean over the labels that are not ignore_index.
TEST_P(CompositeVjpTest, CrossEntropyMeanIgnoreIndex) {
  check({{"x", {4, 5}, -2, 2}},
        "    %t = trc.constant dense<[0, 3, -100, 4]> : tensor<4xi64>\n"
        "    %l = trc.cross_entropy %x, %t reduction = mean ignore_index = -100 : (tensor<4x5xf64>, tensor<4xi64>) -> tensor<f64>",
        "%l", {}, GetParam());
}

TEST_P(CompositeVjpTest, CrossEntropyMean) {
  check({{"x", {4, 5}, -2, 2}},
        "    %t = trc.constant dense<[0, 3, 1, 4]> : tensor<4xi32>\n"
        "    %l = trc.cross_entropy %x, %t reduction = mean : (tensor<4x5xf64>, tensor<4xi32>) -> tensor<f64>",
        "%l", {}, GetParam());
}

// [N, C, d] logits, summed.
TEST_P(CompositeVjpTest, CrossEntropySumSpatial) {
  check({{"x", {2, 5, 3}, -2, 2}},
        "    %t = trc.constant dense<[[0, 3, 1], [4, 2, 2]]> : tensor<2x3xi64>\n"
        "    %l = trc.cross_entropy %x, %t reduction = sum : (tensor<2x5x3xf64>, tensor<2x3xi64>) -> tensor<f64>",
        "%l", {}, GetParam());
}

// Per-sample losses (the harness weights them), with an ignored label.
TEST_P(CompositeVjpTest, CrossEntropyNone) {
  check({{"x", {4, 5}, -2, 2}},
        "    %t = trc.constant dense<[0, 3, 1, 2]> : tensor<4xi64>\n"
        "    %l = trc.cross_entropy %x, %t reduction = none ignore_index = 1 : (tensor<4x5xf64>, tensor<4xi64>) -> tensor<4xf64>",
        "%l", {4}, GetParam());
}

// NegativeLogLikelihoodLoss: the input already holds log-probabilities.
TEST_P(CompositeVjpTest, CrossEntropyLogProbs) {
  check({{"x", {4, 5}, -3, -0.1}},
        "    %t = trc.constant dense<[0, 3, -100, 4]> : tensor<4xi64>\n"
        "    %l = trc.cross_entropy %x, %t reduction = mean ignore_index = -100 log_probs : (tensor<4x5xf64>, tensor<4xi64>) -> tensor<f64>",
        "%l", {}, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Rules, CompositeVjpTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "Decomposed" : "Composite";
                         });

//===--- the scatter_add lowering, element by element -----------------------===//

TEST_F(VjpTest, ScatterAddLoweringAccumulatesAtWrappedIndices) {
  // loss = sum(scatter_add(x, i, u) * r): d/du[j] = r[wrap(i[j])], and the
  // loss itself checks the forward: x = 0 except x[1] = 10.
  compile(moduleText({{"x", {3}, 0, 0, false, {0.0, 10.0, 0.0}},
                      {"u", {4}, 0, 0, false, {1.0, 2.0, 4.0, 8.0}}},
                     "    %i = trc.constant dense<[2, -1, 0, 2]> : tensor<4xi64>\n"
                     "    %s = trc.scatter_add %x, %i, %u axis = 0 : (tensor<3xf64>, tensor<4xi64>, tensor<4xf64>) -> tensor<3xf64>",
                     "%s", "tensor<3xf64>", {3}));
  if (HasFatalFailure())
    return;
  // s = [4, 10, 1 + 2 + 8] = [4, 10, 11]; r = (r0, -r1, r2)
  std::vector<double> gx = gradient("x"), gu = gradient("u");
  double r0 = gx[0], r1 = gx[1], r2 = gx[2];
  EXPECT_DOUBLE_EQ(loss(), 4 * r0 + 10 * r1 + 11 * r2);
  EXPECT_EQ(gu, (std::vector<double>{r2, r2, r0, r2}));
}

} // namespace
