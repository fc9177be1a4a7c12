//===- LrScheduleTest.cpp - learning-rate schedules -------------------------===//
//
// Each schedule against values computed by hand, warm-up as llm.c does it,
// specs parsed and printed back, and every bad spec with its message.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/LrSchedule.h"

#include "StatusTesting.h"

#include <gtest/gtest.h>

using namespace trc::rt;

namespace {

LrSchedule make(LrScheduleKind kind, double lr, int64_t warmup, int64_t total,
                double minLr) {
  LrSchedule s;
  s.kind = kind;
  s.lr = lr;
  s.warmupSteps = warmup;
  s.totalSteps = total;
  s.minLr = minLr;
  EXPECT_TRUE(s.validate());
  return s;
}

std::string parseError(const std::string &spec, double lr = 1e-3,
                       int64_t total = 1000) {
  Status st = parseLrSchedule(spec, lr, total).status();
  return st ? std::string() : st.message();
}

} // namespace

TEST(LrSchedule, Constant) {
  LrSchedule s = make(LrScheduleKind::Constant, 0.1, 0, 0, 0);
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(1000000), 0.1);
  EXPECT_DOUBLE_EQ(s.at(-5), 0.1);
}

TEST(LrSchedule, WarmupIsLlmCs) {
  // lr * (step + 1) / warmup: the first step already moves.
  LrSchedule s = make(LrScheduleKind::Constant, 0.1, 4, 0, 0);
  EXPECT_DOUBLE_EQ(s.at(0), 0.025);
  EXPECT_DOUBLE_EQ(s.at(1), 0.05);
  EXPECT_DOUBLE_EQ(s.at(2), 0.075);
  EXPECT_DOUBLE_EQ(s.at(3), 0.1);
  EXPECT_DOUBLE_EQ(s.at(4), 0.1);
  EXPECT_DOUBLE_EQ(s.at(-1), 0.025);
}

TEST(LrSchedule, WarmupFromZeroIsHuggingFaces) {
  // warmup_from=0: lr * step / warmup (LambdaLR's): the first step runs at
  // 0 and step `warmup` reaches lr; the decay after it is unchanged.
  TRC_ASSERT_OK_AND_ASSIGN(LrSchedule s,
                           parseLrSchedule("linear:warmup=4,warmup_from=0", 1.0, 12));
  EXPECT_DOUBLE_EQ(s.at(0), 0.0);
  EXPECT_DOUBLE_EQ(s.at(1), 0.25);
  EXPECT_DOUBLE_EQ(s.at(3), 0.75);
  EXPECT_DOUBLE_EQ(s.at(4), 1.0);
  EXPECT_DOUBLE_EQ(s.at(8), 0.5);
  EXPECT_EQ(s.spec(), "linear:warmup=4,warmup_from=0,min=0,total=12");
  TRC_ASSERT_OK_AND_ASSIGN(LrSchedule back, parseLrSchedule(s.spec(), 1.0, 99));
  EXPECT_DOUBLE_EQ(back.at(1), 0.25);
  EXPECT_EQ(back.totalSteps, 12);
  EXPECT_FALSE(parseLrSchedule("constant:warmup=4,warmup_from=2", 1.0, 0).ok());
  TRC_ASSERT_OK_AND_ASSIGN(s, parseLrSchedule("constant:warmup=2,warmup_from=0", 1.0, 0));
  EXPECT_DOUBLE_EQ(s.at(0), 0.0);
  EXPECT_DOUBLE_EQ(s.at(2), 1.0);
}

TEST(LrSchedule, CosineDecayToTheMinimum) {
  LrSchedule s = make(LrScheduleKind::Cosine, 1.0, 10, 110, 0.1);
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);           // d = 0
  EXPECT_NEAR(s.at(35), 0.8681980515339464, 1e-15); // d = 1/4
  EXPECT_NEAR(s.at(60), 0.55, 1e-15);               // d = 1/2
  EXPECT_NEAR(s.at(85), 0.23180194846605365, 1e-15); // d = 3/4
  EXPECT_NEAR(s.at(109), 0.10022204783542078, 1e-15); // d = 0.99
  EXPECT_DOUBLE_EQ(s.at(110), 0.1);
  EXPECT_DOUBLE_EQ(s.at(5000), 0.1);
  // Monotone after the warm-up.
  for (int64_t step = 10; step < 120; ++step)
    EXPECT_LE(s.at(step + 1), s.at(step)) << step;
}

TEST(LrSchedule, LinearDecay) {
  LrSchedule s = make(LrScheduleKind::Linear, 2e-3, 0, 100, 0);
  EXPECT_DOUBLE_EQ(s.at(0), 2e-3);
  EXPECT_DOUBLE_EQ(s.at(50), 1e-3);
  EXPECT_DOUBLE_EQ(s.at(75), 5e-4);
  EXPECT_NEAR(s.at(99), 2e-5, 1e-18);
  EXPECT_DOUBLE_EQ(s.at(100), 0);
  LrSchedule w = make(LrScheduleKind::Linear, 1.0, 2, 12, 0.5);
  EXPECT_DOUBLE_EQ(w.at(0), 0.5);
  EXPECT_DOUBLE_EQ(w.at(1), 1.0);
  EXPECT_DOUBLE_EQ(w.at(2), 1.0);
  EXPECT_DOUBLE_EQ(w.at(7), 0.75);
  EXPECT_DOUBLE_EQ(w.at(12), 0.5);
}

TEST(LrSchedule, ParsesSpecs) {
  TRC_ASSERT_OK_AND_ASSIGN(LrSchedule s,
                           parseLrSchedule("cosine:warmup=100,min=1e-5,total=5000", 3e-4, 10));
  EXPECT_EQ(s.kind, LrScheduleKind::Cosine);
  EXPECT_EQ(s.lr, 3e-4);
  EXPECT_EQ(s.warmupSteps, 100);
  EXPECT_EQ(s.minLr, 1e-5);
  EXPECT_EQ(s.totalSteps, 5000);
  EXPECT_EQ(s.spec(), "cosine:warmup=100,min=1e-05,total=5000");

  TRC_ASSERT_OK_AND_ASSIGN(s, parseLrSchedule("linear:warmup=10,min_ratio=0.1", 1e-3, 200));
  EXPECT_EQ(s.kind, LrScheduleKind::Linear);
  EXPECT_DOUBLE_EQ(s.minLr, 1e-4);
  EXPECT_EQ(s.totalSteps, 200); // the run's step count
  EXPECT_EQ(s.warmupSteps, 10);

  TRC_ASSERT_OK_AND_ASSIGN(s, parseLrSchedule("constant", 0.5, 0));
  EXPECT_EQ(s.kind, LrScheduleKind::Constant);
  EXPECT_EQ(s.spec(), "constant");
  TRC_ASSERT_OK_AND_ASSIGN(s, parseLrSchedule("constant:warmup=3", 0.5, 0));
  EXPECT_EQ(s.spec(), "constant:warmup=3");
  TRC_ASSERT_OK_AND_ASSIGN(s, parseLrSchedule("cosine", 0.5, 7));
  EXPECT_EQ(s.spec(), "cosine:min=0,total=7");

  // spec() parses back to the same schedule.
  for (const char *spec : {"cosine:warmup=7,min=3.3e-05,total=91",
                           "linear:min=0.0001,total=5", "constant:warmup=2"}) {
    TRC_ASSERT_OK_AND_ASSIGN(LrSchedule a, parseLrSchedule(spec, 1e-3, 100));
    TRC_ASSERT_OK_AND_ASSIGN(LrSchedule b, parseLrSchedule(a.spec(), 1e-3, 100));
    EXPECT_EQ(a.spec(), b.spec());
    for (int64_t step = 0; step < 100; ++step)
      EXPECT_EQ(a.at(step), b.at(step));
  }
}

TEST(LrSchedule, RejectsBadSpecs) {
  EXPECT_EQ(parseError("step"), "--lr-schedule 'step': unknown schedule "
                                "'step' (expected constant, cosine or linear)");
  EXPECT_EQ(parseError(""), "--lr-schedule '': unknown schedule '' (expected "
                            "constant, cosine or linear)");
  EXPECT_EQ(parseError("cosine:warmup"),
            "--lr-schedule 'cosine:warmup': expected key=value, got 'warmup'");
  EXPECT_EQ(parseError("cosine:"),
            "--lr-schedule 'cosine:': expected key=value, got ''");
  EXPECT_EQ(parseError("cosine:warmup=10,"),
            "--lr-schedule 'cosine:warmup=10,': expected key=value, got ''");
  EXPECT_EQ(parseError("cosine:warmup=x"),
            "--lr-schedule 'cosine:warmup=x': bad value 'x' for warmup "
            "(expected a non-negative integer)");
  EXPECT_EQ(parseError("cosine:warmup=1.5"),
            "--lr-schedule 'cosine:warmup=1.5': bad value '1.5' for warmup "
            "(expected a non-negative integer)");
  EXPECT_EQ(parseError("cosine:warmup=-1"),
            "--lr-schedule 'cosine:warmup=-1': bad value '-1' for warmup "
            "(expected a non-negative integer)");
  EXPECT_EQ(parseError("cosine:total=0"),
            "--lr-schedule 'cosine:total=0': bad value '0' for total "
            "(expected a positive integer)");
  EXPECT_EQ(parseError("cosine:min=-1e-5"),
            "--lr-schedule 'cosine:min=-1e-5': bad value '-1e-5' for min "
            "(expected a non-negative number)");
  EXPECT_EQ(parseError("cosine:min=nan"),
            "--lr-schedule 'cosine:min=nan': bad value 'nan' for min "
            "(expected a non-negative number)");
  EXPECT_EQ(parseError("cosine:min_ratio=2"),
            "--lr-schedule 'cosine:min_ratio=2': bad value '2' for "
            "min_ratio (expected a number in [0, 1])");
  EXPECT_EQ(parseError("cosine:decay=3"),
            "--lr-schedule 'cosine:decay=3': unknown key 'decay' (expected "
            "warmup, warmup_from, min, min_ratio or total)");
  EXPECT_EQ(parseError("cosine:warmup=1,warmup=2"),
            "--lr-schedule 'cosine:warmup=1,warmup=2': duplicate key "
            "'warmup'");
  EXPECT_EQ(parseError("cosine:min=1e-5,min_ratio=0.1"),
            "--lr-schedule 'cosine:min=1e-5,min_ratio=0.1': min and "
            "min_ratio exclude each other");
  EXPECT_EQ(parseError("constant:total=5"),
            "--lr-schedule 'constant:total=5': the constant schedule takes "
            "only warmup and warmup_from");
  EXPECT_EQ(parseError("cosine:warmup=100,total=50"),
            "--lr-schedule 'cosine:warmup=100,total=50': the cosine schedule "
            "needs total steps (50) above the warm-up steps (100)");
  EXPECT_EQ(parseError("linear:warmup=1000"),
            "--lr-schedule 'linear:warmup=1000': the linear schedule needs "
            "total steps (1000) above the warm-up steps (1000)");
  EXPECT_EQ(parseError("cosine:min=0.5", 0.1),
            "--lr-schedule 'cosine:min=0.5': the minimum learning rate 0.5 "
            "must lie in [0, 0.1]");
  EXPECT_EQ(parseError("constant", 0),
            "--lr-schedule 'constant': the learning rate must be positive "
            "and finite, got 0");
  EXPECT_EQ(parseError("constant", -1e-3),
            "--lr-schedule 'constant': the learning rate must be positive "
            "and finite, got -0.001");
}

TEST(LrSchedule, DiffersOnlyInTotal) {
  EXPECT_TRUE(differOnlyInTotal("cosine:warmup=1,min=0,total=4", "cosine:warmup=1,min=0,total=8"));
  EXPECT_TRUE(differOnlyInTotal("linear:min=0,total=50", "linear:min=0,total=100"));
  EXPECT_FALSE(differOnlyInTotal("linear:min=0,total=50", "linear:min=0,total=50"));
  EXPECT_FALSE(differOnlyInTotal("cosine:warmup=1,min=0,total=4", "cosine:warmup=2,min=0,total=8"));
  EXPECT_FALSE(differOnlyInTotal("cosine:min=0,total=4", "linear:min=0,total=8"));
  EXPECT_FALSE(differOnlyInTotal("constant", "constant:warmup=2"));
}
