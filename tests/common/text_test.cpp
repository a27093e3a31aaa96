#include "internal/common/text.h"

#include <gtest/gtest.h>

namespace autonous::common {
namespace {

TEST(TextTest, TrimRemovesAsciiWhitespaceAtBothEndsOnly) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim("\v\fx\f\v"), "x");
  EXPECT_EQ(trim(" \t\n "), "");
  EXPECT_EQ(trim(""), "");
  // A no-break space (U+00A0) is not ASCII whitespace: kept whole, never split.
  EXPECT_EQ(trim("\xC2\xA0x\xC2\xA0"), "\xC2\xA0x\xC2\xA0");
}

TEST(TextTest, ToLowerAsciiLeavesOtherBytesAlone) {
  EXPECT_EQ(to_lower_ascii("GPT-4o-MINI"), "gpt-4o-mini");
  EXPECT_EQ(to_lower_ascii("\xC3\x89T\xC3\x89"), "\xC3\x89t\xC3\x89");  // ÉTÉ: only the T
}

}  // namespace
}  // namespace autonous::common
