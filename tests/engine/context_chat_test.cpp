// The chat a turn starts from, on its own (context_chat.h).
#include "internal/engine/context_chat.h"

#include <gtest/gtest.h>

#include "internal/tokens/token_counter.h"

namespace autonous::engine {
namespace {

class ContextChatTest : public ::testing::Test {
 protected:
  ChatStart start(const ChatState& stored, bool has_store = true) const {
    return start_chat(settings_, stored, counter_, has_store);
  }
  ContextSettings settings_ = [] {
    ContextSettings s;
    s.policy.max_tokens = 4000;
    return s;
  }();
  tokens::CharsOver4Counter counter_{tokens::kFramingPerMessage, tokens::kFramingPerRequest};
};

TEST_F(ContextChatTest, WithoutSettingsOfItsOwnTheEnvironmentsPolicyAndTheStoredState) {
  ChatState stored;
  stored.cleared_through = 7;
  stored.context = {.chain_start = 7, .verbatim_after = 40, .compactions = 3, .cut_through = 52};
  stored.pins = {"likes tea"};
  stored.blocks = {{"system", "abc", 10, 0}};
  const ChatStart s = start(stored);
  EXPECT_EQ(s.chat.policy.max_tokens, 4000);
  EXPECT_FALSE(s.chat.own_settings);
  EXPECT_EQ(s.chat.cleared_through, 7);
  EXPECT_EQ(s.state, stored.context);
  EXPECT_EQ(s.chat.pins, stored.pins);
  EXPECT_EQ(s.chat.blocks, stored.blocks);
  EXPECT_TRUE(s.warnings.empty());
}

TEST_F(ContextChatTest, TheChatsOwnSettingsGoOverTheEnvironments) {
  ChatState stored;
  stored.settings_json = R"({"max_tokens": 3000, "strategy": "summarize"})";
  const ChatStart s = start(stored);
  EXPECT_TRUE(s.chat.own_settings);
  EXPECT_EQ(s.chat.policy.max_tokens, 3000);
  EXPECT_EQ(s.chat.strategy, Strategy::kSummarize);
  EXPECT_EQ(s.chat.requested_strategy, Strategy::kSummarize);
  EXPECT_TRUE(s.warnings.empty());
}

TEST_F(ContextChatTest, BadStoredSettingsAreIgnoredWithAWarningAndNeverStopTheTurn) {
  for (const char* bad : {R"({"strategy": "psychic"})", R"({"max_tokens": 5})", "{not json"}) {
    ChatState stored;
    stored.settings_json = bad;
    const ChatStart s = start(stored);
    EXPECT_FALSE(s.chat.own_settings) << bad;
    EXPECT_EQ(s.chat.policy.max_tokens, 4000) << bad;
    ASSERT_EQ(s.warnings.size(), 1u) << bad;
    EXPECT_EQ(s.warnings[0].reason, "bad_chat_settings") << bad;
  }
}

TEST_F(ContextChatTest, AToolListOutlivesTheChatsOtherBadSettingsAndABadListOffersNone) {
  const std::pair<const char*, ToolNames> cases[] = {
      {R"({"max_tokens": 5, "tools": ["lookup"]})", std::vector<std::string>{"lookup"}},
      {R"({"strategy": "psychic", "tools": []})", std::vector<std::string>{}},
      {R"({"tools": ["a b"]})", std::vector<std::string>{}},
      {R"({"tools": "lookup"})", std::vector<std::string>{}},
      {R"({"tools": ["lookup"], "max_tokens": 5)", std::vector<std::string>{}},  // not JSON
      {R"({"max_tokens": 5, "note": "tools"})", std::nullopt}};
  for (const auto& [json, tools] : cases) {
    ChatState stored;
    stored.settings_json = json;
    const ChatStart s = start(stored);
    EXPECT_EQ(s.chat.policy.max_tokens, 4000) << json;
    EXPECT_EQ(s.chat.policy.tools, tools) << json;
    ASSERT_EQ(s.warnings.size(), 1u) << json;
    EXPECT_EQ(s.warnings[0].reason, "bad_chat_settings") << json;
  }
}

// #31: a chat's own model is named to the caller before the budget is checked (its counter is
// switched in), keeps its budget, and outlives the chat's other bad settings; a bad model name
// falls back to the environment's model.
TEST_F(ContextChatTest, AChatsModelIsNamedFirstAndOutlivesItsOtherBadSettings) {
  settings_.model = "gpt-4o-mini";
  std::vector<std::string> named;
  const auto on_model = [&named](const std::string& m) { named.push_back(m); };
  ChatState stored;
  stored.settings_json = R"({"model":"gpt-4"})";
  ChatStart s = start_chat(settings_, stored, counter_, true, on_model);
  EXPECT_EQ(named, std::vector<std::string>{"gpt-4"});
  EXPECT_EQ(s.chat.policy.model, "gpt-4");
  EXPECT_EQ(s.chat.policy.max_tokens, 8192 - 1024);
  EXPECT_TRUE(s.warnings.empty());
  // Thresholds out of order: ignored with a warning, the model (and its budget) kept.
  named.clear();
  stored.settings_json = R"({"model":"gpt-4","soft":0.9,"warn":0.8})";
  s = start_chat(settings_, stored, counter_, true, on_model);
  EXPECT_EQ(named, std::vector<std::string>{"gpt-4"});
  EXPECT_EQ(s.chat.policy.model, "gpt-4");
  EXPECT_EQ(s.chat.policy.max_tokens, 8192 - 1024);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].message.find("the chat's model"), std::string::npos);
  // A bad name: the environment's model; a model equal to it: nothing to switch.
  named.clear();
  stored.settings_json = R"({"model":"two words"})";
  s = start_chat(settings_, stored, counter_, true, on_model);
  EXPECT_TRUE(named.empty());
  EXPECT_FALSE(s.chat.policy.model.has_value());
  stored.settings_json = R"({"model":"gpt-4o-mini"})";
  s = start_chat(settings_, stored, counter_, true, on_model);
  EXPECT_TRUE(named.empty());
}

TEST_F(ContextChatTest, SummarizeWithoutASummaryStoreRunsTokenBudgetAndSaysSo) {
  settings_.policy.strategy = Strategy::kSummarize;
  const ChatStart s = start(ChatState{}, /*has_store=*/false);
  EXPECT_EQ(s.chat.requested_strategy, Strategy::kSummarize);
  EXPECT_EQ(s.chat.strategy, Strategy::kTokenBudget);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0].reason, "summarize_unavailable");
  EXPECT_EQ(start(ChatState{}, /*has_store=*/true).chat.strategy, Strategy::kSummarize);
}

TEST_F(ContextChatTest, AStateFromBeforeTheLatestClearPointIsSetAsideForAFreshOne) {
  ChatState stored;
  stored.cleared_through = 90;
  stored.context = {.chain_start = 0, .verbatim_after = 60, .compactions = 4, .cut_through = 80};
  const ChatStart s = start(stored);
  EXPECT_EQ(s.state, (ContextState{.chain_start = 90, .verbatim_after = 90}));
}

}  // namespace
}  // namespace autonous::engine
