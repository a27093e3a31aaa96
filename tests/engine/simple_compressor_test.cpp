#include "internal/engine/simple_compressor.h"

#include <gtest/gtest.h>

#include "internal/tokens/token_counter.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

std::vector<Message> history(int n, size_t chars) {
  std::vector<Message> out;
  for (int i = 0; i < n; ++i)
    out.push_back(
        {i % 2 == 0 ? Role::kUser : Role::kAssistant, std::string(chars, 'a' + i % 26), i + 1});
  return out;
}

TokenBudget budget(int64_t max_tokens, int64_t max_chars = 0) {
  TokenBudget b;
  b.max_tokens = max_tokens;
  b.max_chars = max_chars;
  return b;
}

TEST(SimpleCompressorTest, KeepsEverythingThatFitsWithNoLevel) {
  const tokens::CharsOver4Counter counter(3, 3);
  const SimpleCompressor c(counter);
  const Compression out = c.compress(history(4, 40), budget(1000));
  EXPECT_EQ(out.messages.size(), 4u);
  EXPECT_EQ(out.level, Level::kNone);
  EXPECT_EQ(out.rounds, 0);
  EXPECT_EQ(out.tokens, 4 * 13);
  EXPECT_EQ(out.tokens_before, out.tokens);
}

TEST(SimpleCompressorTest, KeepsTheNewestContiguousRunThatFitsAndNeverCutsByLevel) {
  const tokens::CharsOver4Counter counter(3, 3);
  const SimpleCompressor c(counter);
  // Each message costs 13; 40 tokens hold the newest three.
  const Compression out = c.compress(history(10, 40), budget(40));
  ASSERT_EQ(out.messages.size(), 3u);
  EXPECT_EQ(out.messages.front().history_id, 8);
  EXPECT_EQ(out.messages.back().history_id, 10);
  EXPECT_EQ(out.dropped_count, 7);
  EXPECT_EQ(out.cut_count, 0);
  EXPECT_EQ(out.level, Level::kEmergency);
  EXPECT_LE(out.tokens, 40);
}

TEST(SimpleCompressorTest, RepairsUtf8AndCutsEachMessageToTheCharacterCap) {
  const tokens::CharsOver4Counter counter;
  const SimpleCompressor c(counter);
  std::vector<Message> in = {{Role::kUser, std::string("ok \xFF"), 1},
                             {Role::kAssistant, std::string(500, 'x'), 2}};
  const Compression out = c.compress(in, budget(10000, 100));
  ASSERT_EQ(out.messages.size(), 2u);
  EXPECT_EQ(out.messages[0].content, "ok \xEF\xBF\xBD");
  EXPECT_NE(out.messages[1].content.find("characters cut]"), std::string::npos);
  EXPECT_EQ(out.truncated_count, 1);
}

TEST(SimpleCompressorTest, ANewestMessageLargerThanTheBudgetLeavesNothing) {
  const tokens::CharsOver4Counter counter;
  const SimpleCompressor c(counter);
  const Compression out = c.compress(history(3, 400), budget(50));
  EXPECT_TRUE(out.messages.empty());
  EXPECT_EQ(out.tokens, 0);
  EXPECT_EQ(out.dropped_count, 3);
}

}  // namespace
}  // namespace autonous::engine
