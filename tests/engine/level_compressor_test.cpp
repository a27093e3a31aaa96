#include "internal/engine/level_compressor.h"

#include <random>

#include <gtest/gtest.h>

#include "internal/common/utf8.h"
#include "internal/tokens/token_counter.h"
#include "internal/tokens/truncate.h"

namespace autonous::engine {
namespace {

using common::Message;
using common::Role;

Message msg(Role r, std::string text) { return Message{r, std::move(text), 0}; }

// History budget `tokens`, nothing fixed, default thresholds.
TokenBudget B(int64_t tokens, int64_t max_chars) {
  TokenBudget b;
  b.max_tokens = tokens;
  b.max_chars = max_chars;
  return b;
}

std::vector<Message> conversation(int n, size_t chars_each) {
  std::vector<Message> out;
  for (int i = 0; i < n; ++i)
    out.push_back(msg(i % 2 == 0 ? Role::kUser : Role::kAssistant,
                      std::to_string(i) + std::string(chars_each - std::to_string(i).size(), 'x')));
  return out;
}

class LevelCompressorTest : public ::testing::Test {
 protected:
  tokens::CharsOver4Counter counter_;
  LevelCompressor compressor_{counter_};
};

TEST_F(LevelCompressorTest, KeepsEverythingWhenItFits) {
  const auto in = conversation(6, 40);                             // 10 tokens each
  const Compression out = compressor_.compress(in, B(100, 4000));  // usage 0.60: no level
  EXPECT_EQ(out.messages, in);
  EXPECT_EQ(out.tokens, 60);
  EXPECT_EQ(out.dropped_count, 0);
  EXPECT_EQ(out.truncated_count, 0);
}

TEST_F(LevelCompressorTest, DropsOldestMessagesFirstWhenOverBudget) {
  const auto in = conversation(10, 40);  // 10 tokens each
  const Compression out = compressor_.compress(in, B(35, 4000));
  // Over the budget: emergency drops the oldest down to the target (0.60 of 35: 21 tokens).
  ASSERT_EQ(out.messages.size(), 2u);
  EXPECT_EQ(out.messages.front().content, in[8].content);
  EXPECT_EQ(out.messages.back().content, in[9].content);
  EXPECT_EQ(out.dropped_count, 8);
  EXPECT_EQ(out.tokens, 20);
}

TEST_F(LevelCompressorTest, KeptHistoryIsTheNewestContiguousRun) {
  // A large message in the middle stops the walk: older small messages are dropped too, even
  // though they would fit, so the prompt never has a gap.
  std::vector<Message> in = {msg(Role::kUser, "old small"),
                             msg(Role::kAssistant, std::string(400, 'b')),
                             msg(Role::kUser, "new 1"), msg(Role::kAssistant, "new 2")};
  const Compression out = compressor_.compress(in, B(20, 4000));
  ASSERT_EQ(out.messages.size(), 2u);
  EXPECT_EQ(out.messages[0].content, "new 1");
  EXPECT_EQ(out.dropped_count, 2);
}

TEST_F(LevelCompressorTest, EmptyHistoryGivesEmptyResult) {
  const Compression out = compressor_.compress({}, B(100, 100));
  EXPECT_TRUE(out.messages.empty());
  EXPECT_EQ(out.tokens, 0);
  EXPECT_EQ(out.dropped_count, 0);
}

TEST_F(LevelCompressorTest, EverythingOverBudgetKeepsTheNewestCutToFitOrNothing) {
  const auto in = conversation(5, 400);  // 100 tokens each
  const Compression out = compressor_.compress(in, B(80, 4000));
  // Cut head + tail to the oversized cap (32 tokens), the newest fits the target (48); the rest
  // are dropped.
  ASSERT_EQ(out.messages.size(), 1u);
  EXPECT_EQ(out.cut_count, 1);
  EXPECT_EQ(out.dropped_count, 4);
  EXPECT_LE(out.tokens, 48);
  const Compression zero = compressor_.compress(in, B(0, 4000));
  EXPECT_TRUE(zero.messages.empty());
  EXPECT_EQ(zero.tokens, 0);
}

TEST_F(LevelCompressorTest, CutsLongMessagesOnCodePointBoundariesWithAMarker) {
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
    const Compression out = compressor_.compress({msg(Role::kUser, text)}, B(10000, 31));
    ASSERT_EQ(out.messages.size(), 1u);
    const std::string& cut = out.messages[0].content;
    EXPECT_TRUE(common::is_valid_utf8(cut));
    EXPECT_EQ(out.truncated_count, 1);
    const std::string marker = tokens::cut_marker(total - 31);
    ASSERT_GT(cut.size(), marker.size());
    EXPECT_EQ(cut.substr(cut.size() - marker.size()), marker);
    const std::string head = cut.substr(0, cut.size() - marker.size());
    EXPECT_EQ(common::count_code_points(head), 31u);
    EXPECT_EQ(text.rfind(head, 0), 0u);  // a prefix of the original
  }
}

TEST_F(LevelCompressorTest, MessageExactlyAtTheLimitIsNotCut) {
  const Compression out =
      compressor_.compress({msg(Role::kUser, std::string(50, 'z'))}, B(1000, 50));
  EXPECT_EQ(out.messages[0].content, std::string(50, 'z'));
  EXPECT_EQ(out.truncated_count, 0);
}

TEST_F(LevelCompressorTest, InvalidUtf8BecomesValidWithReplacementCharacters) {
  const Compression out = compressor_.compress(
      {msg(Role::kUser, "bad \xFF\xFE bytes \xE4\xBD"), msg(Role::kAssistant, "fine")},
      B(1000, 4000));
  ASSERT_EQ(out.messages.size(), 2u);
  EXPECT_TRUE(common::is_valid_utf8(out.messages[0].content));
  EXPECT_EQ(out.messages[0].content, "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes \xEF\xBF\xBD");
}

TEST_F(LevelCompressorTest, CountsOnlyKeptMessagesAsTruncated) {
  std::vector<Message> in = {msg(Role::kUser, std::string(500, 'a')),
                             msg(Role::kAssistant, std::string(500, 'b')),
                             msg(Role::kUser, "short")};
  const Compression out = compressor_.compress(in, B(60, 100));
  // Each long one is cut to 100 characters (~31 tokens): over 60, so emergency drops to the
  // target (36): newest "short" (2 tokens) + one cut message stay; the oldest is dropped.
  EXPECT_EQ(out.messages.size(), 2u);
  EXPECT_EQ(out.truncated_count, 1);
  EXPECT_EQ(out.dropped_count, 1);
  EXPECT_LE(out.tokens, 36);
}

// Levels. Budget: no fixed part, 1000 history tokens, so usage = history tokens / 1000.
// Messages of exactly `tokens` tokens each under chars/4 with no framing.
Message sized(int64_t tokens, char fill = 'x', Role r = Role::kUser) {
  return msg(r, std::string(static_cast<size_t>(tokens) * 4, fill));
}

TokenBudget thousand() { return TokenBudget{1000, 1'000'000, 0, Thresholds{}, Level::kNone}; }

TEST(LevelTest, ClassifyBoundariesAreInclusiveFromBelow) {
  const Thresholds t;
  EXPECT_EQ(classify(0.0, t), Level::kNone);
  EXPECT_EQ(classify(0.6999, t), Level::kNone);
  EXPECT_EQ(classify(0.70, t), Level::kNormal);
  EXPECT_EQ(classify(0.8499, t), Level::kNormal);
  EXPECT_EQ(classify(0.85, t), Level::kAggressive);
  EXPECT_EQ(classify(0.9499, t), Level::kAggressive);
  EXPECT_EQ(classify(0.95, t), Level::kEmergency);
  EXPECT_EQ(classify(7.0, t), Level::kEmergency);
}

TEST_F(LevelCompressorTest, UnderSoftNothingChanges) {
  const std::vector<Message> in = {sized(300), sized(399)};  // 0.699
  const Compression out = compressor_.compress(in, thousand());
  EXPECT_EQ(out.level, Level::kNone);
  EXPECT_EQ(out.rounds, 0);
  EXPECT_EQ(out.messages, in);
  EXPECT_EQ(out.tokens_before, 699);
  EXPECT_EQ(out.tokens, 699);
}

TEST_F(LevelCompressorTest, AtSoftOversizedMessagesAreCutHeadAndTailOldestFirstDownToTarget) {
  // 0.70: three oversized messages (cap 1000/16 = 62 tokens) and small ones.
  std::string first = "HEAD1" + std::string(200 * 4 - 10, 'a') + "TAIL1";
  std::string second = "HEAD2" + std::string(200 * 4 - 10, 'b') + "TAIL2";
  const std::vector<Message> in = {msg(Role::kUser, first), msg(Role::kAssistant, second),
                                   sized(200, 'c'), sized(100, 'd')};
  const Compression out = compressor_.compress(in, thousand());
  EXPECT_EQ(out.level, Level::kNormal);
  EXPECT_EQ(out.rounds, 1);
  ASSERT_EQ(out.messages.size(), 4u);  // nothing dropped at normal
  // The oldest went from 200 to at most 62 tokens: 700 − 138 = 562 <= 600, so the second
  // oversized message and the newer ones were left alone.
  EXPECT_EQ(out.cut_count, 1);
  EXPECT_EQ(out.truncated_count, 1);
  const std::string& cut = out.messages[0].content;
  EXPECT_EQ(cut.rfind("HEAD1", 0), 0u);
  EXPECT_EQ(cut.substr(cut.size() - 5), "TAIL1");
  EXPECT_NE(cut.find("characters cut \xE2\x80\xA6]"), std::string::npos);
  EXPECT_LE(counter_.count_text(cut), oversized_tokens(1000));
  EXPECT_GT(counter_.count_text(cut), oversized_tokens(1000) * 9 / 10);
  EXPECT_EQ(out.messages[1].content, second);
  EXPECT_LE(out.tokens, 600);
  EXPECT_EQ(out.tokens_before, 700);
}

TEST_F(LevelCompressorTest, NormalWithoutOversizedMessagesKeepsEverything) {
  std::vector<Message> in;
  for (int i = 0; i < 16; ++i) in.push_back(sized(50));  // 0.80, none over 62
  const Compression out = compressor_.compress(in, thousand());
  EXPECT_EQ(out.level, Level::kNormal);
  EXPECT_EQ(out.messages, in);
  EXPECT_EQ(out.cut_count, 0);
  EXPECT_EQ(out.dropped_count, 0);
}

TEST_F(LevelCompressorTest, AtWarnTheOldestHistoryIsDroppedDownToTheTarget) {
  std::vector<Message> in;
  for (int i = 0; i < 17; ++i) in.push_back(sized(50, static_cast<char>('a' + i)));  // 0.85
  const Compression out = compressor_.compress(in, thousand());
  EXPECT_EQ(out.level, Level::kAggressive);
  EXPECT_EQ(out.tokens, 600);  // 12 newest
  EXPECT_EQ(out.dropped_count, 5);
  EXPECT_EQ(out.messages.front(), in[5]);
  EXPECT_EQ(out.messages.back(), in[16]);
}

TEST_F(LevelCompressorTest, JustUnderWarnDoesNotDrop) {
  std::vector<Message> in;
  for (int i = 0; i < 16; ++i) in.push_back(sized(50));
  in.push_back(sized(49));  // 0.849
  const Compression out = compressor_.compress(in, thousand());
  EXPECT_EQ(out.level, Level::kNormal);
  EXPECT_EQ(out.dropped_count, 0);
}

TEST_F(LevelCompressorTest, AtHardTheOldestAreDroppedToTheTargetLikeAggressive) {
  std::vector<Message> in;
  for (int i = 0; i < 19; ++i) in.push_back(sized(50, static_cast<char>('a' + i)));  // 0.95
  Compression out = compressor_.compress(in, thousand());
  EXPECT_EQ(out.level, Level::kEmergency);
  // Monotone: emergency keeps no more than aggressive would (down to the 0.60 target).
  EXPECT_EQ(out.tokens, 600);
  EXPECT_EQ(out.dropped_count, 7);
  EXPECT_TRUE(out.hard_truncated);
  in.push_back(sized(50, 'y'));
  in.push_back(sized(50, 'z'));  // 1.05
  out = compressor_.compress(in, thousand());
  EXPECT_EQ(out.level, Level::kEmergency);
  EXPECT_EQ(out.tokens, 600);
  EXPECT_EQ(out.dropped_count, 9);
  EXPECT_EQ(out.messages.back(), in.back());
}

TEST_F(LevelCompressorTest, LevelsAreMonotoneMorePressureNeverKeepsMore) {
  std::mt19937 rng(20261122);
  for (int round = 0; round < 300; ++round) {
    std::vector<Message> in;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i)
      in.push_back(sized(static_cast<int64_t>(1 + rng() % 200), static_cast<char>('a' + i % 26)));
    int64_t previous = INT64_MAX;
    for (const Level level :
         {Level::kNone, Level::kNormal, Level::kAggressive, Level::kEmergency}) {
      TokenBudget b = thousand();
      b.min_level = level;
      const Compression out = compressor_.compress(in, b);
      ASSERT_LE(out.tokens, 1000);
      ASSERT_LE(out.tokens, previous) << "round " << round << " level " << to_string(level);
      previous = out.tokens;
    }
  }
}

TEST_F(LevelCompressorTest, UnderPressureOversizedMessagesAreCutBeforeOlderOnesAreDropped) {
  // Emergency includes normal's cuts: an oversized message is cut (oldest first), so more of
  // the conversation stays than dropping alone would keep.
  std::vector<Message> in = {sized(40, 'a'), sized(400, 'b'), sized(400, 'c'), sized(400, 'd')};
  const Compression out = compressor_.compress(in, thousand());  // 1.24
  EXPECT_EQ(out.level, Level::kEmergency);
  EXPECT_EQ(out.cut_count, 2);  // 40 + 62 + 62 + 400 <= 600: the newest stays whole
  EXPECT_EQ(out.dropped_count, 0);
  EXPECT_EQ(out.messages.back(), in.back());
  EXPECT_LE(out.tokens, 600);
}

TEST_F(LevelCompressorTest, FixedPartCountsTowardsUsage) {
  // 400 fixed + 300 history of a 1000 budget: 0.70, normal.
  const Compression out = compressor_.compress(
      {sized(300)}, TokenBudget{600, 1'000'000, 400, Thresholds{}, Level::kNone});
  EXPECT_EQ(out.level, Level::kNormal);
  EXPECT_EQ(out.cut_count, 1);  // 300 > 62: cut until 400 + history <= 600
  EXPECT_LE(out.tokens, 200);
}

TEST_F(LevelCompressorTest, MinLevelForcesHarderCompression) {
  std::vector<Message> in;
  for (int i = 0; i < 4; ++i) in.push_back(sized(50));  // 0.20
  TokenBudget b = thousand();
  b.min_level = Level::kAggressive;
  const Compression out = compressor_.compress(in, b);
  EXPECT_EQ(out.level, Level::kAggressive);
  EXPECT_EQ(out.dropped_count, 0);  // already under the target
  EXPECT_EQ(out.rounds, 1);
}

TEST_F(LevelCompressorTest, CustomThresholdsMoveTheBoundaries) {
  TokenBudget b = thousand();
  b.thresholds = Thresholds{0.5, 0.6, 0.9, 0.3};
  std::vector<Message> in;
  for (int i = 0; i < 12; ++i) in.push_back(sized(50));  // 0.60: aggressive under these
  const Compression out = compressor_.compress(in, b);
  EXPECT_EQ(out.level, Level::kAggressive);
  EXPECT_EQ(out.tokens, 300);
}

}  // namespace
}  // namespace autonous::engine
