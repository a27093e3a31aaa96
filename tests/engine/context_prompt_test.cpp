// The prompt's assembly and what is joined into its user message, on their own
// (context_prompt.h).
#include "internal/engine/context_prompt.h"

#include <string>

#include <gtest/gtest.h>

#include "internal/engine/assembler.h"
#include "internal/engine/summary_compactor.h"
#include "internal/tokens/token_counter.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

class ContextPromptTest : public ::testing::Test {
 protected:
  ContextPromptTest() {
    ends_.system = Message(Role::kSystem, "You are terse.");
    ends_.user = Message(Role::kUser, "And the capital of Spain?");
    ends_.budget_tokens = 1000;
    kept_ = {Message(Role::kUser, "Capital of France?", 1), Message(Role::kAssistant, "Paris.", 2)};
  }
  Prompt assemble(std::optional<Summary> summary = std::nullopt) const {
    return assemble_prompt(assembler_, ends_, kept_, summary, counter_);
  }
  Ends ends_;
  std::vector<Message> kept_;
  StandardAssembler assembler_;
  tokens::CharsOver4Counter counter_{tokens::kFramingPerMessage, tokens::kFramingPerRequest};
};

TEST_F(ContextPromptTest, SystemHistoryAndUserInOrderCountedAsAWhole) {
  const Prompt p = assemble();
  ASSERT_EQ(p.messages.size(), 4u);
  EXPECT_EQ(p.messages[0].content, "You are terse.");
  EXPECT_EQ(p.messages[1].history_id, 1);
  EXPECT_EQ(p.messages[3].content, ends_.user.content);
  EXPECT_EQ(p.tokens, counter_.count_prompt(p.messages));
  EXPECT_EQ(p.budget, 1000);
  EXPECT_EQ(p.history, kept_);
}

TEST_F(ContextPromptTest, TheSummaryLeadsTheFirstKeptMessageOrTheNewOneWhenNoneIsKept) {
  Summary s;
  s.text = "They spoke of capitals.";
  Prompt p = assemble(s);
  EXPECT_EQ(p.messages[1].content.rfind(summary_block(s.text), 0), 0u);
  EXPECT_EQ(p.history.front().content, p.messages[1].content);  // the history as placed
  kept_.clear();
  p = assemble(s);
  ASSERT_EQ(p.messages.size(), 2u);
  EXPECT_EQ(p.messages[1].content, summary_block(s.text) + ends_.user.content);
}

TEST_F(ContextPromptTest, ABlockIsJoinedBeforeTheSuffixOnlyWhenTheRecountFits) {
  ends_.user.content = "[Task]\nWhat now?\n\n[Output]\nAnswer.";
  ends_.suffix = std::string("\n\n[Output]\nAnswer.").size();
  Prompt p = assemble();
  const int64_t before = p.tokens;
  const std::optional<int64_t> added = join_into_user(p, ends_, true, "E1", counter_);
  ASSERT_TRUE(added);
  EXPECT_EQ(p.messages.back().content,
            "[Task]\nWhat now?" + std::string(kEvidenceSection) + "E1\n\n[Output]\nAnswer.");
  EXPECT_EQ(p.tokens, before + *added);
  EXPECT_EQ(p.tokens, counter_.count_prompt(p.messages));
  // Over the budget: nothing changes.
  p.budget = p.tokens + 2;
  const Prompt unchanged = p;
  EXPECT_FALSE(join_into_user(p, ends_, false, std::string(400, 'z'), counter_));
  EXPECT_EQ(p.messages, unchanged.messages);
  EXPECT_EQ(p.tokens, unchanged.tokens);
}

TEST_F(ContextPromptTest, CustomBlocksTakeTheRoomLeftAndGiveWayToACutUserMessage) {
  const std::vector<CustomBlock> blocks = {{1, "style", "Use metric units."}};
  Prompt p = assemble();
  CustomStep s = add_custom(p, ends_, blocks, /*user_truncated=*/true, false, counter_);
  EXPECT_TRUE(s.fit.ids.empty());
  EXPECT_FALSE(s.warning);
  s = add_custom(p, ends_, blocks, false, false, counter_);
  EXPECT_EQ(s.fit.ids, (std::vector<int64_t>{1}));
  EXPECT_TRUE(s.fit.text.empty());  // the prompt holds it
  EXPECT_NE(p.messages.back().content.find("Use metric units."), std::string::npos);
  EXPECT_EQ(p.tokens, counter_.count_prompt(p.messages));
  // No room: left out, with a warning.
  Prompt full = assemble();
  full.budget = full.tokens;
  s = add_custom(full, ends_, blocks, false, false, counter_);
  EXPECT_EQ(s.fit.left_out, 1);
  ASSERT_TRUE(s.warning);
  EXPECT_EQ(s.warning->reason, "custom_left_out");
}

}  // namespace
}  // namespace autonous::engine
