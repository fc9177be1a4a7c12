//===- RespecializeTest.cpp - re-deriving a static export's shape constants -===//
//
// The rules of lib/Import/Respecialize.h on the cases exporters produce: a
// Reshape that splits or merges the batch, heads equal to the batch, a
// causal-mask buffer's slice, an Expand of a mask to the batch beside one
// that repeats key/value heads, positions and token types, and the steps
// from traced to requested sizes.
//
//===----------------------------------------------------------------------===//
#include "Respecialize.h"

#include <gtest/gtest.h>

using namespace trc::import;
using Ints = llvm::SmallVector<int64_t>;

namespace {

std::optional<Ints> derive(ShapeOperand kind, Ints values, Ints traced, Ints now,
                           RetraceStep step, Ints axes = {}, bool buffer = false) {
  std::string why;
  TracedOperand operand{values, values, traced};
  auto out = rederive(kind, operand, now, step, axes, /*allowZero=*/false, buffer, why);
  if (!out)
    EXPECT_FALSE(why.empty());
  return out;
}

TEST(Respecialize, ReshapeFollowsTheBatchWhereHeadsEqualIt) {
  // [8, 128, 256] -> [8, 128, 8, 32] at batch 4: the heads (8) stay.
  EXPECT_EQ(derive(ShapeOperand::ReshapeTarget, {8, 128, 8, 32}, {8, 128, 256}, {4, 128, 256},
                   {8, 4}),
            Ints({4, 128, 8, 32}));
  // Merged [b*h, T, d] split back: the outermost equal entry is the batch.
  EXPECT_EQ(derive(ShapeOperand::ReshapeTarget, {8, 8, 128, 32}, {64, 128, 32}, {32, 128, 32},
                   {8, 4}),
            Ints({4, 8, 128, 32}));
}

TEST(Respecialize, ReshapeMergesAndSplitsBatchAndSequence) {
  // [B*T] -> [B, T]: the batch step scales the outer entry, the sequence
  // step the one the traced sequence divides.
  EXPECT_EQ(derive(ShapeOperand::ReshapeTarget, {2, 16}, {32}, {64}, {2, 4}), Ints({4, 16}));
  EXPECT_EQ(derive(ShapeOperand::ReshapeTarget, {2, 16}, {32}, {16}, {16, 8}), Ints({2, 8}));
  // -1 and 0 resolve at the traced sizes; the result is explicit.
  EXPECT_EQ(derive(ShapeOperand::ReshapeTarget, {-1, 64}, {2, 16, 64}, {4, 16, 64}, {2, 4}),
            Ints({64, 64}));
  EXPECT_EQ(derive(ShapeOperand::ReshapeTarget, {0, 0, 4, 16}, {2, 16, 64}, {4, 16, 64}, {2, 4}),
            Ints({4, 16, 4, 16}));
  // A traced batch of 1 beside a split: the unit entry is the batch.
  EXPECT_EQ(derive(ShapeOperand::ReshapeTarget, {1, 16, 64}, {16, 64}, {48, 64}, {1, 3}),
            Ints({3, 16, 64}));
  // Unchanged data keeps its target.
  EXPECT_EQ(derive(ShapeOperand::ReshapeTarget, {4, 8}, {32}, {32}, {2, 4}), Ints({4, 8}));
}

TEST(Respecialize, ReshapeWithoutAnEntryToScaleIsRefused) {
  // [6] -> [2, 3] with data now 7 elements: no entry scales by 7/6.
  EXPECT_FALSE(derive(ShapeOperand::ReshapeTarget, {2, 3}, {6}, {7}, {6, 7}));
  // ... and 10 elements: the 3 becomes 5.
  EXPECT_EQ(derive(ShapeOperand::ReshapeTarget, {2, 3}, {6}, {10}, {6, 10}), Ints({2, 5}));
}

TEST(Respecialize, ExpandGainsTheBatchOnceAndOnlyWithoutIt) {
  // A [1, 1, T, T] mask expanded to the batch: the outermost entry follows.
  EXPECT_EQ(derive(ShapeOperand::ExpandTarget, {2, 2, 16, 16}, {1, 1, 16, 16}, {1, 1, 16, 16},
                   {2, 4}),
            Ints({4, 2, 16, 16}));
  // Key/value heads repeated n_rep = 2 = the traced batch: the data has the
  // batch already; only its own dimension follows.
  EXPECT_EQ(derive(ShapeOperand::ExpandTarget, {2, 2, 2, 16, 8}, {2, 2, 1, 16, 8},
                   {4, 2, 1, 16, 8}, {2, 4}),
            Ints({4, 2, 2, 16, 8}));
  // A unit dimension that changed (a traced batch of 1) while the Expand
  // broadcast it to another size cannot be re-derived.
  EXPECT_FALSE(derive(ShapeOperand::ExpandTarget, {6}, {1}, {3}, {1, 3}));
}

TEST(Respecialize, SliceOfABufferFollowsTheSequenceOfDataItsEnd) {
  // bias[:, :, :16] of a [1, 1, 64, 64] buffer at 8 positions.
  EXPECT_EQ(derive(ShapeOperand::SliceEnds, {16}, {1, 1, 64, 64}, {1, 1, 64, 64}, {16, 8}, {2},
                   /*buffer=*/true),
            Ints({8}));
  // The same bound on activations (a rotary half that equals the batch) stays.
  EXPECT_EQ(derive(ShapeOperand::SliceEnds, {4}, {4, 16, 8}, {2, 16, 8}, {4, 2}, {2}),
            Ints({4}));
  // x[:, :-1] traced as T-1 follows the sequence; a fixed prefix stays.
  EXPECT_EQ(derive(ShapeOperand::SliceEnds, {15, 3}, {2, 16, 8}, {2, 32, 8}, {16, 32}, {1, 2}),
            Ints({31, 3}));
  // More than the buffer holds: refused.
  EXPECT_FALSE(derive(ShapeOperand::SliceEnds, {16}, {64, 64}, {64, 64}, {16, 128}, {0},
                      /*buffer=*/true));
}

TEST(Respecialize, FillsOfRowsFollowTheBatchOnce) {
  // ConstantOfShape [4, 16] (a mask of ones) at batch 2; [4, 4] scales once.
  EXPECT_EQ(derive(ShapeOperand::FillShape, {4, 16}, {2}, {2}, {4, 2}), Ints({2, 16}));
  EXPECT_EQ(derive(ShapeOperand::FillShape, {4, 4}, {2}, {2}, {4, 8}), Ints({8, 4}));
  // A 1-D fill may be a shape's length (rank 2 = the traced batch): left alone.
  EXPECT_EQ(derive(ShapeOperand::FillShape, {2}, {1}, {1}, {2, 4}), Ints({2}));
}

TEST(Respecialize, TileGainsTheBatchOnlyWithoutIt) {
  EXPECT_EQ(derive(ShapeOperand::TileRepeats, {2, 1}, {1, 16}, {1, 16}, {2, 4}), Ints({4, 1}));
  EXPECT_EQ(derive(ShapeOperand::TileRepeats, {1, 2}, {2, 8}, {4, 8}, {2, 4}), Ints({1, 2}));
}

TEST(Respecialize, PositionsContinueAndTokenTypesRepeat) {
  Ints values, shape;
  TracedOperand positions{{}, {0, 1, 2, 3}, {1, 4}};
  rederiveIndices(positions, {4, 6}, values, shape);
  EXPECT_EQ(shape, Ints({1, 6}));
  EXPECT_EQ(values, Ints({0, 1, 2, 3, 4, 5}));
  TracedOperand types{{}, {0, 1, 0, 1}, {2, 2}};
  rederiveIndices(types, {2, 3}, values, shape);
  EXPECT_EQ(shape, Ints({3, 2}));
  EXPECT_EQ(values, Ints({0, 1, 0, 1, 0, 1}));
  // Neither repeating nor counting: unchanged.
  TracedOperand other{{}, {3, 1}, {2}};
  rederiveIndices(other, {2, 4}, values, shape);
  EXPECT_EQ(shape, Ints({2}));
}

TEST(Respecialize, OneStepPerChangedSize) {
  auto steps = planRetrace({{{8, 128}, {4, 64}}, {{8, 128}, {4, 64}}});
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].traced, 8);
  EXPECT_EQ(steps[0].size, 4);
  EXPECT_EQ(steps[1].traced, 128);
  EXPECT_EQ(steps[1].size, 64);
  EXPECT_TRUE(planRetrace({{{2, 16}, {2, 16}}}).empty());
}

} // namespace
