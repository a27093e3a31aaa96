// Summarize's fold, on its own (context_fold.h).
#include "internal/engine/context_fold.h"

#include <string>

#include <gtest/gtest.h>

#include "tests/engine/context_steps_fixture.h"
#include "tests/engine/memory_summary_store.h"

namespace autonous::engine {
namespace {

// Answers "F: <ids>" or fails on demand; counts its calls.
class FoldStepSummarizer final : public Summarizer {
 public:
  SummaryCall summarize(const std::string& /*previous*/,
                        const std::vector<common::Message>& evicted) override {
    ++calls;
    if (fail || (fail_from_call > 0 && calls >= fail_from_call))
      throw SummaryFailure("summarizer down");
    std::string text = "F:";
    for (const auto& m : evicted) text += " " + std::to_string(m.history_id);
    return {text, "m", std::nullopt, std::chrono::milliseconds(1)};
  }
  int64_t input_budget() const override { return budget; }
  int calls = 0;
  bool fail = false;
  int fail_from_call = 0;  // > 0: this call and every later one fail
  int64_t budget = 100'000;
};

class ContextFoldTest : public ::testing::Test {
 protected:
  ContextFoldTest() {
    settings_.summary.max_tokens = 100;
    provider_.history = v_.rows.messages;
  }
  FoldStep fold(const ContextState& state, bool dry_run = false, size_t first = 4) {
    return fold_leaving({store_, without_summarizer_ ? nullptr : &summarizer_, settings_, counter_},
                        "c", 0, v_, {first, CompactionReason::kWindow, Level::kNone}, state,
                        dry_run);
  }
  bool without_summarizer_ = false;
  tokens::CharsOver4Counter counter_{0, 0};
  Verbatim v_ = steps::verbatim_of(10, 40, 0, 0, counter_);
  VectorProvider provider_;
  MemorySummaryStore store_{provider_};
  FoldStepSummarizer summarizer_;
  ContextSettings settings_;
};

TEST_F(ContextFoldTest, ADryRunOnlyCountsWhatWouldBeFolded) {
  const FoldStep f = fold({}, /*dry_run=*/true);
  EXPECT_EQ(f.pending, 4);
  EXPECT_EQ(f.first, 4u);
  EXPECT_FALSE(f.summary);
  EXPECT_EQ(summarizer_.calls, 0);
  EXPECT_TRUE(store_.rows.empty());
}

TEST_F(ContextFoldTest, WithoutASummarizerItOnlyCountsWhatWouldBeFolded) {
  without_summarizer_ = true;
  const FoldStep f = fold({.summary_failures = 1, .summary_skips = 0});
  EXPECT_EQ(f.pending, 4);
  EXPECT_EQ(f.first, 4u);
  EXPECT_EQ(f.summary_failures, 1);
  EXPECT_FALSE(f.summary);
  EXPECT_TRUE(store_.rows.empty());
}

TEST_F(ContextFoldTest, AFoldThatFailsHalfWayStoresWhatWasFoldedAndKeepsTheRestVerbatim) {
  summarizer_.budget = 40;  // a call takes about two of these messages
  summarizer_.fail_from_call = 2;
  const FoldStep f = fold({}, false, 8);
  ASSERT_TRUE(f.summary);
  ASSERT_TRUE(f.summarized);
  const int64_t through = f.summary->covers_through;
  EXPECT_GT(through, 0);
  EXPECT_LT(through, 8);
  // The verbatim part restarts at the first user message after what the summary covers; a reply
  // it stopped before leaves with its question, counted as skipped.
  EXPECT_EQ(f.first, user_start(v_.rows.messages, static_cast<size_t>(through)));
  EXPECT_EQ(f.summarized->skipped, static_cast<int64_t>(f.first) - through);
  EXPECT_EQ(f.summary_failures, 1);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_EQ(f.warnings[0].reason, "summary_failed");
}

TEST_F(ContextFoldTest, RowsTheTurnNeverReadAreCountedAsSkipped) {
  // Three older rows since the last compaction went unread (the read window was full).
  for (common::Message& m : v_.rows.messages) m.history_id += 3;
  provider_.history = v_.rows.messages;
  for (int64_t id = 3; id >= 1; --id)
    provider_.history.insert(provider_.history.begin(),
                             common::Message(common::Role::kUser, "old", id));
  v_.full = true;
  const FoldStep f = fold({});
  ASSERT_TRUE(f.summarized);
  EXPECT_EQ(f.summarized->messages_covered, 4);
  EXPECT_EQ(f.summarized->skipped, 3);
  EXPECT_EQ(f.summary->covers_through, 7);
}

TEST_F(ContextFoldTest, FoldingStoresTheSummaryOfWhatLeavesAndClearsTheFailures) {
  const FoldStep f = fold({.summary_failures = 2});
  ASSERT_TRUE(f.summary);
  EXPECT_EQ(f.summary->covers_through, 4);
  EXPECT_NE(f.summary->text.find("F: 1 2 3 4"), std::string::npos);
  ASSERT_TRUE(f.summarized);
  EXPECT_EQ(f.summarized->messages_covered, 4);
  EXPECT_EQ(f.summarized->skipped, 0);
  EXPECT_EQ(f.first, 4u);
  EXPECT_EQ(f.summary_failures, 0);
  EXPECT_EQ(store_.rows.size(), 1u);
  EXPECT_TRUE(f.warnings.empty());
}

TEST_F(ContextFoldTest, AFailedCallKeepsWhatLeavesVerbatimAndBacksOffTwiceAsLongEachTime) {
  summarizer_.fail = true;
  FoldStep f = fold({});
  EXPECT_EQ(f.first, 0u);  // everything stays: nothing lost
  EXPECT_FALSE(f.summary);
  EXPECT_EQ(f.summary_failures, 1);
  EXPECT_EQ(f.summary_skips, 0);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_EQ(f.warnings[0].reason, "summary_failed");
  f = fold({.summary_failures = 1});
  EXPECT_EQ(f.summary_failures, 2);
  EXPECT_EQ(f.summary_skips, 1);
  f = fold({.summary_failures = 9});
  EXPECT_EQ(f.summary_skips, 15);  // at most
}

TEST_F(ContextFoldTest, DuringABackOffTheCompactionDropsWithAWarningAndCountsDown) {
  const FoldStep f = fold({.summary_failures = 3, .summary_skips = 3});
  EXPECT_EQ(summarizer_.calls, 0);
  EXPECT_EQ(f.first, 4u);
  EXPECT_EQ(f.summary_skips, 2);
  EXPECT_EQ(f.summary_failures, 3);
  ASSERT_EQ(f.warnings.size(), 1u);
  EXPECT_EQ(f.warnings[0].reason, "summary_backoff");
}

TEST_F(ContextFoldTest, PastTheReadWindowWhatAFailureLeftUnfoldedIsDroppedAndCounted) {
  summarizer_.fail = true;
  v_.full = true;  // older rows went unread: keeping these verbatim would slide the read
  const FoldStep f = fold({});
  EXPECT_EQ(f.first, 4u);
  EXPECT_FALSE(f.summary);
  EXPECT_EQ(f.summary_failures, 1);
}

}  // namespace
}  // namespace autonous::engine
