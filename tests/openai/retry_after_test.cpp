#include "internal/openai/retry_after.h"

#include <gtest/gtest.h>

namespace autonous::openai {
namespace {

using std::chrono::milliseconds;

const auto kNow =
    std::chrono::system_clock::from_time_t(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT

TEST(RetryAfterTest, ReadsSecondsMillisecondsAndDates) {
  EXPECT_EQ(parse_retry_after({{"retry-after", "3"}}, kNow), milliseconds(3000));
  EXPECT_EQ(parse_retry_after({{"retry-after", "0.5"}}, kNow), milliseconds(500));
  EXPECT_EQ(parse_retry_after({{"retry-after-ms", "250"}}, kNow), milliseconds(250));
  EXPECT_EQ(parse_retry_after({{"retry-after", "Wed, 21 Oct 2015 07:28:10 GMT"}}, kNow),
            milliseconds(10000));
}

TEST(RetryAfterTest, MillisecondsHeaderWins) {
  EXPECT_EQ(parse_retry_after({{"retry-after", "9"}, {"retry-after-ms", "100"}}, kNow),
            milliseconds(100));
}

TEST(RetryAfterTest, PastDatesMeanNowAndGarbageMeansUnknown) {
  EXPECT_EQ(parse_retry_after({{"retry-after", "Wed, 21 Oct 2015 07:00:00 GMT"}}, kNow),
            milliseconds(0));
  EXPECT_EQ(parse_retry_after({{"retry-after", "soon"}}, kNow), std::nullopt);
  EXPECT_EQ(parse_retry_after({{"retry-after", "-5"}}, kNow), std::nullopt);
  EXPECT_EQ(parse_retry_after({}, kNow), std::nullopt);
}

TEST(RetryAfterTest, InfiniteAndHugeWaitsAreClampedNotUndefined) {
  // Cast unchecked, these overflowed int64 (undefined behaviour): the delay became 0 and every
  // attempt burned in milliseconds.
  for (const char* v : {"inf", "INF", "1e16", "1e300", "1e999"}) {
    EXPECT_EQ(parse_retry_after({{"retry-after", v}}, kNow), kMaxRetryWait) << v;
    EXPECT_EQ(parse_retry_after({{"retry-after-ms", v}}, kNow), kMaxRetryWait) << v;
  }
  // Too small to tell from zero is no wait, not the longest one.
  EXPECT_EQ(parse_retry_after({{"retry-after", "1e-400"}}, kNow), milliseconds(0));
  for (const char* v : {"nan", "-inf", "-1e999", ""}) {
    EXPECT_EQ(parse_retry_after({{"retry-after", v}}, kNow), std::nullopt) << v;
    EXPECT_EQ(parse_retry_after({{"retry-after-ms", v}}, kNow), std::nullopt) << v;
  }
  EXPECT_EQ(parse_retry_after({{"retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"}}, kNow),
            kMaxRetryWait);
}

}  // namespace
}  // namespace autonous::openai
