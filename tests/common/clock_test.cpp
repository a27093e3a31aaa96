#include "internal/common/clock.h"

#include <gtest/gtest.h>

namespace autonous::common {
namespace {

int64_t ms(std::string_view iso) { return to_unix_ms(parse_utc(iso).value()); }

TEST(ClockTest, StoredTimesParseAsTheMillisecondTheyName) {
  // Both backends' created_at: strftime('%Y-%m-%dT%H:%M:%fZ') and autonous_now().
  EXPECT_EQ(ms("2026-11-28T21:43:58.123Z"), 1'795'902'238'123);
  EXPECT_EQ(ms("1970-01-01T00:00:00.000Z"), 0);
  EXPECT_EQ(ms("2026-11-28T21:43:58Z"), 1'795'902'238'000);         // no fraction
  EXPECT_EQ(ms("2026-11-28T21:43:58.1Z"), 1'795'902'238'100);       // one digit
  EXPECT_EQ(ms("2026-11-28T21:43:58.123456Z"), 1'795'902'238'123);  // past ms: cut
  EXPECT_EQ(ms("2026-11-28 21:43:58.123"), 1'795'902'238'123);      // a space, no Z
  EXPECT_EQ(ms("2024-02-29T00:00:00Z"), 1'709'164'800'000);         // a leap day
}

TEST(ClockTest, TextThatIsNotAStoredTimeIsNone) {
  for (const char* bad :
       {"", "2026-11-28", "2026-11-28T21:43", "2026-11-28T21:43:58+01:00",
        "2026-11-28T21:43:58.1Zx", "2026-13-01T00:00:00Z", "2026-02-31T00:00:00Z",
        "2025-02-29T00:00:00Z", "2026-11-28T24:00:00Z", "2026-11-28T21:60:00Z",
        "2026-11-28T12:30:60Z", "2026-11-28T21:43:58.Z", "20a6-11-28T21:43:58Z", "yesterday"})
    EXPECT_FALSE(parse_utc(bad).has_value()) << bad;
}

}  // namespace
}  // namespace autonous::common
