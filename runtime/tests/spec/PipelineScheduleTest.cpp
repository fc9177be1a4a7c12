//===- PipelineScheduleTest.cpp - schedule generators, checks, simulation ---===//
//
// Every generator over a grid of shapes passes checkSchedule and holds the
// right actions; the simulated bubble and in-flight peaks match the
// literature's formulas; exact orders for small shapes; hand-made tables
// that deadlock, miss an action or exceed the cap are reported by rank.
//
//===----------------------------------------------------------------------===//
#include "runtime/spec/PipelineSchedule.h"

#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace trc::rt {
namespace {

using test::errorOf;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr ScheduleKind kAllKinds[] = {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                                      ScheduleKind::Interleaved1F1B, ScheduleKind::ZeroBubbleH1};
constexpr int kRanks[] = {1, 2, 3, 4, 8};
constexpr int kMaxMicrobatches = 16;

// The chunk counts each kind accepts.
std::vector<int> chunksFor(ScheduleKind kind) {
  return kind == ScheduleKind::Interleaved1F1B ? std::vector<int>{2, 3} : std::vector<int>{1};
}

bool validShape(ScheduleKind kind, int p, int m) {
  return kind != ScheduleKind::Interleaved1F1B || m % p == 0;
}

// Every valid (kind, p, m, v) of the grid, as a shape with no cap.
template <typename Fn> void forEachShape(ScheduleKind kind, Fn fn) {
  for (int p : kRanks)
    for (int m = 1; m <= kMaxMicrobatches; ++m)
      for (int v : chunksFor(kind))
        if (validShape(kind, p, m))
          fn(ScheduleShape{p, m, v, 0});
}

std::string where(ScheduleKind kind, const ScheduleShape &s) {
  return std::string(scheduleName(kind)) + " p=" + std::to_string(s.ranks) +
         " m=" + std::to_string(s.microbatches) + " v=" + std::to_string(s.chunks);
}

int countOf(const std::vector<PipelineStep> &order, PipelineAction action) {
  return static_cast<int>(std::count_if(order.begin(), order.end(),
                                        [&](const PipelineStep &s) { return s.action == action; }));
}

// The "rank r: ..." line of formatSchedule.
std::string compactLine(const PipelineSchedule &s, int rank) {
  const std::string text = formatSchedule(s);
  const std::string head = "rank " + std::to_string(rank) + ":";
  const size_t at = text.find("\n" + head);
  if (at == std::string::npos)
    return "";
  return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

// A table built by hand: steps (action, microbatch) per rank, one chunk.
PipelineSchedule handMade(int p, int m, bool split,
                          std::vector<std::vector<std::pair<PipelineAction, int>>> orders) {
  PipelineSchedule s{ScheduleKind::OneFOneB, ScheduleShape{p, m, 1, 0}, split, {}};
  for (int r = 0; r < p; ++r) {
    std::vector<PipelineStep> order;
    for (auto [action, mb] : orders[r])
      order.push_back({r, static_cast<int>(order.size()), action, mb, 0, r});
    s.perRank.push_back(order);
  }
  return s;
}

constexpr auto F = PipelineAction::Forward;
constexpr auto B = PipelineAction::Backward;
constexpr auto W = PipelineAction::BackwardWeights;

TEST(PipelineSchedule, ParsesEveryNameAndNamesTheKeyOnError) {
  for (ScheduleKind kind : kAllKinds) {
    TRC_ASSERT_OK_AND_ASSIGN(ScheduleKind back, parseScheduleKind(scheduleName(kind)));
    EXPECT_EQ(back, kind);
  }
  EXPECT_EQ(errorOf(parseScheduleKind("interleaved")),
            "key 'pipeline_schedule': expected one of gpipe, 1f1b, interleaved_1f1b, zb_h1, "
            "got 'interleaved'");
  EXPECT_THAT(errorOf(parseScheduleKind("")), HasSubstr("'pipeline_schedule'"));
}

TEST(PipelineSchedule, EveryGeneratedShapeIsCompleteAndDeadlockFree) {
  int checked = 0;
  for (ScheduleKind kind : kAllKinds)
    forEachShape(kind, [&](const ScheduleShape &shape) {
      SCOPED_TRACE(where(kind, shape));
      TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s, makeSchedule(kind, shape));
      ASSERT_TRUE(checkSchedule(s).ok()) << checkSchedule(s).message();
      ASSERT_EQ(static_cast<int>(s.perRank.size()), shape.ranks);
      EXPECT_EQ(s.splitsWeights, kind == ScheduleKind::ZeroBubbleH1);
      const int perRank = shape.microbatches * shape.chunks;
      for (const std::vector<PipelineStep> &order : s.perRank) {
        EXPECT_EQ(countOf(order, F), perRank);
        EXPECT_EQ(countOf(order, B), perRank);
        EXPECT_EQ(countOf(order, W), s.splitsWeights ? perRank : 0);
      }
      ++checked;
    });
  // 4 kinds' shapes: 3 one-chunk kinds x 5 p x 16 m, plus interleaved's
  // m % p == 0 shapes (16 + 8 + 5 + 4 + 2 = 35) x 2 chunk counts.
  EXPECT_EQ(checked, 3 * 5 * 16 + 35 * 2);
}

TEST(PipelineSchedule, ShapeErrorsNameTheKey) {
  auto error = [](ScheduleKind kind, ScheduleShape shape) {
    return errorOf(makeSchedule(kind, shape));
  };
  EXPECT_THAT(error(ScheduleKind::OneFOneB, {0, 4, 1, 0}), HasSubstr("'pipeline_parallel_degree'"));
  EXPECT_THAT(error(ScheduleKind::OneFOneB, {2, 0, 1, 0}), HasSubstr("'microbatches'"));
  EXPECT_THAT(error(ScheduleKind::GPipe, {2, 4, 0, 0}), HasSubstr("'virtual_stages'"));
  EXPECT_THAT(error(ScheduleKind::GPipe, {2, 4, 1, -1}), HasSubstr("'active_microbatches'"));
  EXPECT_THAT(error(ScheduleKind::Interleaved1F1B, {2, 4, 1, 0}),
              AllOf(HasSubstr("'virtual_stages'"), HasSubstr("at least 2")));
  EXPECT_THAT(error(ScheduleKind::ZeroBubbleH1, {2, 4, 2, 0}),
              AllOf(HasSubstr("'virtual_stages'"), HasSubstr("interleaved_1f1b")));
  EXPECT_EQ(error(ScheduleKind::Interleaved1F1B, {4, 6, 2, 0}),
            "key 'microbatches': interleaved_1f1b runs microbatches in groups of one per "
            "pipeline rank (Megatron's rule), so 6 microbatches must be a multiple of the 4 "
            "ranks");
}

TEST(PipelineSchedule, OneFOneBOrderIsMegatrons) {
  TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s, makeSchedule(ScheduleKind::OneFOneB, {3, 5, 1, 0}));
  EXPECT_EQ(compactLine(s, 0), "rank 0: F0 F1 F2 B0 F3 B1 F4 B2 B3 B4");
  EXPECT_EQ(compactLine(s, 1), "rank 1: F0 F1 B0 F2 B1 F3 B2 F4 B3 B4");
  EXPECT_EQ(compactLine(s, 2), "rank 2: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4");
}

TEST(PipelineSchedule, GPipeRunsEveryForwardFirstUnlessCapped) {
  TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s, makeSchedule(ScheduleKind::GPipe, {2, 4, 1, 0}));
  EXPECT_EQ(compactLine(s, 0), "rank 0: F0 F1 F2 F3 B0 B1 B2 B3");
  EXPECT_EQ(compactLine(s, 1), "rank 1: F0 F1 F2 F3 B0 B1 B2 B3");
  TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule capped,
                           makeSchedule(ScheduleKind::GPipe, {2, 4, 1, 2}));
  EXPECT_EQ(compactLine(capped, 1), "rank 1: F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_TRUE(checkSchedule(capped).ok()) << checkSchedule(capped).message();
}

// p = 2, v = 2, m = 4: rank 0 warms up with (2-0-1)*2 + (2-1)*2 = 4 forwards
// (chunk 0 of microbatches 0, 1, then chunk 1 of them), rank 1 with 2;
// backwards visit chunk 1 before chunk 0.
TEST(PipelineSchedule, InterleavedOrderIsMegatrons) {
  TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s,
                           makeSchedule(ScheduleKind::Interleaved1F1B, {2, 4, 2, 0}));
  EXPECT_EQ(compactLine(s, 0), "rank 0: F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 "
                               "F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  EXPECT_EQ(compactLine(s, 1), "rank 1: F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 "
                               "F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  EXPECT_EQ(s.perRank[1][2].stage, 3); // chunk 1 of rank 1 is stage 1 * 2 + 1
}

// Rank r holds back its first r W's; the last rank drains p-1 W's at the end.
TEST(PipelineSchedule, ZeroBubbleH1DefersWeightGradients) {
  TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s,
                           makeSchedule(ScheduleKind::ZeroBubbleH1, {3, 4, 1, 0}));
  EXPECT_EQ(compactLine(s, 0), "rank 0: F0 F1 F2 B0 W0 F3 B1 W1 B2 W2 B3 W3");
  EXPECT_EQ(compactLine(s, 1), "rank 1: F0 F1 B0 F2 B1 W0 F3 B2 W1 B3 W2 W3");
  EXPECT_EQ(compactLine(s, 2), "rank 2: F0 B0 F1 B1 F2 B2 W0 F3 B3 W1 W2 W3");
}

// Bubble = idle / busy (the research table's, relative to ideal compute)
// and idle / (p * makespan); F = 1, B = 2 makes a 1F1B step 3 long.
TEST(PipelineSchedule, GPipeAndOneFOneBBubblesMatchTheFormulaExactly) {
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    forEachShape(kind, [&](const ScheduleShape &shape) {
      SCOPED_TRACE(where(kind, shape));
      TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s, makeSchedule(kind, shape));
      TRC_ASSERT_OK_AND_ASSIGN(SimulatedPipeline sim, simulateSchedule(s, {1, 2, 0, 0}));
      const double p = shape.ranks, m = shape.microbatches;
      EXPECT_DOUBLE_EQ(sim.makespan, 3 * (m + p - 1));
      EXPECT_NEAR(sim.bubbleFraction, bubbleFormula(kind, shape), 1e-12);
      EXPECT_NEAR(sim.bubbleFraction, (p - 1) / m, 1e-12);
      EXPECT_NEAR(sim.idleShare, (p - 1) / (m + p - 1), 1e-12);
      for (int r = 0; r < shape.ranks; ++r) {
        EXPECT_DOUBLE_EQ(sim.busy[r], 3 * m);
        EXPECT_DOUBLE_EQ(sim.idle[r], 3 * (p - 1));
      }
    });
}

// The same costs for every kind: F = 1, backward = 2 of which W = 1 (a
// split schedule runs B = 1 and W = 1).
TEST(PipelineSchedule, ZeroBubbleH1BeatsOneFOneBAndMeetsThePaperWhenMAtLeastP) {
  const ActionCosts costs{1, 2, 1, 0};
  forEachShape(ScheduleKind::ZeroBubbleH1, [&](const ScheduleShape &shape) {
    SCOPED_TRACE(where(ScheduleKind::ZeroBubbleH1, shape));
    TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule zb, makeSchedule(ScheduleKind::ZeroBubbleH1, shape));
    TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule ofob, makeSchedule(ScheduleKind::OneFOneB, shape));
    TRC_ASSERT_OK_AND_ASSIGN(SimulatedPipeline z, simulateSchedule(zb, costs));
    TRC_ASSERT_OK_AND_ASSIGN(SimulatedPipeline o, simulateSchedule(ofob, costs));
    EXPECT_DOUBLE_EQ(z.busy[0], o.busy[0]); // the same work
    if (shape.ranks == 1) {
      EXPECT_EQ(z.bubbleFraction, 0);
      return;
    }
    EXPECT_LT(z.bubbleFraction, o.bubbleFraction);
    EXPECT_LT(z.makespan, o.makespan);
    const double p = shape.ranks, m = shape.microbatches;
    if (m >= p) {
      EXPECT_NEAR(z.bubbleFraction, bubbleFormula(ScheduleKind::ZeroBubbleH1, shape), 1e-12);
    } else { // too few W's to fill the tail: p - m more idle steps per rank
      EXPECT_NEAR(z.bubbleFraction, (p - 1 + p - m) / (3 * m), 1e-12);
    }
  });
}

// Costs are per chunk (F = 1, B = 2 for a 1/v slice of the stage); with m a
// multiple of p and no p2p time the replay meets (p-1)/(v m) exactly.
TEST(PipelineSchedule, InterleavedBubbleMatchesTheFormula) {
  forEachShape(ScheduleKind::Interleaved1F1B, [&](const ScheduleShape &shape) {
    SCOPED_TRACE(where(ScheduleKind::Interleaved1F1B, shape));
    TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s,
                             makeSchedule(ScheduleKind::Interleaved1F1B, shape));
    TRC_ASSERT_OK_AND_ASSIGN(SimulatedPipeline sim, simulateSchedule(s, {1, 2, 0, 0}));
    const double p = shape.ranks, vm = shape.chunks * shape.microbatches;
    EXPECT_NEAR(sim.bubbleFraction, bubbleFormula(ScheduleKind::Interleaved1F1B, shape), 1e-12);
    EXPECT_NEAR(sim.bubbleFraction, (p - 1) / vm, 1e-12);
    EXPECT_NEAR(sim.idleShare, (p - 1) / (vm + p - 1), 1e-12);
    if (shape.ranks > 1) { // strictly better than 1F1B's (p-1)/m
      EXPECT_LT(sim.bubbleFraction, (p - 1) / shape.microbatches);
    }
  });
}

TEST(PipelineSchedule, PeakInFlightPerKind) {
  for (ScheduleKind kind : kAllKinds)
    forEachShape(kind, [&](const ScheduleShape &shape) {
      SCOPED_TRACE(where(kind, shape));
      TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s, makeSchedule(kind, shape));
      const std::vector<int> peaks = peakInFlight(s);
      const int p = shape.ranks, m = shape.microbatches, v = shape.chunks;
      for (int r = 0; r < p; ++r) {
        switch (kind) {
        case ScheduleKind::GPipe:
          EXPECT_EQ(peaks[r], m);
          break;
        case ScheduleKind::OneFOneB:
          EXPECT_EQ(peaks[r], std::min(p - r, m));
          break;
        case ScheduleKind::ZeroBubbleH1: // 1F1B's rank-0 peak, on every rank
          EXPECT_EQ(peaks[r], std::min(p, m));
          break;
        case ScheduleKind::Interleaved1F1B: // warm-up + 1 (chunk, microbatch) pairs
          EXPECT_EQ(peaks[r], std::min((p - r - 1) * 2 + (v - 1) * p + 1, m * v));
          break;
        }
      }
    });
}

TEST(PipelineSchedule, CapsAreHonouredOrRefusedByName) {
  // GPipe: at most `cap` ahead; 1F1B: a shorter warm-up. Both still check.
  for (int cap = 1; cap <= 4; ++cap) {
    SCOPED_TRACE("cap " + std::to_string(cap));
    TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule g, makeSchedule(ScheduleKind::GPipe, {4, 8, 1, cap}));
    TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule o,
                             makeSchedule(ScheduleKind::OneFOneB, {4, 8, 1, cap}));
    EXPECT_TRUE(checkSchedule(g).ok()) << checkSchedule(g).message();
    EXPECT_TRUE(checkSchedule(o).ok()) << checkSchedule(o).message();
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(peakInFlight(g)[r], cap);
      EXPECT_EQ(peakInFlight(o)[r], std::min(4 - r, cap));
    }
  }
  // A cap costs throughput: GPipe capped at 1 runs one microbatch at a time.
  TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule serial,
                           makeSchedule(ScheduleKind::GPipe, {4, 8, 1, 1}));
  TRC_ASSERT_OK_AND_ASSIGN(SimulatedPipeline sim, simulateSchedule(serial, {1, 2, 0, 0}));
  EXPECT_DOUBLE_EQ(sim.makespan, 8 * 4 * 3);

  EXPECT_EQ(errorOf(makeSchedule(ScheduleKind::ZeroBubbleH1, {4, 8, 1, 3})),
            "key 'active_microbatches': zb_h1 keeps 4 microbatches in flight on rank 0, above "
            "the cap of 3 (gpipe and 1f1b adapt to a lower cap)");
  EXPECT_THAT(errorOf(makeSchedule(ScheduleKind::Interleaved1F1B, {4, 8, 2, 8})),
              AllOf(HasSubstr("'active_microbatches'"), HasSubstr("11 (chunk, microbatch) pairs")));
  EXPECT_TRUE(makeSchedule(ScheduleKind::ZeroBubbleH1, {4, 8, 1, 4}).ok());
}

TEST(PipelineSchedule, CheckReportsATableAboveItsCap) {
  TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s, makeSchedule(ScheduleKind::GPipe, {2, 4, 1, 0}));
  s.shape.activeMicrobatches = 2;
  EXPECT_EQ(errorOf(checkSchedule(s)), "pipeline schedule: rank 0 has 3 microbatches in flight "
                                       "at slot 2 (F mb 2 chunk 0), above active_microbatches = 2");
}

// Two ranks each receiving first: rank 0 (1F1B) waits for rank 1's gradient
// of microbatch 0 before sending microbatch 1's activation, which rank 1
// (GPipe) waits for before it runs microbatch 0's backward. Messages between
// them keep their order, so only the replay finds it.
TEST(PipelineSchedule, CheckNamesTheRanksOfADeadlock) {
  PipelineSchedule s = handMade(2, 2, false, {{{F, 0}, {B, 0}, {F, 1}, {B, 1}},
                                              {{F, 0}, {F, 1}, {B, 0}, {B, 1}}});
  const std::string expected =
      "pipeline schedule 1f1b: deadlock: rank 0 waits at slot 1 (B mb 0 chunk 0) for B of "
      "stage 1 mb 0 on rank 1, which waits at slot 1 (F mb 1 chunk 0) for F of stage 0 mb 1 on "
      "rank 0 (a cycle)";
  EXPECT_EQ(errorOf(checkSchedule(s)), expected);
  EXPECT_EQ(errorOf(simulateSchedule(s, {})), expected);
}

TEST(PipelineSchedule, CheckNamesARankWaitingOnItsOwnLaterAction) {
  // W before its B on the same rank; rank 0 then waits on rank 1 (stuck as above).
  PipelineSchedule s =
      handMade(2, 1, true, {{{F, 0}, {B, 0}, {W, 0}}, {{F, 0}, {W, 0}, {B, 0}}});
  EXPECT_EQ(errorOf(checkSchedule(s)),
            "pipeline schedule 1f1b: deadlock: rank 0 waits at slot 1 (B mb 0 chunk 0) for B of "
            "stage 1 mb 0 on rank 1, which waits at slot 1 (W mb 0 chunk 0) for B of stage 1 mb "
            "0 on rank 1 itself (its slot 2, later in its order)");
}

// No deadlock with tagged messages, but send/recv match in order: rank 1
// would take microbatch 0's activation for microbatch 1's.
TEST(PipelineSchedule, CheckReportsMessagesReceivedOutOfOrder) {
  PipelineSchedule s = handMade(2, 2, false, {{{F, 0}, {F, 1}, {B, 0}, {B, 1}},
                                              {{F, 1}, {B, 1}, {F, 0}, {B, 0}}});
  EXPECT_EQ(errorOf(checkSchedule(s)),
            "pipeline schedule 1f1b: rank 0's 1st message to rank 1 is F of stage 0 mb 0 (its "
            "slot 0), but rank 1 receives F of stage 0 mb 1 1st (its slot 0): between two ranks, "
            "messages are received in the order they are sent");
}

TEST(PipelineSchedule, TransfersFollowTheStageLayout) {
  const ScheduleShape shape{2, 4, 2, 0}; // rank 0: stages 0, 2; rank 1: stages 1, 3
  auto transfers = [&](PipelineAction action, int rank, int chunk) {
    const StepTransfers t = transfersOf(shape, {rank, 0, action, 0, chunk, chunk * 2 + rank});
    return std::make_pair(t.receiveFrom, t.sendTo);
  };
  EXPECT_EQ(transfers(F, 0, 0), std::make_pair(-1, 1)); // stage 0: input from the data
  EXPECT_EQ(transfers(F, 1, 0), std::make_pair(0, 0));  // stage 1 -> stage 2 on rank 0
  EXPECT_EQ(transfers(F, 1, 1), std::make_pair(0, -1)); // stage 3: the loss
  EXPECT_EQ(transfers(B, 1, 1), std::make_pair(-1, 0));
  EXPECT_EQ(transfers(B, 0, 0), std::make_pair(1, -1));
  EXPECT_EQ(transfers(W, 0, 1), std::make_pair(-1, -1));
  // One rank, two chunks: the hand-over stays on rank 0.
  const StepTransfers local = transfersOf({1, 1, 2, 0}, {0, 0, F, 0, 1, 1});
  EXPECT_EQ(local.receiveFrom, 0);
  EXPECT_EQ(local.sendTo, -1);
}

// The same table without rank 1's B of microbatch 1.
TEST(PipelineSchedule, CheckReportsAMissingOrRepeatedAction) {
  TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s, makeSchedule(ScheduleKind::OneFOneB, {2, 2, 1, 0}));
  ASSERT_EQ(compactLine(s, 1), "rank 1: F0 B0 F1 B1");
  PipelineSchedule missing = s;
  missing.perRank[1].pop_back();
  EXPECT_EQ(errorOf(checkSchedule(missing)),
            "pipeline schedule: B of stage 1 mb 1 is missing (rank 1 owns the stage)");

  PipelineSchedule repeated = s;
  repeated.perRank[1][3].microbatch = 0;
  EXPECT_EQ(errorOf(checkSchedule(repeated)),
            "pipeline schedule: rank 1 slot 3: B mb 0 chunk 0 repeats B of stage 1 mb 0 (first "
            "at slot 1)");

  PipelineSchedule wrongStage = s;
  wrongStage.perRank[0][0].stage = 1;
  EXPECT_THAT(errorOf(checkSchedule(wrongStage)), HasSubstr("rank 0 slot 0: stage 1 is not"));

  PipelineSchedule weights = s;
  weights.perRank[0][0].action = W;
  EXPECT_THAT(errorOf(checkSchedule(weights)), HasSubstr("does not split weights"));

  PipelineSchedule fewerRanks = s;
  fewerRanks.perRank.pop_back();
  EXPECT_THAT(errorOf(checkSchedule(fewerRanks)), HasSubstr("orders for 1 ranks"));

  PipelineSchedule badShape = s;
  badShape.shape.microbatches = 0;
  EXPECT_THAT(errorOf(checkSchedule(badShape)), HasSubstr("must be >= 1"));
}

TEST(PipelineSchedule, SimulationAddsP2pAndRejectsBadCosts) {
  TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s, makeSchedule(ScheduleKind::OneFOneB, {2, 1, 1, 0}));
  // F on rank 0, transfer, F and B on rank 1, transfer, B on rank 0.
  TRC_ASSERT_OK_AND_ASSIGN(SimulatedPipeline sim, simulateSchedule(s, {1, 2, 0, 0.5}));
  EXPECT_DOUBLE_EQ(sim.makespan, 1 + 0.5 + 1 + 2 + 0.5 + 2);
  EXPECT_DOUBLE_EQ(sim.idle[1], sim.makespan - 3);
  EXPECT_THAT(errorOf(simulateSchedule(s, {1, 2, 3, 0})), HasSubstr("cannot exceed"));
  EXPECT_THAT(errorOf(simulateSchedule(s, {-1, 2, 0, 0})), HasSubstr(">= 0"));
}

TEST(PipelineSchedule, FormatPrintsTheTableAndOneLinePerRank) {
  TRC_ASSERT_OK_AND_ASSIGN(PipelineSchedule s, makeSchedule(ScheduleKind::OneFOneB, {2, 2, 1, 0}));
  EXPECT_EQ(formatSchedule(s), "pipeline schedule 1f1b: 2 ranks, 2 microbatches, 1 chunk per "
                               "rank, 2 stages\n"
                               "rank slot action microbatch chunk stage\n"
                               "   0    0      F          0     0     0\n"
                               "   0    1      F          1     0     0\n"
                               "   0    2      B          0     0     0\n"
                               "   0    3      B          1     0     0\n"
                               "   1    0      F          0     0     1\n"
                               "   1    1      B          0     0     1\n"
                               "   1    2      F          1     0     1\n"
                               "   1    3      B          1     0     1\n"
                               "rank 0: F0 F1 B0 B1\n"
                               "rank 1: F0 B0 F1 B1\n");
}

} // namespace
} // namespace trc::rt
