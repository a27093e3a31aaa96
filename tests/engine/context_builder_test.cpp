#include "internal/engine/context_builder.h"

#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/common/utf8.h"
#include "internal/engine/assembler.h"
#include "internal/engine/context_report.h"
#include "internal/engine/level_compressor.h"
#include "internal/engine/provider.h"
#include "internal/tokens/token_counter.h"
#include "tests/engine/vector_provider.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

ContextSettings S(std::string system, int window, int64_t max_tokens, int64_t max_chars) {
  ContextSettings s;
  s.system_prompt = std::move(system);
  s.history_window = window;
  s.max_chars_per_message = max_chars;
  s.policy.max_tokens = max_tokens;
  return s;
}

BuildOptions rebuild_options(Level level, double scale) {
  BuildOptions o;
  o.min_level = level;
  o.budget_scale = scale;
  return o;
}

class ContextBuilderTest : public ::testing::Test {
 protected:
  ContextBuilder builder(ContextSettings s) {
    return ContextBuilder(std::move(s), provider_, compressor_, assembler_, counter_);
  }
  VectorProvider provider_;
  tokens::CharsOver4Counter counter_;
  LevelCompressor compressor_{counter_};
  StandardAssembler assembler_;
};

TEST_F(ContextBuilderTest, AssemblesSystemHistoryAndUser) {
  provider_.history = {{Role::kUser, "q1", 1}, {Role::kAssistant, "a1", 2}};
  const auto b = builder(S("sys prompt", 50, 1000, 4000)).build("chat-9", "q2");
  ASSERT_EQ(b.messages.size(), 4u);
  EXPECT_EQ(b.messages[0].content, "sys prompt");
  EXPECT_EQ(b.messages[3].content, "q2");
  EXPECT_EQ(provider_.last_chat, "chat-9");
  EXPECT_EQ(provider_.last_limit, 62);  // HISTORY_WINDOW + a quarter: what arrived since last turn
  EXPECT_EQ(b.figures.original_count, 2);
  EXPECT_EQ(b.figures.compressed_count, 2);
  EXPECT_EQ(b.figures.dropped_count, 0);
  EXPECT_EQ(b.figures.estimated_tokens, counter_.count_prompt(b.messages));
  EXPECT_EQ(b.figures.budget_tokens, 1000);
}

TEST_F(ContextBuilderTest, BudgetBoundsTheWholePromptNotJustHistory) {
  for (int i = 0; i < 40; ++i)
    provider_.history.push_back({Role::kUser, std::string(40, 'h'), i + 1});
  const std::string system(200, 's');  // 50 tokens
  const std::string user(120, 'u');    // 30 tokens
  const auto b = builder(S(system, 50, 200, 4000)).build("c", user);
  EXPECT_LE(b.figures.estimated_tokens, 200);
  EXPECT_EQ(b.figures.system_tokens, 50);
  EXPECT_EQ(b.figures.user_tokens, 30);
  EXPECT_EQ(b.figures.history_budget_tokens, 120);
  // Usage over warn: a compaction to the 0.60 target (40 tokens of history would be 4 of 10
  // tokens each), held up by the floor of KEEP_RECENT_MESSAGES (6).
  EXPECT_EQ(b.figures.compressed_count, 6);
  EXPECT_EQ(b.figures.dropped_count, 34);
  EXPECT_EQ(b.state.compaction, CompactionReason::kThreshold);
  EXPECT_EQ(b.state.after.verbatim_after, 34);
  EXPECT_EQ(provider_.saves, 1);
}

TEST_F(ContextBuilderTest, CutsTheUserMessageWhenSystemAndUserAloneDoNotFit) {
  provider_.history = {{Role::kUser, "old", 1}};
  // A long paste followed by its question: 500 tokens.
  const std::string user = "BEGIN " + std::string(1960, 'u') + " what does this mean?";
  const auto b = builder(S(std::string(200, 's'), 50, 100, 4000)).build("c", user);
  EXPECT_TRUE(b.figures.user_truncated);
  EXPECT_LE(b.figures.estimated_tokens, 100);
  EXPECT_EQ(b.figures.compressed_count, 0);
  ASSERT_EQ(b.messages.size(), 2u);
  EXPECT_NE(b.messages[1].content.find("characters cut"), std::string::npos);
  // Cut in the middle: the beginning and the question at the end are both kept.
  EXPECT_EQ(b.messages[1].content.rfind("BEGIN", 0), 0u);
  EXPECT_NE(b.messages[1].content.find("what does this mean?"), std::string::npos);
  const auto figures = nlohmann::json::parse(figures_json(b));
  EXPECT_EQ(figures["user_truncated"], true);
}

TEST_F(ContextBuilderTest, RefusesABudgetTooSmallForTheSystemPrompt) {
  EXPECT_THROW(builder(S(std::string(400, 's'), 50, 100, 4000)), PolicyError);
  EXPECT_THROW(check_budget(S(std::string(400, 's'), 50, 110, 4000), counter_),
               std::invalid_argument);
  EXPECT_NO_THROW(check_budget(S(std::string(400, 's'), 50, 100 + kMinUserTokens, 4000), counter_));
}

TEST_F(ContextBuilderTest, HistoryWindowZeroReadsNothing) {
  provider_.history = {{Role::kUser, "old", 1}};
  const auto b = builder(S("sys", 0, 1000, 4000)).build("c", "hi");
  EXPECT_EQ(provider_.last_limit, -1);  // never asked
  EXPECT_EQ(b.messages.size(), 2u);
}

TEST_F(ContextBuilderTest, FiguresJsonCarriesTheEventFields) {
  provider_.history = {{Role::kUser, std::string(100, 'x'), 1}};
  const auto b = builder(S("sys", 50, 1000, 10)).build("c", "hi");
  const auto j = nlohmann::json::parse(figures_json(b));
  for (const char* key : {"original_count", "compressed_count", "estimated_tokens", "budget_tokens",
                          "dropped_count", "truncated_count"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["truncated_count"], 1);
  const auto dry = nlohmann::json::parse(dry_run_json(b));
  EXPECT_EQ(dry["messages"].size(), 3u);
  EXPECT_EQ(dry["messages"][0]["role"], "system");
}

TEST_F(ContextBuilderTest, ChatSettingsOverrideTheEnvironment) {
  for (int i = 0; i < 40; ++i)
    provider_.history.push_back({Role::kUser, std::string(40, 'h'), i + 1});
  provider_.state.settings_json =
      R"({"strategy":"sliding_window","recent_messages":5,"max_tokens":900})";
  const auto b = builder(S("sys", 50, 5000, 4000)).build("c", "hi");
  EXPECT_TRUE(b.chat.own_settings);
  EXPECT_EQ(b.chat.strategy, Strategy::kSlidingWindow);
  EXPECT_EQ(provider_.last_limit, 23);  // sliding_window: 3 N + 8, then keeps N
  EXPECT_EQ(b.figures.budget_tokens, 900);
  EXPECT_EQ(b.figures.compressed_count, 5);
  const auto j = nlohmann::json::parse(figures_json(b));
  EXPECT_EQ(j["settings"], "chat");
  EXPECT_EQ(j["strategy"], "sliding_window");
}

TEST_F(ContextBuilderTest, SlidingWindowStillRespectsTheTokenBudget) {
  for (int i = 0; i < 30; ++i)
    provider_.history.push_back({Role::kUser, std::string(400, 'h'), i + 1});
  ContextSettings s = S("sys", 50, 600, 4000);
  s.policy.strategy = Strategy::kSlidingWindow;
  s.policy.recent_messages = 20;
  const auto b = builder(s).build("c", "hi");
  EXPECT_EQ(b.figures.original_count, 30);
  EXPECT_LE(b.figures.estimated_tokens, 600);
  EXPECT_GT(b.figures.dropped_count, 0);
}

TEST_F(ContextBuilderTest, BadStoredSettingsFallBackToTheEnvironmentWithAWarning) {
  provider_.history = {{Role::kUser, "q", 1}};
  for (const char* bad : {"not json", R"({"strategy":"magic"})", R"({"soft":0.9,"warn":0.5})",
                          R"({"max_tokens":3})", R"({"colour":"blue"})"}) {
    SCOPED_TRACE(bad);
    provider_.state.settings_json = bad;
    const auto b = builder(S("sys", 50, 1000, 4000)).build("c", "hi");
    EXPECT_FALSE(b.chat.own_settings);
    EXPECT_EQ(b.figures.budget_tokens, 1000);
    ASSERT_EQ(b.warnings.size(), 1u);
    EXPECT_EQ(b.warnings[0].reason, "bad_chat_settings");
  }
}

TEST_F(ContextBuilderTest, SummarizeFallsBackToTokenBudgetWithAWarning) {
  provider_.history = {{Role::kUser, "q", 1}};
  ContextSettings s = S("sys", 50, 1000, 4000);
  s.policy.strategy = Strategy::kSummarize;
  const auto b = builder(s).build("c", "hi");
  EXPECT_EQ(b.chat.requested_strategy, Strategy::kSummarize);
  EXPECT_EQ(b.chat.strategy, Strategy::kTokenBudget);
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_EQ(b.warnings[0].reason, "summarize_unavailable");
  EXPECT_EQ(b.messages.size(), 3u);
}

TEST_F(ContextBuilderTest, ClearedHistoryIsLeftOut) {
  provider_.history = {
      {Role::kUser, "before", 1}, {Role::kAssistant, "before too", 2}, {Role::kUser, "after", 3}};
  provider_.state.cleared_through = 2;
  const auto b = builder(S("sys", 50, 1000, 4000)).build("c", "hi");
  EXPECT_EQ(provider_.last_after, 2);
  ASSERT_EQ(b.messages.size(), 3u);
  EXPECT_EQ(b.messages[1].content, "after");
  EXPECT_EQ(b.chat.cleared_through, 2);
}

TEST_F(ContextBuilderTest, ChatBudgetIsNeverAboveTheModelCeiling) {
  provider_.state.settings_json = R"({"max_tokens":50000})";
  ContextSettings s = S("sys", 50, 1000, 4000);
  s.ceiling = 2000;
  const auto b = builder(s).build("c", "hi");
  EXPECT_EQ(b.figures.budget_tokens, 2000);
}

TEST_F(ContextBuilderTest, HarderRebuildScalesTheBudgetAndRaisesTheLevel) {
  for (int i = 0; i < 10; ++i)
    provider_.history.push_back({Role::kUser, std::string(40, 'h'), i + 1});
  const auto normal = builder(S("sys", 50, 1000, 4000)).build("c", "hi");
  EXPECT_EQ(normal.figures.level, Level::kNone);
  const auto harder =
      builder(S("sys", 50, 1000, 4000)).build("c", "hi", rebuild_options(Level::kAggressive, 0.1));
  EXPECT_EQ(harder.figures.budget_tokens, 100);
  EXPECT_GE(harder.figures.level, Level::kAggressive);
  EXPECT_LE(harder.figures.estimated_tokens, 100);
}

TEST_F(ContextBuilderTest, DecisionNamesTheLevelAndWhatWasDone) {
  for (int i = 0; i < 40; ++i)
    provider_.history.push_back({Role::kUser, std::string(40, 'h'), i + 1});
  const auto b = builder(S("sys", 50, 200, 4000)).build("c", "hi");
  EXPECT_EQ(b.figures.level, Level::kEmergency);
  const std::string d = describe_decision(b);
  EXPECT_EQ(d.rfind("emergency:", 0), 0u) << d;
  EXPECT_NE(d.find("dropped the " + std::to_string(b.figures.dropped_count)), std::string::npos)
      << d;
  EXPECT_NE(d.find("compaction (threshold)"), std::string::npos) << d;
  const auto dry = nlohmann::json::parse(dry_run_json(b));
  EXPECT_EQ(dry["level"], "emergency");
  EXPECT_EQ(dry["decision"], d);
  EXPECT_EQ(dry["tokens_after"], b.figures.estimated_tokens);
  EXPECT_GT(dry["tokens_before"].get<int64_t>(), 200);
}

// #28: what the prompt carries cut changes only at a compaction. A chat that never compacted
// carries its oversized messages whole; once a token compaction kept them they are cut, and a
// new oversized message is cut as it enters (the chat is bound by its budget); after a window
// compaction (room to spare) a new one stays whole until the next compaction.
TEST_F(ContextBuilderTest, WhatIsCarriedCutChangesOnlyAtACompaction) {
  const std::string big(1200, 'b');  // 300 tokens: over 1/16 of a 2 000 budget (125)
  for (int i = 0; i < 6; ++i)
    provider_.history.push_back(
        {i % 2 ? Role::kAssistant : Role::kUser, i == 1 ? big : "short", i + 1});
  const ContextBuilder b = builder(S("sys", 100, 2000, 0));
  const BuiltContext fresh = b.build("c", "q");
  EXPECT_EQ(fresh.state.compaction, CompactionReason::kNone);
  EXPECT_EQ(fresh.figures.cut_messages, 0);
  EXPECT_EQ(fresh.figures.level, Level::kNone);
  EXPECT_EQ(fresh.messages[2].content, big);  // whole: the chat never compacted

  // A token compaction kept messages up to id 6: the big one is carried cut from then on.
  provider_.state.context = {.chain_start = 0,
                             .verbatim_after = 0,
                             .compactions = 1,
                             .last_reason = CompactionReason::kThreshold,
                             .cut_through = 6};
  const BuiltContext after_tokens = b.build("c", "q");
  EXPECT_EQ(after_tokens.state.compaction, CompactionReason::kNone);
  EXPECT_EQ(after_tokens.figures.cut_messages, 1);
  EXPECT_EQ(after_tokens.figures.level, Level::kNormal);
  EXPECT_NE(after_tokens.messages[2].content, big);
  // A new oversized reply is cut as it enters, and the earlier prompt is still its prefix.
  provider_.history.push_back({Role::kUser, "q", 7});
  provider_.history.push_back({Role::kAssistant, big, 8});
  const BuiltContext next = b.build("c", "q2");
  EXPECT_EQ(next.state.compaction, CompactionReason::kNone);
  EXPECT_EQ(next.figures.cut_messages, 2);
  for (size_t i = 0; i + 1 < after_tokens.messages.size(); ++i)
    EXPECT_EQ(next.messages[i].content, after_tokens.messages[i].content) << i;

  // After a window compaction the messages it kept are cut, a newer one stays whole.
  provider_.state.context.last_reason = CompactionReason::kWindow;
  const BuiltContext after_window = b.build("c", "q2");
  EXPECT_EQ(after_window.state.compaction, CompactionReason::kNone);
  EXPECT_EQ(after_window.figures.cut_messages, 1);
  EXPECT_EQ(after_window.messages.at(after_window.messages.size() - 2).content, big);
  EXPECT_EQ(describe_decision(after_window).rfind("normal: cut 1", 0), 0u)
      << describe_decision(after_window);
}

// #28 review: the trigger counts what a never-compacted chat carries (whole); when the cut sizes
// already fit, the compaction only moves the cut mark: the prompt fits by cutting, nothing is
// dropped, and the mark is stored (the next turn carries the same cuts).
TEST_F(ContextBuilderTest, ATriggerTheCutsAloneMeetMovesTheCutMarkAndDropsNothing) {
  const std::string big(2000, 'b');  // 500 tokens each, cut to 62 at a 1 000 budget
  for (int i = 0; i < 4; ++i)
    provider_.history.push_back({i % 2 ? Role::kAssistant : Role::kUser, big, i + 1});
  const ContextBuilder b = builder(S("sys", 100, 1000, 0));
  const BuiltContext built = b.build("c", "q");
  EXPECT_EQ(built.state.compaction, CompactionReason::kThreshold);
  EXPECT_EQ(built.figures.dropped_count, 0);
  EXPECT_EQ(built.figures.compressed_count, 4);
  EXPECT_EQ(built.figures.cut_messages, 4);
  EXPECT_EQ(built.state.after.cut_through, 4);
  EXPECT_EQ(built.state.after.verbatim_after, 0);
  EXPECT_LE(built.figures.estimated_tokens, 1000);
  EXPECT_EQ(provider_.state.context.cut_through, 4);  // stored
  const BuiltContext again = b.build("c", "q");
  EXPECT_EQ(again.state.compaction, CompactionReason::kNone);
  EXPECT_EQ(again.messages, built.messages);
}

// #28 review: after a window compaction a newer oversized reply is carried whole; when a long user
// message leaves it over the budget (and the floor keeps a compaction from helping), cutting it
// comes before the last resort's drop, and the mark follows.
TEST_F(ContextBuilderTest, OverTheBudgetNewerMessagesAreCutBeforeAnythingIsDropped) {
  for (int i = 0; i < 5; ++i)
    provider_.history.push_back({i % 2 ? Role::kAssistant : Role::kUser, "short", i + 1});
  provider_.history.push_back({Role::kAssistant, std::string(3000, 'r'), 6});  // 750 tokens
  provider_.state.context = {
      .compactions = 1, .last_reason = CompactionReason::kWindow, .cut_through = 4};
  const BuiltContext b = builder(S("sys", 100, 2000, 0)).build("c", std::string(6400, 'u'));
  EXPECT_FALSE(b.figures.user_truncated);
  EXPECT_EQ(b.figures.dropped_count, 0);
  EXPECT_EQ(b.figures.compressed_count, 6);
  EXPECT_EQ(b.figures.cut_messages, 1);
  EXPECT_LE(b.figures.estimated_tokens, 2000);
  EXPECT_EQ(b.state.compaction, CompactionReason::kThreshold);
  EXPECT_EQ(b.state.after.cut_through, 6);
}

TEST_F(ContextBuilderTest, ASlidingWindowNoWiderThanTheWindowStillLeavesRoomToGrow) {
  // HISTORY_WINDOW 20 with RECENT_MESSAGE_COUNT 20: the marks must not meet, or every turn
  // would compact (the prompt's prefix would change every turn).
  ContextSettings s = S("sys", 20, 100000, 0);
  s.policy.strategy = Strategy::kSlidingWindow;
  s.policy.recent_messages = 20;
  const Marks m = count_marks(s, s.policy);
  EXPECT_EQ(m.high, 20);
  EXPECT_EQ(m.low, 12);
  int compactions = 0;
  int64_t id = 0;
  for (int turn = 0; turn < 40; ++turn) {
    const auto b = builder(s).build("c", "q");
    compactions += b.state.compaction != CompactionReason::kNone;
    provider_.history.push_back({Role::kUser, "q", ++id});
    provider_.history.push_back({Role::kAssistant, "a", ++id});
  }
  EXPECT_GE(compactions, 4);
  EXPECT_LE(compactions, 8);  // one per ~4 turns, not one per turn
}

TEST_F(ContextBuilderTest, RowsDeletedAndTheirIdsReusedStartTheChatOver) {
  // The state says the verbatim part starts after id 100, but the chat's rows were deleted and
  // new ones got ids 1..4 again: without a check they would never be read.
  provider_.state.context.verbatim_after = 100;
  provider_.state.context.compactions = 3;
  for (int i = 1; i <= 4; ++i)
    provider_.history.push_back({i % 2 ? Role::kUser : Role::kAssistant, "new", i});
  const auto b = builder(S("sys", 50, 1000, 0)).build("c", "hi");
  EXPECT_EQ(b.figures.original_count, 4);
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_EQ(b.warnings[0].reason, "state_reset");
  EXPECT_EQ(provider_.saves, 1);
  EXPECT_EQ(provider_.state.context.verbatim_after, 0);
  EXPECT_EQ(provider_.state.context.compactions, 3);
  const auto again = builder(S("sys", 50, 1000, 0)).build("c", "hi");  // settled: no warning
  EXPECT_TRUE(again.warnings.empty());
  EXPECT_EQ(again.figures.original_count, 4);
  EXPECT_EQ(provider_.saves, 1);
}

TEST_F(ContextBuilderTest, ALeadingReplyIsLeftOutWithoutACompaction) {
  provider_.history = {{Role::kAssistant, "Welcome! How can I help?", 1},
                       {Role::kUser, "q1", 2},
                       {Role::kAssistant, "a1", 3}};
  const auto b = builder(S("sys", 50, 1000, 0)).build("c", "q2");
  EXPECT_EQ(b.state.compaction, CompactionReason::kNone);
  EXPECT_EQ(b.figures.dropped_count, 1);
  EXPECT_EQ(b.figures.compressed_count, 2);
  EXPECT_EQ(b.messages[1].role, Role::kUser);  // strict chat templates start on a user turn
  EXPECT_EQ(provider_.saves, 0);
}

TEST_F(ContextBuilderTest, AToolRowIsSentAsMarkedUserTextNotAsAToolMessage) {
  // Without its tool_call_id a `tool` message is refused by OpenAI-compatible servers.
  provider_.history = {{Role::kUser, "look it up", 1},
                       {Role::kTool, R"({"order": 4471, "status": "shipped"})", 2},
                       {Role::kAssistant, "It has shipped.", 3}};
  const auto b = builder(S("sys", 50, 1000, 0)).build("c", "thanks");
  ASSERT_EQ(b.messages.size(), 5u);
  EXPECT_EQ(b.messages[2].role, Role::kUser);
  EXPECT_EQ(b.messages[2].content,
            std::string(kToolOutputHeader) + R"({"order": 4471, "status": "shipped"})");
  for (const auto& m : b.messages) EXPECT_NE(m.role, Role::kTool);
}

}  // namespace
}  // namespace autonous::engine
