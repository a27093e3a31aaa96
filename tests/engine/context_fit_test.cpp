// The history a turn carries and the cut mark, on its own (context_fit.h).
#include "internal/engine/context_fit.h"

#include <gtest/gtest.h>

#include "internal/engine/level_compressor.h"
#include "tests/engine/context_steps_fixture.h"

namespace autonous::engine {
namespace {

class ContextFitTest : public ::testing::Test {
 protected:
  // 20 messages of 20 tokens, message 10 oversized.
  Fitted fit(const Cut& cut, const ContextState& before, int64_t fixed = 300) const {
    return fit_history(compressor_, v_, cut, steps::ends_of(fixed), 0, before, 0.6);
  }
  tokens::CharsOver4Counter counter_{0, 0};
  LevelCompressor compressor_{counter_};
  Verbatim v_ = steps::verbatim_of(20, 80, 10, 4000, counter_);
};

TEST_F(ContextFitTest, ACompactionThatMovedTheStartCutsWhatItKeptAndMovesTheMarkToTheNewest) {
  const Fitted f = fit({4, CompactionReason::kThreshold, Level::kAggressive}, {});
  EXPECT_EQ(f.cut_through, 20);
  EXPECT_EQ(f.compression.messages.size(), 16u);
  EXPECT_EQ(f.compression.cut_count, 1);  // message 10
  EXPECT_EQ(f.compression.dropped_count, 0);
}

TEST_F(ContextFitTest, BetweenCompactionsWhatIsCutFollowsTheMarkAlone) {
  // After a window compaction, message 10 newer than the mark stays whole ...
  const ContextState below{.last_reason = CompactionReason::kWindow, .cut_through = 5};
  Fitted f = fit({}, below);
  EXPECT_EQ(f.cut_through, 5);
  EXPECT_EQ(f.compression.cut_count, 0);
  // ... and older than the mark it is cut; nothing moves either way.
  const ContextState above{.last_reason = CompactionReason::kWindow, .cut_through = 12};
  f = fit({}, above);
  EXPECT_EQ(f.cut_through, 12);
  EXPECT_EQ(f.compression.cut_count, 1);
  // After one for tokens every oversized message is cut, the mark where it was.
  f = fit({}, {.last_reason = CompactionReason::kThreshold, .cut_through = 3});
  EXPECT_EQ(f.cut_through, 3);
  EXPECT_EQ(f.compression.cut_count, 1);
}

TEST_F(ContextFitTest, AWindowCompactionWhoseFoldKeptEverythingMovesNoMark) {
  const Fitted f = fit({0, CompactionReason::kWindow, Level::kNone},
                       {.last_reason = CompactionReason::kWindow, .cut_through = 5});
  EXPECT_EQ(f.cut_through, 5);
  EXPECT_EQ(f.compression.cut_count, 0);
}

TEST_F(ContextFitTest, ACompactionForTokensThatCuttingAloneMeetsMovesTheMark) {
  const Fitted f = fit({0, CompactionReason::kThreshold, Level::kAggressive},
                       {.last_reason = CompactionReason::kWindow, .cut_through = 5});
  EXPECT_EQ(f.cut_through, 20);
  EXPECT_EQ(f.compression.cut_count, 1);
}

TEST_F(ContextFitTest, OverTheBudgetEveryOversizedMessageIsCutBeforeAnythingIsDropped) {
  // 500 tokens for history: 19 × 20 + message 10 whole do not fit, with it cut they do.
  const Fitted f = fit({}, {.last_reason = CompactionReason::kWindow, .cut_through = 5}, 500);
  EXPECT_EQ(f.compression.dropped_count, 0);
  EXPECT_EQ(f.compression.cut_count, 1);
  EXPECT_LE(f.compression.tokens, 500);
  EXPECT_EQ(f.cut_through, 20);  // the mark follows: the next turns carry the same
}

}  // namespace
}  // namespace autonous::engine
