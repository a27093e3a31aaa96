#include "internal/context/context_builder.h"

#include <random>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/common/utf8.h"
#include "internal/context/assembler.h"
#include "internal/context/provider.h"
#include "internal/context/simple_compressor.h"
#include "internal/context/token_counter.h"

namespace autonous::context {
namespace {

using common::Message;
using common::Role;

// An in-memory history: the builder's logic is pure, so it is tested without storage here
// (the SQLite provider has its own tests against a real file).
class VectorProvider final : public Provider {
 public:
  std::vector<Message> get_history(const std::string& chat_id, int limit) override {
    last_chat = chat_id;
    last_limit = limit;
    std::vector<Message> out = history;
    if (static_cast<int>(out.size()) > limit) out.erase(out.begin(), out.end() - limit);
    return out;
  }
  std::vector<Message> history;
  std::string last_chat;
  int last_limit = -1;
};

class ContextBuilderTest : public ::testing::Test {
 protected:
  ContextBuilder builder(ContextSettings s) {
    return ContextBuilder(std::move(s), provider_, compressor_, assembler_, counter_);
  }
  VectorProvider provider_;
  CharsOver4Counter counter_;
  SimpleCompressor compressor_{counter_};
  StandardAssembler assembler_;
};

TEST_F(ContextBuilderTest, AssemblesSystemHistoryAndUser) {
  provider_.history = {{Role::kUser, "q1", 1}, {Role::kAssistant, "a1", 2}};
  const auto b = builder({"sys prompt", 50, 1000, 4000}).build("chat-9", "q2");
  ASSERT_EQ(b.messages.size(), 4u);
  EXPECT_EQ(b.messages[0].content, "sys prompt");
  EXPECT_EQ(b.messages[3].content, "q2");
  EXPECT_EQ(provider_.last_chat, "chat-9");
  EXPECT_EQ(provider_.last_limit, 50);
  EXPECT_EQ(b.original_count, 2);
  EXPECT_EQ(b.compressed_count, 2);
  EXPECT_EQ(b.dropped_count, 0);
  EXPECT_EQ(b.estimated_tokens, counter_.count_prompt(b.messages));
  EXPECT_EQ(b.budget_tokens, 1000);
}

TEST_F(ContextBuilderTest, BudgetBoundsTheWholePromptNotJustHistory) {
  for (int i = 0; i < 40; ++i)
    provider_.history.push_back({Role::kUser, std::string(40, 'h'), i + 1});
  const std::string system(200, 's');  // 50 tokens
  const std::string user(120, 'u');    // 30 tokens
  const auto b = builder({system, 50, 200, 4000}).build("c", user);
  EXPECT_LE(b.estimated_tokens, 200);
  EXPECT_EQ(b.system_tokens, 50);
  EXPECT_EQ(b.user_tokens, 30);
  EXPECT_EQ(b.history_budget_tokens, 120);
  EXPECT_EQ(b.compressed_count, 12);  // 10 tokens each
  EXPECT_EQ(b.dropped_count, 28);
}

TEST_F(ContextBuilderTest, CutsTheUserMessageWhenSystemAndUserAloneDoNotFit) {
  provider_.history = {{Role::kUser, "old", 1}};
  const std::string user(2000, 'u');  // 500 tokens
  const auto b = builder({std::string(200, 's'), 50, 100, 4000}).build("c", user);
  EXPECT_TRUE(b.user_truncated);
  EXPECT_LE(b.estimated_tokens, 100);
  EXPECT_EQ(b.compressed_count, 0);
  ASSERT_EQ(b.messages.size(), 2u);
  EXPECT_NE(b.messages[1].content.find("characters cut]"), std::string::npos);
  const auto figures = nlohmann::json::parse(figures_json(b));
  EXPECT_EQ(figures["user_truncated"], true);
}

TEST_F(ContextBuilderTest, RefusesABudgetTooSmallForTheSystemPrompt) {
  EXPECT_THROW(builder({std::string(400, 's'), 50, 100, 4000}), std::invalid_argument);
  EXPECT_THROW(check_budget({std::string(400, 's'), 50, 110, 4000}, counter_),
               std::invalid_argument);
  EXPECT_NO_THROW(check_budget({std::string(400, 's'), 50, 100 + kMinUserTokens, 4000}, counter_));
}

TEST_F(ContextBuilderTest, HistoryWindowZeroReadsNothing) {
  provider_.history = {{Role::kUser, "old", 1}};
  const auto b = builder({"sys", 0, 1000, 4000}).build("c", "hi");
  EXPECT_EQ(provider_.last_limit, -1);  // never asked
  EXPECT_EQ(b.messages.size(), 2u);
}

TEST_F(ContextBuilderTest, FiguresJsonCarriesTheEventFields) {
  provider_.history = {{Role::kUser, std::string(100, 'x'), 1}};
  const auto b = builder({"sys", 50, 1000, 10}).build("c", "hi");
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

TEST_F(ContextBuilderTest, NeverExceedsTheBudgetOnRandomConversations) {
  std::mt19937 rng(42);
  const std::vector<std::string> alphabet = {
      "a", " ", "\xE4\xBD\xA0", "\xF0\x9F\x98\x80", "e\xCC\x81", "\xFF", "\n"};
  auto random_text = [&](size_t max_units) {
    std::string s;
    const size_t n = std::uniform_int_distribution<size_t>(0, max_units)(rng);
    for (size_t i = 0; i < n; ++i) s += alphabet[rng() % alphabet.size()];
    return s;
  };
  for (int round = 0; round < 300; ++round) {
    provider_.history.clear();
    const int n = static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i)
      provider_.history.push_back(
          {i % 2 ? Role::kAssistant : Role::kUser, random_text(3000), i + 1});
    const std::string system = random_text(200);
    const std::string sys_valid = common::sanitize_utf8(system);
    const int64_t budget = static_cast<int64_t>(counter_.count_text(sys_valid)) + kMinUserTokens +
                           static_cast<int64_t>(rng() % 3000);
    const auto b = builder({system, 50, budget, 1 + static_cast<int64_t>(rng() % 2000)})
                       .build("c", random_text(8000));
    EXPECT_LE(b.estimated_tokens, budget) << "round " << round;
    for (const auto& m : b.messages) EXPECT_TRUE(common::is_valid_utf8(m.content));
    EXPECT_EQ(b.compressed_count + b.dropped_count, b.original_count);
  }
}

}  // namespace
}  // namespace autonous::context
