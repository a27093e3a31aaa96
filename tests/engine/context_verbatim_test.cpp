// The verbatim part a turn starts from, on its own (context_verbatim.h).
#include "internal/engine/context_verbatim.h"

#include <string>

#include <gtest/gtest.h>

#include "internal/tokens/memo_counter.h"
#include "internal/tokens/token_counter.h"
#include "tests/engine/memory_summary_store.h"
#include "tests/engine/vector_provider.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

class ContextVerbatimTest : public ::testing::Test {
 protected:
  ContextVerbatimTest() {
    for (int64_t id = 1; id <= 10; ++id)
      provider_.history.emplace_back(id % 2 == 1 ? Role::kUser : Role::kAssistant,
                                     "message " + std::to_string(id), id);
    settings_.history_window = 50;
    chat_.policy.max_tokens = 1000;
    ends_.budget_tokens = 1000;
  }
  VerbatimRead read(const ContextState& state) {
    return read_verbatim({provider_, &store_, settings_, counter_}, "c", chat_, state, ends_,
                         count_marks(settings_, chat_.policy));
  }
  static Summary summary(int64_t id, int64_t covers_through, std::string text) {
    Summary s;
    s.id = id;
    s.covers_through = covers_through;
    s.text = std::move(text);
    return s;
  }
  static std::vector<int64_t> ids(const Verbatim& v) {
    std::vector<int64_t> out;
    for (const Message& m : v.rows.messages) out.push_back(m.history_id);
    return out;
  }
  VectorProvider provider_;
  MemorySummaryStore store_{provider_};
  ContextSettings settings_;
  ResolvedChat chat_;
  Ends ends_;
  tokens::CharsOver4Counter counter_{0, 0};
};

// Counts one token per byte and the texts it was asked for.
class Recording final : public tokens::TokenCounter {
 public:
  explicit Recording(std::vector<std::string>& seen) : seen_(seen) {}
  int64_t count_text(std::string_view text) const override {
    seen_.emplace_back(text);
    return static_cast<int64_t>(text.size());
  }
  std::string_view name() const noexcept override { return "bytes"; }

 private:
  std::vector<std::string>& seen_;
};

// Migration 0018: a row's stored count is looked up, never counted again; a row without one is
// counted once and listed for write_state; a counter whose counts are not stored lists nothing.
TEST_F(ContextVerbatimTest, StoredCountsAreLookedUpAndMissingOnesCountedOnceAndListed) {
  for (size_t i = 0; i < provider_.history.size(); ++i)
    provider_.history[i].content = "a message long enough to be remembered, number " +
                                   std::to_string(i + 1) + std::string(20, '.');
  provider_.stored_by = "bytes@1";
  for (size_t i = 0; i < provider_.history.size(); ++i)
    provider_.stored.push_back(i % 3 == 0 ? -1 : 30 + static_cast<int64_t>(i));
  std::vector<std::string> seen;
  const tokens::MemoCounter memo(std::make_unique<Recording>(seen));
  const VerbatimRead r = read_verbatim({provider_, &store_, settings_, memo}, "c", chat_,
                                       ContextState{}, ends_, count_marks(settings_, chat_.policy));
  // Rows 1, 4, 7, 10 had no count: counted (once each) and listed with their byte counts.
  std::vector<TokenCount> want;
  for (const int64_t id : {1, 4, 7, 10})
    want.push_back({id, static_cast<int64_t>(provider_.history[id - 1].content.size()),
                    provider_.history[id - 1].content});
  EXPECT_EQ(r.verbatim.counted, want);
  EXPECT_EQ(seen.size(), 4u);
  // The others cost what was stored, without a count: the stored figure proves it.
  ASSERT_EQ(r.verbatim.rows.messages.size(), 10u);
  EXPECT_EQ(r.verbatim.rows.cost[1], 31);
  EXPECT_EQ(r.verbatim.rows.cost[0], want[0].tokens);
  // Another counter's stored counts are not used.
  provider_.stored_by = "o200k_base";
  seen.clear();
  const tokens::MemoCounter fresh(std::make_unique<Recording>(seen));
  const VerbatimRead other =
      read_verbatim({provider_, &store_, settings_, fresh}, "c", chat_, ContextState{}, ends_,
                    count_marks(settings_, chat_.policy));
  EXPECT_EQ(other.verbatim.counted.size(), 10u);
  EXPECT_EQ(other.verbatim.rows.cost[1], static_cast<int64_t>(provider_.history[1].content.size()));
  // An estimate stores nothing: nothing is listed.
  EXPECT_TRUE(read({}).verbatim.counted.empty());
}

TEST_F(ContextVerbatimTest, ReadsWhatFollowsTheLastCompactionEachMessageCosted) {
  const VerbatimRead r = read({.verbatim_after = 4});
  EXPECT_EQ(ids(r.verbatim), (std::vector<int64_t>{5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(provider_.last_after, 4);
  EXPECT_TRUE(r.verbatim.older);
  EXPECT_FALSE(r.verbatim.full);
  int64_t sum = 0;
  for (const int64_t c : r.verbatim.rows.cost) sum += c;
  EXPECT_EQ(sum, r.verbatim.rows.tokens);
  EXPECT_EQ(r.verbatim.rows.cost[0], counter_.count_message(provider_.history[4]));
  EXPECT_FALSE(r.restarted);
}

TEST_F(ContextVerbatimTest, AMessageOverAQuarterOfTheBudgetIsCappedAndBlockTagsAreDefused) {
  provider_.history.back().content = "</conversation_summary> " + std::string(8000, 'x');
  const VerbatimRead r = read({});
  EXPECT_LE(r.verbatim.rows.cost.back(), 1000 / kMessageShareDivisor + 16);
  EXPECT_EQ(r.verbatim.rows.messages.back().content.find("</conversation_summary>"),
            std::string::npos);
}

TEST_F(ContextVerbatimTest, UnderSummarizeTheSummaryInUseStartsTheVerbatimPartAfterWhatItCovers) {
  chat_.strategy = Strategy::kSummarize;
  store_.rows.push_back(summary(1, 6, "they talked about tea"));
  VerbatimRead r = read({});
  ASSERT_TRUE(r.verbatim.summary);
  EXPECT_GT(r.verbatim.summary_tokens, 0);
  EXPECT_EQ(ids(r.verbatim), (std::vector<int64_t>{7, 8, 9, 10}));
  EXPECT_TRUE(r.verbatim.older);
  // A summary below summary_from was set aside (its rows vanished): not used.
  r = read({.summary_from = 2});
  EXPECT_FALSE(r.verbatim.summary);
  EXPECT_EQ(ids(r.verbatim).front(), 1);
}

TEST_F(ContextVerbatimTest, RowsThatVanishedStartTheChatOverFromItsClearPoint) {
  chat_.strategy = Strategy::kSummarize;
  store_.rows.push_back(summary(3, 40, "gone"));
  const VerbatimRead r = read({.verbatim_after = 50, .compactions = 6, .summary_from = 1});
  ASSERT_TRUE(r.restarted);
  EXPECT_EQ(r.restarted->verbatim_after, 0);
  EXPECT_EQ(r.restarted->compactions, 6);
  EXPECT_EQ(r.restarted->summary_from, 4);  // the stale summary is set aside
  ASSERT_TRUE(r.warning);
  EXPECT_EQ(r.warning->reason, "state_reset");
  EXPECT_FALSE(r.verbatim.summary);
  EXPECT_EQ(ids(r.verbatim).size(), 10u);
}

TEST_F(ContextVerbatimTest, WithoutASummaryStoreNoSummaryAndARestartKeepsTheStatesSummaryFrom) {
  chat_.strategy = Strategy::kSummarize;
  const VerbatimRead r = read_verbatim({provider_, nullptr, settings_, counter_}, "c", chat_,
                                       {.verbatim_after = 50, .summary_from = 2}, ends_,
                                       count_marks(settings_, chat_.policy));
  EXPECT_FALSE(r.verbatim.summary);
  ASSERT_TRUE(r.restarted);
  EXPECT_EQ(r.restarted->summary_from, 2);
  EXPECT_EQ(ids(r.verbatim).size(), 10u);
}

TEST_F(ContextVerbatimTest, AUserMessageCutToFitReadsNoHistory) {
  ends_.user_truncated = true;
  const VerbatimRead r = read({});
  EXPECT_TRUE(r.verbatim.rows.messages.empty());
  EXPECT_EQ(provider_.last_limit, -1);  // not asked
}

TEST_F(ContextVerbatimTest, RowsFromKeepsEachMessageWithItsCost) {
  const Verbatim v = read({}).verbatim;
  const Prepared t = rows_from(v.rows, 7);
  ASSERT_EQ(t.messages.size(), 3u);
  EXPECT_EQ(t.messages.front().history_id, 8);
  EXPECT_EQ(t.cost.size(), 3u);
  EXPECT_EQ(t.cut.size(), 3u);
  EXPECT_EQ(t.tokens, v.rows.cost[7] + v.rows.cost[8] + v.rows.cost[9]);
}

}  // namespace
}  // namespace autonous::engine
