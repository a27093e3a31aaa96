#include "internal/tokens/truncate.h"

#include <string>

#include <gtest/gtest.h>

#include "internal/tokens/token_counter.h"

namespace autonous::tokens {
namespace {

using tokens::CharsOver4Counter;

TEST(TruncateTest, CutToTokensFindsTheLongestHeadThatFits) {
  const CharsOver4Counter counter;
  const std::string text(1000, 'q');
  const std::string cut = cut_to_tokens(text, 50, counter);
  EXPECT_LE(counter.count_text(cut), 50);
  EXPECT_GT(counter.count_text(cut), 45);
  EXPECT_NE(cut.find("characters cut]"), std::string::npos);
  EXPECT_EQ(cut_to_tokens("short", 50, counter), "short");
  EXPECT_EQ(cut_to_tokens(text, 2, counter), "");  // not even the marker fits
}

TEST(TruncateTest, AMiddleCutKeepsBothEndsAndATailIsWhatIsLeftWhenNoMarkerFits) {
  const CharsOver4Counter counter;
  const std::string text = "HEAD" + std::string(2000, 'q') + "\u00e9 is this the question?";
  const std::string cut = cut_middle_to_tokens(text, 60, counter.count_text(text), counter);
  EXPECT_LE(counter.count_text(cut), 60);
  EXPECT_EQ(cut.rfind("HEAD", 0), 0u);
  EXPECT_NE(cut.find("is this the question?"), std::string::npos);
  EXPECT_NE(cut.find("characters cut"), std::string::npos);
  EXPECT_EQ(cut_middle_to_tokens(text, 3, counter.count_text(text), counter), "");
  // The tail alone, cut on a code point: what fits of the end, without a marker.
  const std::string tail = tail_to_tokens(text, 4, counter);
  EXPECT_LE(counter.count_text(tail), 4);
  EXPECT_FALSE(tail.empty());
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
  EXPECT_EQ(tail_to_tokens("short", 50, counter), "short");
  EXPECT_EQ(tail_to_tokens(text, 0, counter), "");
  // A multibyte character at the edge is kept whole or left out, never split.
  const std::string wide = "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9";
  const std::string t = tail_to_tokens(wide, 2, counter);
  EXPECT_EQ(t.size() % 2, 0u);
}

}  // namespace
}  // namespace autonous::tokens
