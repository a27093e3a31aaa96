#include "internal/common/utf8.h"

#include <gtest/gtest.h>

namespace autonous::common {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Test, ValidTextComesBackUnchanged) {
  const std::string text = "hello 你好 😀 e\xCC\x81";
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_EQ(sanitize_utf8(text), text);
}

TEST(Utf8Test, ReplacesEachMaximalInvalidSubsequenceWithOneReplacementCharacter) {
  // WHATWG: a truncated 4-byte sequence is one maximal subsequence → one U+FFFD.
  EXPECT_EQ(sanitize_utf8("\xF0\x90\x80"
                          "a"),
            kFffd + "a");
  // A lone continuation byte and an invalid lead byte are one each.
  EXPECT_EQ(sanitize_utf8("\x80"), kFffd);
  EXPECT_EQ(sanitize_utf8("\xFF\xFE"), kFffd + kFffd);
  // Overlong encodings: C0 is never a valid lead, so C0 80 is two.
  EXPECT_EQ(sanitize_utf8("\xC0\x80"), kFffd + kFffd);
  // E0 80 80: E0 needs A0..BF next, so each byte is its own subsequence.
  EXPECT_EQ(sanitize_utf8("\xE0\x80\x80"), kFffd + kFffd + kFffd);
  // Surrogates (ED A0 80) are invalid in UTF-8.
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);
  // Above U+10FFFF.
  EXPECT_EQ(sanitize_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);
  // Truncated at the end of input.
  EXPECT_EQ(sanitize_utf8("ok\xE4\xBD"), "ok" + kFffd);
}

TEST(Utf8Test, SanitizedOutputIsAlwaysValid) {
  std::string all;
  for (int i = 0; i < 256; ++i) {
    all += static_cast<char>(i);
    all += static_cast<char>(255 - i);
  }
  EXPECT_FALSE(is_valid_utf8(all));
  EXPECT_TRUE(is_valid_utf8(sanitize_utf8(all)));
}

TEST(Utf8Test, CountsCodePointsNotBytes) {
  EXPECT_EQ(count_code_points(""), 0u);
  EXPECT_EQ(count_code_points("abc"), 3u);
  EXPECT_EQ(count_code_points("你好"), 2u);
  EXPECT_EQ(count_code_points("😀"), 1u);
  EXPECT_EQ(count_code_points("e\xCC\x81"), 2u);  // e + combining acute: two code points
}

TEST(Utf8Test, PrefixBytesStopsOnCodePointBoundaries) {
  const std::string s = "a你😀b";
  EXPECT_EQ(prefix_bytes(s, 0), 0u);
  EXPECT_EQ(prefix_bytes(s, 1), 1u);
  EXPECT_EQ(prefix_bytes(s, 2), 4u);
  EXPECT_EQ(prefix_bytes(s, 3), 8u);
  EXPECT_EQ(prefix_bytes(s, 4), 9u);
  EXPECT_EQ(prefix_bytes(s, 99), s.size());
}

}  // namespace
}  // namespace autonous::common
