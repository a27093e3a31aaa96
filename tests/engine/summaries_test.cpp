// The summarize strategy in the builder, with an in-memory store and a scripted summarizer:
// compaction only when a mark is crossed, rolling input, rows a turn did not read counted as
// skipped, failures back off, bounded chunking to the summarizer's window, a stable prompt
// prefix between compactions, the summary as a data block in the user's turn, new chains after
// a clear, and a dry run that calls nothing.

#include <stdexcept>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/engine/assembler.h"
#include "internal/engine/context_builder.h"
#include "internal/engine/context_report.h"
#include "internal/engine/level_compressor.h"
#include "internal/engine/summary.h"
#include "internal/tokens/token_counter.h"
#include "tests/engine/memory_summary_store.h"
#include "tests/engine/vector_provider.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

using MemoryStore = MemorySummaryStore;

// Returns "S<n>: <ids folded>"; records every call's input; can fail on demand.
class ScriptedSummarizer final : public Summarizer {
 public:
  SummaryCall summarize(const std::string& previous, const std::vector<Message>& evicted) override {
    inputs.push_back({previous, evicted});
    if (abort) throw SummaryAborted("lease lost");
    if (fail || (fail_from_call > 0 && static_cast<int>(inputs.size()) >= fail_from_call))
      throw SummaryFailure("summarizer down");
    std::string text =
        answer_override.empty() ? "S" + std::to_string(inputs.size()) + ":" : answer_override;
    if (answer_override.empty())
      for (const auto& m : evicted) text += " " + std::to_string(m.history_id);
    return {text, "sum-model", usage, std::chrono::milliseconds(3)};
  }
  int64_t input_budget() const override { return budget; }
  std::vector<std::pair<std::string, std::vector<Message>>> inputs;
  bool fail = false;
  bool abort = false;
  int fail_from_call = 0;  // > 0: this call and every later one fail
  std::string answer_override;
  std::optional<common::Usage> usage = common::Usage{10, 0, 0, std::nullopt};
  int64_t budget = 100'000;
};

class SummariesTest : public ::testing::Test {
 protected:
  ContextBuilder builder(int window = 50, int64_t max_tokens = 1000) {
    ContextSettings s;
    s.system_prompt = "sys";
    s.history_window = window;
    s.policy.max_tokens = max_tokens;
    s.policy.strategy = Strategy::kSummarize;
    s.summary.max_tokens = 100;
    ContextBuilder b(s, provider_, compressor_, assembler_, counter_,
                     {.summaries = &store_, .summarizer = dry_run_ ? nullptr : &summarizer_});
    return b;
  }
  // n messages of `tokens` tokens each (chars/4, no framing), ids continuing the history.
  void add(int n, int64_t tokens) {
    for (int i = 0; i < n; ++i) {
      const auto id = static_cast<int64_t>(provider_.history.size()) + 1;
      provider_.history.push_back(
          {id % 2 ? Role::kUser : Role::kAssistant,
           "m" + std::to_string(id) +
               std::string(static_cast<size_t>(tokens * 4) - 1 - std::to_string(id).size(), '.'),
           id});
    }
  }
  VectorProvider provider_;
  MemoryStore store_{provider_};
  ScriptedSummarizer summarizer_;
  tokens::CharsOver4Counter counter_;
  LevelCompressor compressor_{counter_};
  StandardAssembler assembler_;
  bool dry_run_ = false;
};

TEST_F(SummariesTest, NoSummaryCallWhileUsageIsUnderWarn) {
  add(8, 50);  // 400 of 1000
  const auto b = builder().build("c", "hi");
  EXPECT_TRUE(summarizer_.inputs.empty());
  EXPECT_FALSE(b.summary.used);
  EXPECT_EQ(b.chat.strategy, Strategy::kSummarize);
  EXPECT_EQ(b.figures.compressed_count, 8);
  EXPECT_TRUE(b.warnings.empty());
}

TEST_F(SummariesTest, CompactionFoldsTheOldestIntoASummaryBlockLeadingTheFirstUserMessage) {
  add(18, 50);  // 900 + fixed: aggressive
  const auto b = builder().build("c", "hi");
  ASSERT_EQ(summarizer_.inputs.size(), 1u);
  EXPECT_EQ(summarizer_.inputs[0].first, "");  // no previous summary
  ASSERT_TRUE(b.summarized.has_value());
  ASSERT_EQ(store_.rows.size(), 1u);
  const Summary& s = store_.rows[0];
  EXPECT_EQ(s.covers_through, summarizer_.inputs[0].second.back().history_id);
  EXPECT_EQ(b.summarized->messages_covered,
            static_cast<int64_t>(summarizer_.inputs[0].second.size()));
  ASSERT_GE(b.messages.size(), 3u);
  EXPECT_EQ(b.messages[0].content, "sys");
  // As data in the user's turn, not with system authority; the roles still alternate.
  EXPECT_EQ(b.messages[1].role, Role::kUser);
  EXPECT_EQ(b.messages[1].content.rfind(summary_block(s.text), 0), 0u);
  // The verbatim tail starts right after what the summary covers: nothing is lost or repeated.
  EXPECT_EQ(b.messages[1].history_id, s.covers_through + 1);
  EXPECT_EQ(b.state.compaction, CompactionReason::kThreshold);
  EXPECT_EQ(b.state.after.verbatim_after, s.covers_through);
  EXPECT_EQ(b.messages.back().content, "hi");
  EXPECT_TRUE(b.summary.used);
  EXPECT_GE(b.figures.level, Level::kAggressive);
  // Down to the target (0.60 of 1000), not just under the limit.
  EXPECT_LE(b.figures.estimated_tokens, 600);
  const auto j = nlohmann::json::parse(figures_json(b));
  EXPECT_EQ(j["summary_used"], true);
  EXPECT_EQ(j["summarized"], true);
}

TEST_F(SummariesTest, TheNextTurnReusesTheStoredSummaryWithoutACall) {
  add(18, 50);
  builder().build("c", "hi");
  ASSERT_EQ(summarizer_.inputs.size(), 1u);
  add(2, 20);                                    // the turn's pair
  const auto b = builder().build("c", "again");  // a new builder: as after a restart
  EXPECT_EQ(summarizer_.inputs.size(), 1u);
  EXPECT_TRUE(b.summary.used);
  EXPECT_FALSE(b.summarized.has_value());
  EXPECT_EQ(b.summary.id, 1);
}

TEST_F(SummariesTest, RollingTheNextSummaryReadsThePreviousOneAndOnlyNewMessages) {
  add(18, 50);
  builder().build("c", "hi");
  const int64_t covered = store_.rows.back().covers_through;
  add(12, 50);  // pressure again
  builder().build("c", "more");
  ASSERT_EQ(summarizer_.inputs.size(), 2u);
  EXPECT_EQ(summarizer_.inputs[1].first, store_.rows[0].text);
  for (const auto& m : summarizer_.inputs[1].second) EXPECT_GT(m.history_id, covered);
  EXPECT_EQ(store_.rows.size(), 2u);
  EXPECT_GT(store_.rows[1].covers_through, covered);
}

TEST_F(SummariesTest, RowsOlderThanWhatATurnReadsAreCountedAsSkipped) {
  add(30, 5);  // tiny: usage is low, but the window holds only 5 (a turn reads 5 + 8)
  const auto b = builder(/*window=*/5).build("c", "hi");
  ASSERT_EQ(summarizer_.inputs.size(), 1u);
  EXPECT_EQ(b.state.compaction, CompactionReason::kWindow);
  const auto& folded = summarizer_.inputs[0].second;
  ASSERT_FALSE(folded.empty());
  EXPECT_EQ(folded.front().history_id, 18);  // the oldest row read
  ASSERT_TRUE(b.summarized.has_value());
  EXPECT_EQ(b.summarized->skipped, 17);  // rows 1..17 were never read
  // Every row read is either in the summary or in the verbatim tail, which starts on a user.
  EXPECT_EQ(folded.back().history_id + 1, b.messages[1].history_id);
  EXPECT_EQ(b.messages[1].role, Role::kUser);
  EXPECT_EQ(b.messages[b.messages.size() - 2].history_id, 30);
}

TEST_F(SummariesTest, AWindowCompactionFoldsEveryRowWhenTwoArriveEachTurn) {
  // A question and a reply per turn: the count passes the high mark by two. Every row that
  // leaves the verbatim part is folded, the very first included.
  ContextBuilder b = builder(/*window=*/20, /*max_tokens=*/100'000);
  int64_t covered_before = 0;
  for (int turn = 0; turn < 40; ++turn) {
    const auto built = b.build("c", "q");
    if (built.summarized) {
      EXPECT_EQ(built.summarized->skipped, 0);
      EXPECT_EQ(summarizer_.inputs.back().second.front().history_id, covered_before + 1);
      covered_before = built.summarized->covers_through;
    }
    add(2, 5);
  }
  EXPECT_GE(store_.rows.size(), 3u);
  EXPECT_EQ(summarizer_.inputs.front().second.front().history_id, 1);
}

TEST_F(SummariesTest, AFailedSummaryBacksOffAndNeverRetriesEveryTurn) {
  add(30, 50);  // 1500 of 1000: a compaction
  summarizer_.fail = true;
  auto b = builder().build("c", "hi");
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_EQ(b.warnings[0].reason, "summary_failed");
  EXPECT_TRUE(store_.rows.empty());
  EXPECT_FALSE(b.summary.used);
  EXPECT_LE(b.figures.estimated_tokens, 600);  // dropped to the target all the same
  EXPECT_GT(b.figures.compressed_count, 0);
  EXPECT_EQ(provider_.history.size(), 30u);  // history untouched
  EXPECT_EQ(b.state.after.summary_failures, 1);
  EXPECT_EQ(summarizer_.inputs.size(), 1u);
  // The next turns only append: no call until the next compaction.
  for (int turn = 0; turn < 3; ++turn) {
    add(2, 10);
    b = builder().build("c", "again");
    EXPECT_EQ(summarizer_.inputs.size(), 1u);
    EXPECT_EQ(b.state.compaction, CompactionReason::kNone);
  }
  // Failure 2 at the next compaction: then one compaction is skipped (dropped, with a warning).
  add(16, 50);
  b = builder().build("c", "x");
  EXPECT_EQ(summarizer_.inputs.size(), 2u);
  EXPECT_EQ(b.state.after.summary_failures, 2);
  EXPECT_EQ(b.state.after.summary_skips, 1);
  add(16, 50);
  b = builder().build("c", "y");
  EXPECT_EQ(summarizer_.inputs.size(), 2u);
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_EQ(b.warnings[0].reason, "summary_backoff");
  summarizer_.fail = false;
  add(16, 50);
  b = builder().build("c", "z");
  EXPECT_EQ(summarizer_.inputs.size(), 3u);
  EXPECT_TRUE(b.summarized.has_value());
  EXPECT_EQ(b.state.after.summary_failures, 0);
}

// #28 review: a window compaction whose fold fails keeps every message verbatim; it moves no cut
// mark either, so the newer oversized message stays whole and the prompt keeps its prefix.
TEST_F(SummariesTest, AWindowFoldThatFailsKeepsEverythingAndMovesNoCutMark) {
  add(22, 5);    // over the window of 20
  add(1, 7000);  // over 1/16 of the budget, newer than the mark
  provider_.state.context = {
      .compactions = 1, .last_reason = CompactionReason::kWindow, .cut_through = 4};
  summarizer_.fail = true;
  const auto b = builder(/*window=*/20, /*max_tokens=*/100'000).build("c", "q");
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_EQ(b.warnings[0].reason, "summary_failed");
  EXPECT_EQ(b.figures.dropped_count, 0);
  EXPECT_EQ(b.figures.cut_messages, 0);
  EXPECT_EQ(b.state.compaction, CompactionReason::kNone);
  EXPECT_EQ(b.state.after.cut_through, 4);
  EXPECT_EQ(b.state.after.compactions, 1);
}

TEST_F(SummariesTest, AnAbortedCallEndsTheTurnAndIsNoFailure) {
  add(30, 50);
  summarizer_.abort = true;
  EXPECT_THROW(builder().build("c", "hi"), SummaryAborted);
  EXPECT_EQ(provider_.saves, 0);  // no back-off, no moved start
  EXPECT_TRUE(store_.rows.empty());
}

TEST_F(SummariesTest, ASummaryOfRowsThatVanishedIsSetAside) {
  add(18, 50);
  builder().build("c", "hi");  // a summary covering the oldest rows, the state after them
  ASSERT_EQ(store_.rows.size(), 1u);
  // The front end deletes the chat's rows; new ones get ids from 1 again.
  provider_.history.clear();
  add(4, 10);
  auto b = builder().build("c", "fresh");
  EXPECT_FALSE(b.summary.used);
  EXPECT_EQ(b.figures.original_count, 4);
  ASSERT_FALSE(b.warnings.empty());
  EXPECT_EQ(b.warnings[0].reason, "state_reset");
  b = builder().build("c", "again");  // stays set aside, without a new warning
  EXPECT_FALSE(b.summary.used);
  EXPECT_TRUE(b.warnings.empty());
  EXPECT_EQ(b.figures.original_count, 4);
}

TEST_F(SummariesTest, AnEmptyUserTextWithOnlyTheSummaryStillFits) {
  add(30, 50);
  builder(/*window=*/50, /*max_tokens=*/1000).build("c", "hi");  // folds most of it
  ASSERT_EQ(store_.rows.size(), 1u);
  provider_.history.erase(provider_.history.begin() + store_.rows[0].covers_through,
                          provider_.history.end());  // nothing after the summary (ids kept)
  provider_.state.context = {};
  // With per-message framing: the summary then leads an empty user message whose framing must
  // be in the count.
  const tokens::CharsOver4Counter framed(tokens::kFramingPerMessage, tokens::kFramingPerRequest);
  const LevelCompressor compressor(framed);
  // Budgets around the tight point: system prompt, framing and the block's text exactly.
  const int64_t tight = framed.per_request() + framed.count_message(Message{Role::kSystem, "sys"}) +
                        framed.count_text(summary_block(store_.rows[0].text));
  for (int64_t budget = tight - 2; budget <= tight + 8; ++budget) {
    ContextSettings s;
    s.system_prompt = "sys";
    s.policy.max_tokens = budget;
    s.policy.strategy = Strategy::kSummarize;
    s.summary.max_tokens = 100;
    ContextBuilder b(s, provider_, compressor, assembler_, framed, {.summaries = &store_});
    const auto built = b.build("c", "");
    EXPECT_LE(built.figures.estimated_tokens, built.figures.budget_tokens) << budget;
  }
}

TEST_F(SummariesTest, AnEmptySummaryIsAFailure) {
  add(30, 50);
  summarizer_.answer_override = "  \n ";
  const auto b = builder().build("c", "hi");
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_EQ(b.warnings[0].reason, "summary_failed");
  EXPECT_TRUE(store_.rows.empty());
}

TEST_F(SummariesTest, ASummaryOverItsCapIsCutAndNeverResentWhole) {
  add(18, 50);
  // A server that ignored max_tokens and sent no usage: 750 000 tokens by our own count.
  summarizer_.answer_override = std::string(3'000'000, 'x');
  summarizer_.usage = std::nullopt;
  const auto b = builder().build("c", "hi");  // SUMMARY_MAX_TOKENS 100
  ASSERT_EQ(store_.rows.size(), 1u);
  EXPECT_LE(counter_.count_text(store_.rows[0].text), 100);
  EXPECT_LE(store_.rows[0].tokens, 200);  // the block: the text plus its framing
  ASSERT_TRUE(b.summarized.has_value());
  EXPECT_GT(b.summarized->cut_tokens, 700'000);
  EXPECT_EQ(nlohmann::json::parse(summarized_json(b))["cut_tokens"], b.summarized->cut_tokens);
  EXPECT_TRUE(b.summary.used);  // it fits the prompt, so it is used
  // A stored summary far over the cap (an older binary kept one whole) is cut before it is
  // resent: the summarizer never gets it whole.
  store_.rows[0].text = std::string(3'000'000, 'y');
  summarizer_.answer_override.clear();
  add(20, 50);
  builder().build("c", "again");
  ASSERT_EQ(summarizer_.inputs.size(), 2u);
  EXPECT_LE(counter_.count_text(summarizer_.inputs[1].first), 400);
}

TEST_F(SummariesTest, AnAnswerTheApiCountedWithinTheCapIsKeptWhole) {
  // Our estimate may count more than the API did (CJK): the API's count is the one that binds.
  add(18, 50);
  summarizer_.answer_override = std::string(800, 'z');  // 200 by our count, over the cap of 100
  summarizer_.usage = common::Usage{10, 90, 100, std::nullopt};
  const auto b = builder().build("c", "hi");
  ASSERT_EQ(store_.rows.size(), 1u);
  EXPECT_EQ(store_.rows[0].text, std::string(800, 'z'));
  ASSERT_TRUE(b.summarized.has_value());
  EXPECT_EQ(b.summarized->cut_tokens, 0);
}

TEST_F(SummariesTest, AUsageThatLiesStillCannotStoreAHugeSummary) {
  add(18, 50);
  summarizer_.answer_override = std::string(3'000'000, 'x');
  summarizer_.usage = common::Usage{10, 1, 11, std::nullopt};  // "1 token" for 750 000
  const auto b = builder().build("c", "hi");
  ASSERT_EQ(store_.rows.size(), 1u);
  EXPECT_LE(counter_.count_text(store_.rows[0].text), 400);  // kStoredSummaryFactor x the cap
  ASSERT_TRUE(b.summarized.has_value());
  EXPECT_GT(b.summarized->cut_tokens, 700'000);
}

TEST_F(SummariesTest, AFailedChunkKeepsTheChunksAlreadyFolded) {
  add(40, 50);
  summarizer_.budget = 300;  // about 5 messages a call
  summarizer_.fail_from_call = 2;
  const auto b = builder(/*window=*/50, /*max_tokens=*/1200).build("c", "hi");
  ASSERT_EQ(store_.rows.size(), 1u);  // the first call's fold is stored
  EXPECT_TRUE(b.summary.used);
  ASSERT_TRUE(b.summarized.has_value());
  EXPECT_EQ(b.summarized->calls, 1);
  EXPECT_EQ(store_.rows[0].covers_through, summarizer_.inputs[0].second.back().history_id);
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_EQ(b.warnings[0].reason, "summary_failed");
}

TEST_F(SummariesTest, ASpanLongerThanTheSummarizersWindowIsFoldedInAtMostThreeChunks) {
  add(40, 50);
  summarizer_.budget = 300;  // about 5 messages a call
  const auto b = builder(/*window=*/50, /*max_tokens=*/1200).build("c", "hi");
  ASSERT_TRUE(b.summarized.has_value());
  EXPECT_GT(b.summarized->calls, 1);
  EXPECT_LE(b.summarized->calls, kMaxFoldCalls);
  ASSERT_EQ(summarizer_.inputs.size(), static_cast<size_t>(b.summarized->calls));
  // What three calls cannot take is left out, oldest first, and counted.
  EXPECT_GT(b.summarized->skipped, 0);
  int64_t last_id = summarizer_.inputs[0].second.front().history_id - 1;
  EXPECT_EQ(last_id, b.summarized->skipped);
  for (size_t i = 0; i < summarizer_.inputs.size(); ++i) {
    const auto& [previous, chunk] = summarizer_.inputs[i];
    int64_t tokens = counter_.count_text(previous);
    for (const auto& m : chunk) {
      tokens += counter_.count_message(m);
      EXPECT_EQ(m.history_id, last_id + 1);  // in order, nothing skipped
      last_id = m.history_id;
    }
    EXPECT_LE(tokens, 300);
    if (i > 0) {
      EXPECT_EQ(previous.rfind("S" + std::to_string(i) + ":", 0), 0u);  // rolling
    }
  }
  EXPECT_EQ(store_.rows.size(), 1u);  // one summary for the whole compaction
}

TEST_F(SummariesTest, BetweenCompactionsThePromptOnlyGrowsAtTheEnd) {
  ContextBuilder b = builder(/*window=*/50, /*max_tokens=*/2000);
  std::vector<Message> previous;
  int compactions = 0;
  int stable = 0;
  for (int turn = 0; turn < 80; ++turn) {
    const auto built = b.build("c", "question " + std::to_string(turn));
    if (built.state.compaction != CompactionReason::kNone) {
      ++compactions;
    } else if (!previous.empty()) {
      // Everything but the last (user) message of the previous prompt is a prefix of this one.
      ASSERT_LT(previous.size(), built.messages.size());
      for (size_t i = 0; i + 1 < previous.size(); ++i)
        ASSERT_EQ(built.messages[i].content, previous[i].content) << "turn " << turn;
      ++stable;
    }
    previous = built.messages;
    add(2, 40);  // the turn's user message and reply
  }
  EXPECT_GE(compactions, 2);
  EXPECT_LT(compactions, 20);
  EXPECT_GT(stable, 50);
}

TEST_F(SummariesTest, ClearStartsANewChain) {
  add(18, 50);
  builder().build("c", "hi");
  ASSERT_EQ(store_.rows.size(), 1u);
  provider_.state.cleared_through = 18;
  add(2, 10);
  const auto b = builder().build("c", "fresh");
  EXPECT_FALSE(b.summary.used);  // the old chain's summary is not this chain's
  EXPECT_EQ(b.figures.compressed_count, 2);
  add(20, 50);
  const auto c = builder().build("c", "fresh again");
  ASSERT_TRUE(c.summarized.has_value());
  EXPECT_EQ(store_.rows.back().chain_start, 18);
  for (const auto& m : summarizer_.inputs.back().second) EXPECT_GT(m.history_id, 18);
}

TEST_F(SummariesTest, ADryRunReportsWhatItWouldFoldAndCallsNothing) {
  add(18, 50);
  dry_run_ = true;
  const auto b = builder().build("c", "hi");
  EXPECT_TRUE(summarizer_.inputs.empty());
  EXPECT_TRUE(store_.rows.empty());
  EXPECT_GT(b.summary.pending, 0);
  EXPECT_NE(describe_decision(b).find("would summarize"), std::string::npos);
  EXPECT_LE(b.figures.estimated_tokens, 1000);
}

TEST_F(SummariesTest, WithoutAStoreSummarizeFallsBackWithAWarning) {
  add(4, 10);
  ContextSettings s;
  s.system_prompt = "sys";
  s.policy.strategy = Strategy::kSummarize;
  const ContextBuilder b(s, provider_, compressor_, assembler_, counter_);
  const auto built = b.build("c", "hi");
  EXPECT_EQ(built.chat.strategy, Strategy::kTokenBudget);
  ASSERT_EQ(built.warnings.size(), 1u);
  EXPECT_EQ(built.warnings[0].reason, "summarize_unavailable");
}

}  // namespace
}  // namespace autonous::engine
