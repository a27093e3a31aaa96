#include "internal/context/simple_compressor.h"

#include <gtest/gtest.h>

#include "internal/common/utf8.h"
#include "internal/context/token_counter.h"
#include "internal/context/truncate.h"

namespace autonous::context {
namespace {

using common::Message;
using common::Role;

Message msg(Role r, std::string text) { return Message{r, std::move(text), 0}; }

std::vector<Message> conversation(int n, size_t chars_each) {
  std::vector<Message> out;
  for (int i = 0; i < n; ++i)
    out.push_back(msg(i % 2 == 0 ? Role::kUser : Role::kAssistant,
                      std::to_string(i) + std::string(chars_each - std::to_string(i).size(), 'x')));
  return out;
}

class SimpleCompressorTest : public ::testing::Test {
 protected:
  CharsOver4Counter counter_;
  SimpleCompressor compressor_{counter_};
};

TEST_F(SimpleCompressorTest, KeepsEverythingWhenItFits) {
  const auto in = conversation(6, 40);  // 10 tokens each
  const Compression out = compressor_.compress(in, TokenBudget{60, 4000});
  EXPECT_EQ(out.messages, in);
  EXPECT_EQ(out.tokens, 60);
  EXPECT_EQ(out.dropped_count, 0);
  EXPECT_EQ(out.truncated_count, 0);
}

TEST_F(SimpleCompressorTest, DropsOldestMessagesFirstWhenOverBudget) {
  const auto in = conversation(10, 40);  // 10 tokens each
  const Compression out = compressor_.compress(in, TokenBudget{35, 4000});
  ASSERT_EQ(out.messages.size(), 3u);
  EXPECT_EQ(out.messages.front().content, in[7].content);
  EXPECT_EQ(out.messages.back().content, in[9].content);
  EXPECT_EQ(out.dropped_count, 7);
  EXPECT_EQ(out.tokens, 30);
}

TEST_F(SimpleCompressorTest, KeptHistoryIsTheNewestContiguousRun) {
  // A large message in the middle stops the walk: older small messages are dropped too, even
  // though they would fit, so the prompt never has a gap.
  std::vector<Message> in = {msg(Role::kUser, "old small"),
                             msg(Role::kAssistant, std::string(400, 'b')),
                             msg(Role::kUser, "new 1"), msg(Role::kAssistant, "new 2")};
  const Compression out = compressor_.compress(in, TokenBudget{20, 4000});
  ASSERT_EQ(out.messages.size(), 2u);
  EXPECT_EQ(out.messages[0].content, "new 1");
  EXPECT_EQ(out.dropped_count, 2);
}

TEST_F(SimpleCompressorTest, EmptyHistoryGivesEmptyResult) {
  const Compression out = compressor_.compress({}, TokenBudget{100, 100});
  EXPECT_TRUE(out.messages.empty());
  EXPECT_EQ(out.tokens, 0);
  EXPECT_EQ(out.dropped_count, 0);
}

TEST_F(SimpleCompressorTest, EverythingOverBudgetDropsAll) {
  const auto in = conversation(5, 400);  // 100 tokens each
  const Compression out = compressor_.compress(in, TokenBudget{50, 4000});
  EXPECT_TRUE(out.messages.empty());
  EXPECT_EQ(out.dropped_count, 5);
  const Compression zero = compressor_.compress(in, TokenBudget{0, 4000});
  EXPECT_TRUE(zero.messages.empty());
}

TEST_F(SimpleCompressorTest, CutsLongMessagesOnCodePointBoundariesWithAMarker) {
  struct Case {
    const char* name;
    std::string unit;  // one code point or one grapheme piece
    size_t code_points_per_unit;
  };
  const std::vector<Case> cases = {{"ascii", "a", 1},
                                   {"chinese", "\xE4\xBD\xA0", 1},    // 你
                                   {"emoji", "\xF0\x9F\x98\x80", 1},  // 😀
                                   {"combining", "e\xCC\x81", 2}};    // e + U+0301
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string text;
    for (int i = 0; i < 100; ++i) text += c.unit;
    const size_t total = 100 * c.code_points_per_unit;
    const Compression out = compressor_.compress({msg(Role::kUser, text)}, TokenBudget{10000, 31});
    ASSERT_EQ(out.messages.size(), 1u);
    const std::string& cut = out.messages[0].content;
    EXPECT_TRUE(common::is_valid_utf8(cut));
    EXPECT_EQ(out.truncated_count, 1);
    const std::string marker = cut_marker(total - 31);
    ASSERT_GT(cut.size(), marker.size());
    EXPECT_EQ(cut.substr(cut.size() - marker.size()), marker);
    const std::string head = cut.substr(0, cut.size() - marker.size());
    EXPECT_EQ(common::count_code_points(head), 31u);
    EXPECT_EQ(text.rfind(head, 0), 0u);  // a prefix of the original
  }
}

TEST_F(SimpleCompressorTest, MessageExactlyAtTheLimitIsNotCut) {
  const Compression out =
      compressor_.compress({msg(Role::kUser, std::string(50, 'z'))}, TokenBudget{1000, 50});
  EXPECT_EQ(out.messages[0].content, std::string(50, 'z'));
  EXPECT_EQ(out.truncated_count, 0);
}

TEST_F(SimpleCompressorTest, InvalidUtf8BecomesValidWithReplacementCharacters) {
  const Compression out = compressor_.compress(
      {msg(Role::kUser, "bad \xFF\xFE bytes \xE4\xBD"), msg(Role::kAssistant, "fine")},
      TokenBudget{1000, 4000});
  ASSERT_EQ(out.messages.size(), 2u);
  EXPECT_TRUE(common::is_valid_utf8(out.messages[0].content));
  EXPECT_EQ(out.messages[0].content, "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes \xEF\xBF\xBD");
}

TEST_F(SimpleCompressorTest, CountsOnlyKeptMessagesAsTruncated) {
  std::vector<Message> in = {msg(Role::kUser, std::string(500, 'a')),
                             msg(Role::kAssistant, std::string(500, 'b')),
                             msg(Role::kUser, "short")};
  const Compression out = compressor_.compress(in, TokenBudget{40, 100});
  // Newest "short" (2 tokens) + one cut message (~31 tokens) fit in 40; the oldest is dropped.
  EXPECT_EQ(out.messages.size(), 2u);
  EXPECT_EQ(out.truncated_count, 1);
  EXPECT_EQ(out.dropped_count, 1);
  EXPECT_LE(out.tokens, 40);
}

}  // namespace
}  // namespace autonous::context
