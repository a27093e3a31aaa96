// Whether a turn compacts and where it cuts, on its own (context_cut.h).
#include "internal/engine/context_cut.h"

#include <limits>

#include <gtest/gtest.h>

#include "internal/engine/level_compressor.h"
#include "internal/engine/summary_compactor.h"
#include "tests/engine/context_steps_fixture.h"

namespace autonous::engine {
namespace {

class ContextCutTest : public ::testing::Test {
 protected:
  ContextCutTest() {
    settings_.history_window = 50;
    policy_.max_tokens = steps::kStepBudget;
  }
  // 20 messages of 20 tokens, message 10 oversized (capped at a quarter of the budget as read):
  // 300 fixed tokens and the history carried whole cross warn; with message 10 cut they do not.
  Cut plan(const ContextState& state, int64_t evidence = 0, bool will_fold = false) const {
    const Verbatim v = steps::verbatim_of(20, 80, 10, 4000, counter_);
    CompactionRequest r{
        policy_.thresholds, count_marks(settings_, policy_), state, evidence, false, will_fold,
        settings_.summary};
    return plan_compaction(v, steps::ends_of(300), r, counter_);
  }
  ContextSettings settings_;
  ContextPolicy policy_;
  tokens::CharsOver4Counter counter_{0, 0};
};

TEST_F(ContextCutTest, TheMarkCutsUpToItAfterAWindowCompactionAndEverythingAfterOneForTokens) {
  constexpr int64_t kAll = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(cut_limit(7, CompactionReason::kWindow), 7);
  EXPECT_EQ(cut_limit(7, CompactionReason::kNone), 7);
  EXPECT_EQ(cut_limit(0, CompactionReason::kNone), 0);
  EXPECT_EQ(cut_limit(7, CompactionReason::kThreshold), kAll);
  EXPECT_EQ(cut_limit(7, CompactionReason::kOverflow), kAll);
}

TEST_F(ContextCutTest, TheTriggerCountsAnOversizedMessageAsThePromptCarriesItNow) {
  // Carried cut (the mark covers it, or the last compaction was for tokens): under warn.
  EXPECT_EQ(plan({.last_reason = CompactionReason::kWindow, .cut_through = 20}).reason,
            CompactionReason::kNone);
  EXPECT_EQ(plan({.last_reason = CompactionReason::kThreshold, .cut_through = 3}).reason,
            CompactionReason::kNone);
  // Carried whole (newer than the mark of a window compaction): over warn, a compaction for
  // tokens, planned with the sizes it will carry afterwards.
  const Cut cut = plan({.last_reason = CompactionReason::kWindow, .cut_through = 5});
  EXPECT_EQ(cut.reason, CompactionReason::kThreshold);
  EXPECT_GT(cut.first, 0u);
  EXPECT_EQ(cut.first % 2, 0u);  // onto a user message (odd ids sit at even indexes)
}

TEST_F(ContextCutTest, TheCutIsPlannedWithTheSizesThePromptWillCarry) {
  // Message 10 (index 9) costs about 250 as read and 62 as carried (cut). The goal (0.6 × 1 000
  // − 300 fixed) is 300: with the carried sizes message 10 stays; planned with the read sizes,
  // the cut would have to pass it.
  const Cut cut = plan({.last_reason = CompactionReason::kWindow, .cut_through = 5});
  const Verbatim v = steps::verbatim_of(20, 80, 10, 4000, counter_);
  ASSERT_GT(v.rows.cost[9], 200);
  EXPECT_LT(cut.first, 9u);
  int64_t kept = 0;
  for (size_t i = cut.first; i < v.rows.cost.size(); ++i)
    kept += std::min(v.rows.cost[i], oversized_tokens(steps::kStepBudget));
  EXPECT_LE(kept, 300 + 40);  // the goal, give or take the user message it lands on
}

TEST_F(ContextCutTest, EvidenceTheCompactionCarriesMovesTheCutFurther) {
  const ContextState whole{.last_reason = CompactionReason::kWindow, .cut_through = 5};
  const Cut without = plan(whole, 0);
  const Cut with = plan(whole, 150);
  EXPECT_EQ(with.reason, CompactionReason::kThreshold);
  EXPECT_GT(with.first, without.first);
}

TEST_F(ContextCutTest, AFoldLeavesRoomForANewSummaryAndKeepsItsTailWithinKeepRecentTokens) {
  const ContextState whole{.last_reason = CompactionReason::kWindow, .cut_through = 5};
  settings_.summary.max_tokens = 100;
  const Cut plain = plan(whole);
  const Cut fold = plan(whole, 0, /*will_fold=*/true);
  EXPECT_GT(fold.first, plain.first);
  settings_.summary.keep_recent_tokens = 40;
  EXPECT_GT(plan(whole, 0, true).first, fold.first);
}

TEST_F(ContextCutTest, ASummaryTakesItsOwnSizeOrRoomForAFullNewOneWhenAFoldIsComing) {
  Verbatim v;
  v.summary_tokens = 30;
  EXPECT_EQ(summary_room(v, false, 100, counter_), 30);
  EXPECT_EQ(summary_room(v, true, 100, counter_), summary_block_tokens("", counter_) + 100);
  v.summary_tokens = 500;
  EXPECT_EQ(summary_room(v, true, 100, counter_), 500);
}

}  // namespace
}  // namespace autonous::engine
