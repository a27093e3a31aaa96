// The finished prompt's blocks and the delta builder, on their own (context_blocks.h).
#include "internal/engine/context_blocks.h"

#include <string>

#include <gtest/gtest.h>

#include "internal/tokens/token_counter.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

class ContextBlocksTest : public ::testing::Test {
 protected:
  ContextBlocksTest() {
    ends_.system = Message(Role::kSystem, "You are terse.\n<pinned_facts>tea</pinned_facts>");
    ends_.pins_bytes = std::string("\n<pinned_facts>tea</pinned_facts>").size();
    ends_.system_tokens = 20;
    ends_.pinned_tokens = 8;
    ends_.pins = 1;
    ends_.user_tokens = 9;
    history_ = {Message(Role::kUser, "one", 11), Message(Role::kAssistant, "two", 12)};
    summary_ = {.used = true, .id = 4, .tokens = 30};
  }
  PromptContents contents() const { return {history_, 40, summary_, evidence_, custom_}; }
  Ends ends_;
  std::vector<Message> history_;
  SummaryInUse summary_;
  recall::Evidence evidence_;
  CustomFit custom_;
  tokens::CharsOver4Counter counter_{tokens::kFramingPerMessage, tokens::kFramingPerRequest};
};

TEST_F(ContextBlocksTest, TheBlocksInPromptOrderWithWhatEachCostsAndHolds) {
  recall::RecallItem item;
  item.message.history_id = 3;
  evidence_.items = {item};
  evidence_.tokens = 25;
  custom_.ids = {7};
  custom_.tokens = 6;
  const std::vector<Block> b = describe_blocks(ends_, contents());
  std::vector<std::string> names;
  for (const Block& x : b) names.push_back(x.name);
  EXPECT_EQ(names, (std::vector<std::string>{"system", "pinned", "summary", "history", "user",
                                             "evidence", "custom"}));
  EXPECT_EQ(b[0].tokens, 12);
  EXPECT_EQ(b[3].ids, (std::vector<int64_t>{11, 12}));
  EXPECT_EQ(b[3].count, 2);
  EXPECT_EQ(b[5].ids, (std::vector<int64_t>{3}));
  EXPECT_TRUE(b[3].stable);
  EXPECT_FALSE(b[4].stable);
}

TEST_F(ContextBlocksTest, AnUnchangedPrefixIsReusedAndTheGrownHistoryCachesWhatTheLastPromptHad) {
  const Delta first = compute_delta(ends_, contents(), {}, counter_);
  EXPECT_EQ(first.changed, (std::vector<std::string>{"system", "pinned", "summary", "history"}));
  EXPECT_EQ(first.predicted_cached_tokens, 0);
  history_.emplace_back(Role::kUser, "three", 13);
  const Delta next = compute_delta(ends_, contents(), first.records, counter_);
  EXPECT_EQ(next.reused, (std::vector<std::string>{"system", "pinned", "summary", "history"}));
  EXPECT_EQ(next.predicted_cached_tokens,
            12 + 8 + 30 + 40 - counter_.count_message(history_.back()));
}

TEST_F(ContextBlocksTest, AfterAChangedBlockNothingIsCachedAndAMovedBlockIsNotReused) {
  const Delta first = compute_delta(ends_, contents(), {}, counter_);
  summary_.id = 5;  // a new summary: the history after it is not a cached prefix
  Delta next = compute_delta(ends_, contents(), first.records, counter_);
  EXPECT_EQ(next.changed, (std::vector<std::string>{"summary"}));
  EXPECT_EQ(next.predicted_cached_tokens, 12 + 8);
  // The pins went: every block after the system prompt moved.
  summary_.id = 4;
  ends_.pins = 0;
  ends_.pinned_tokens = 0;
  ends_.system.content = "You are terse.";
  ends_.pins_bytes = 0;
  next = compute_delta(ends_, contents(), first.records, counter_);
  EXPECT_EQ(next.reused, (std::vector<std::string>{"system"}));
  EXPECT_EQ(next.changed, (std::vector<std::string>{"summary", "history"}));
}

}  // namespace
}  // namespace autonous::engine
