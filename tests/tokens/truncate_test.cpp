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

}  // namespace
}  // namespace autonous::tokens
