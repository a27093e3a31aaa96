#include "internal/worker/backoff.h"

#include <gtest/gtest.h>

namespace autonous::worker {
namespace {

using std::chrono::milliseconds;

TEST(BackoffTest, DoublesFromBaseWithAtMostAQuarterOfJitter) {
  std::mt19937_64 rng(1);
  for (int attempt = 1; attempt <= 5; ++attempt) {
    const int64_t ideal = 1000LL << (attempt - 1);
    for (int i = 0; i < 50; ++i) {
      const auto d =
          backoff_delay(attempt, milliseconds(1000), milliseconds(60000), std::nullopt, rng);
      EXPECT_LE(d.count(), ideal);
      EXPECT_GE(d.count(), ideal * 3 / 4);
    }
  }
}

TEST(BackoffTest, IsCappedAtMax) {
  std::mt19937_64 rng(2);
  for (int attempt : {7, 20, 1000}) {
    const auto d =
        backoff_delay(attempt, milliseconds(1000), milliseconds(60000), std::nullopt, rng);
    EXPECT_LE(d.count(), 60000);
    EXPECT_GE(d.count(), 45000);
  }
}

TEST(BackoffTest, RetryAfterWinsExactlyButIsBounded) {
  std::mt19937_64 rng(3);
  EXPECT_EQ(backoff_delay(1, milliseconds(1000), milliseconds(60000), milliseconds(2500), rng),
            milliseconds(2500));
  EXPECT_EQ(backoff_delay(1, milliseconds(1000), milliseconds(60000), milliseconds(120000), rng),
            milliseconds(120000));  // above our own cap: the server knows best
  EXPECT_EQ(backoff_delay(1, milliseconds(1000), milliseconds(60000), std::chrono::hours(10), rng),
            kMaxRetryAfter);
}

}  // namespace
}  // namespace autonous::worker
