#include "internal/tokens/token_counter.h"

#include <gtest/gtest.h>

namespace autonous::tokens {
namespace {

TEST(TokenCounterTest, CharsOver4RoundsUpPerMessage) {
  EXPECT_EQ(estimate_tokens({common::Role::kUser, "", 0}), 0);
  EXPECT_EQ(estimate_tokens({common::Role::kUser, "a", 0}), 1);
  EXPECT_EQ(estimate_tokens({common::Role::kUser, "abcd", 0}), 1);
  EXPECT_EQ(estimate_tokens({common::Role::kUser, "abcde", 0}), 2);
  // Code points, not bytes: 8 Chinese characters (24 bytes) are 2 tokens.
  EXPECT_EQ(estimate_tokens({common::Role::kUser, "你好你好你好你好", 0}), 2);
}

TEST(TokenCounterTest, PromptAddsFramingPerMessageAndPerRequest) {
  class Framed final : public TokenCounter {
   public:
    int64_t count_text(std::string_view t) const override { return static_cast<int64_t>(t.size()); }
    int64_t per_message() const noexcept override { return 3; }
    int64_t per_request() const noexcept override { return 3; }
    std::string_view name() const noexcept override { return "framed"; }
  } framed;
  EXPECT_EQ(framed.count_prompt({{common::Role::kUser, "ab", 0}, {common::Role::kUser, "c", 0}}),
            3 + (2 + 3) + (1 + 3));
}

}  // namespace
}  // namespace autonous::tokens
