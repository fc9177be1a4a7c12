//===- AnomalyReportTest.cpp - where a non-finite step's NaN/inf began ----===//
//
// findAnomalyOrigin on hand-made site graphs: the first NaN made from
// NaN-free operands, the inf behind it (a computed one before a constant's),
// a step with inf alone, a clean step; describeSite's wording per phase.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/AnomalyReport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace trc::rt {
namespace {

using Site = Manifest::AnomalySite;
constexpr float kInf = 1, kNaN = 2, kBoth = 3;

Site site(std::string op, std::string phase, std::vector<uint32_t> operands,
          std::string node = "/n") {
  return Site{std::move(op), std::move(node), std::move(phase), std::move(operands)};
}

TEST(AnomalyReport, CleanStepHasNoOrigin) {
  std::vector<Site> sites{site("", "input", {}), site("trc.exp", "forward", {0})};
  AnomalyOrigin o = findAnomalyOrigin(sites, {0, 0});
  EXPECT_FALSE(o.nan);
  EXPECT_FALSE(o.inf);
  EXPECT_EQ(describeAnomalyOrigin(sites, o), "");
}

TEST(AnomalyReport, FirstNaNFromNaNFreeOperands) {
  // 0 input -> 1 log (NaN) -> 2 mul (NaN, from 1); 3 div (NaN) later.
  std::vector<Site> sites{site("", "input", {}), site("trc.log", "forward", {0}, "/Log"),
                          site("trc.mul", "forward", {1}), site("trc.div", "backward", {0})};
  AnomalyOrigin o = findAnomalyOrigin(sites, {0, kNaN, kNaN, kNaN});
  ASSERT_TRUE(o.nan);
  EXPECT_EQ(*o.nan, 1u);
  EXPECT_FALSE(o.inf);
  EXPECT_EQ(describeAnomalyOrigin(sites, o), "NaN first made by 'trc.log' of node '/Log' (forward)");
}

TEST(AnomalyReport, TheInfBehindTheNaNPrefersAComputedOne) {
  // 0 mask constant (-inf, no operands); 1 input; 2 exp overflows (inf);
  // 3 select(mask) (inf from 0); 4 add(2, 3) makes NaN (inf - inf).
  std::vector<Site> sites{site("trc.constant", "forward", {}), site("", "input", {}),
                          site("trc.exp", "forward", {1}, "/Exp"),
                          site("trc.select", "forward", {0, 1}),
                          site("trc.add", "backward", {2, 3}, "/Add")};
  AnomalyOrigin o = findAnomalyOrigin(sites, {kInf, 0, kInf, kInf, kNaN});
  ASSERT_TRUE(o.nan && o.inf);
  EXPECT_EQ(*o.nan, 4u);
  EXPECT_EQ(*o.inf, 2u);
  EXPECT_EQ(describeAnomalyOrigin(sites, o),
            "NaN first made by 'trc.add' in the backward of node '/Add', from an inf made by "
            "'trc.exp' of node '/Exp' (forward)");
  // Only the constant's inf behind it: the constant is named.
  AnomalyOrigin c = findAnomalyOrigin(sites, {kInf, 0, 0, kInf, kNaN});
  ASSERT_TRUE(c.inf);
  EXPECT_EQ(*c.inf, 0u);
}

TEST(AnomalyReport, InfAloneTracesTheLastInfBack) {
  // 0 param; 1 matmul overflows; 2 unrelated mask fill (inf, no operands);
  // 3 reduce of 1 (inf); 4 optimizer norm (inf from 3).
  std::vector<Site> sites{site("", "parameter", {}, "w"),
                          site("trc.dot_general", "forward", {0}, "/MatMul"),
                          site("trc.constant", "forward", {}),
                          site("trc.reduce", "forward", {1}), site("trc.sqrt", "optimizer", {3})};
  AnomalyOrigin o = findAnomalyOrigin(sites, {0, kInf, kInf, kInf, kInf});
  EXPECT_FALSE(o.nan);
  ASSERT_TRUE(o.inf);
  EXPECT_EQ(*o.inf, 1u);
  EXPECT_EQ(describeAnomalyOrigin(sites, o),
            "inf first made by 'trc.dot_general' of node '/MatMul' (forward)");
}

TEST(AnomalyReport, BothBitsCount) {
  // A site holding NaN and inf (3) is a NaN site; its operand's inf is behind it.
  std::vector<Site> sites{site("", "input", {}, "x"), site("trc.div", "forward", {0})};
  AnomalyOrigin o = findAnomalyOrigin(sites, {kInf, kBoth});
  ASSERT_TRUE(o.nan && o.inf);
  EXPECT_EQ(*o.nan, 1u);
  EXPECT_EQ(*o.inf, 0u);
  EXPECT_EQ(describeAnomalyOrigin(sites, o),
            "NaN first made by 'trc.div' of node '/n' (forward), from an inf made by the input "
            "'x'");
}

TEST(AnomalyReport, DescribesEachPhase) {
  EXPECT_EQ(describeSite(site("", "input", {}, "x")), "the input 'x'");
  EXPECT_EQ(describeSite(site("", "parameter", {}, "wte.weight")), "the parameter 'wte.weight'");
  EXPECT_EQ(describeSite(site("trc.log", "forward", {}, "/Log")),
            "'trc.log' of node '/Log' (forward)");
  EXPECT_EQ(describeSite(site("trc.div", "backward", {}, "/Sqrt")),
            "'trc.div' in the backward of node '/Sqrt'");
  EXPECT_EQ(describeSite(site("trc.mul", "forward", {}, "")),
            "'trc.mul' of an op without an ONNX node (forward)");
  EXPECT_EQ(describeSite(site("trc.sqrt", "optimizer", {}, "")),
            "'trc.sqrt' of the optimizer update");
  // A collective's operands were finite on this rank.
  std::vector<Site> sites{site("", "input", {}, "x"), site("trc.all_reduce", "backward", {0})};
  EXPECT_THAT(describeAnomalyOrigin(sites, findAnomalyOrigin(sites, {0, kNaN})),
              testing::HasSubstr("(finite on this rank: another rank's values)"));
}

} // namespace
} // namespace trc::rt
