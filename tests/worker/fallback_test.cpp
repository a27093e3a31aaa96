#include "internal/worker/fallback.h"

#include <gtest/gtest.h>

namespace autonous::worker {
namespace {

events::StoredEvent retry(int64_t id, int attempt, const std::string& reason,
                          bool recompress = false) {
  events::StoredEvent e;
  e.id = id;
  e.event.type = "llm.retry";
  e.event.payload = R"({"attempt":)" + std::to_string(attempt) + R"(,"reason":")" + reason + "\"" +
                    (recompress ? R"(,"recompress":true)" : "") + "}";
  return e;
}

TEST(FallbackTest, ProviderFailuresAreTheProvidersTroubleOnly) {
  for (const char* r :
       {"http_500", "http_502", "http_503", "http_529", "http_429", "http_408", "timeout"})
    EXPECT_TRUE(is_provider_failure(r)) << r;
  for (const char* r : {"http_400", "http_401", "http_402", "http_404", "content_filter", "refusal",
                        "network", "empty_reply", "context_length_exceeded", "http_5", "http_5000",
                        "http_5x0", "lease_expired", ""})
    EXPECT_FALSE(is_provider_failure(r)) << r;
}

TEST(FallbackTest, CountsTheAttemptsRightBeforeThisOneThatEndedInAProviderFailure) {
  // Attempts 1 and 2 ended in 503s: attempt 3 follows two in a row.
  EXPECT_EQ(provider_failures_before({retry(10, 1, "http_503"), retry(20, 2, "http_529")}, 3), 2);
  // Any order of the events.
  EXPECT_EQ(provider_failures_before({retry(20, 2, "http_429"), retry(10, 1, "timeout")}, 3), 2);
  // A 400 in between breaks the run; an attempt without an event (its lease expired) too.
  EXPECT_EQ(provider_failures_before({retry(10, 1, "http_503"), retry(20, 2, "http_400")}, 3), 0);
  EXPECT_EQ(provider_failures_before({retry(10, 1, "http_503"), retry(30, 3, "http_503")}, 4), 1);
  // An overflow's recompress retry is no attempt's end.
  EXPECT_EQ(provider_failures_before({retry(10, 1, "http_503"), retry(15, 2, "http_503"),
                                      retry(16, 2, "context_length_exceeded", true)},
                                     3),
            2);
  // The first attempt has nothing before it; bad payloads are skipped.
  EXPECT_EQ(provider_failures_before({retry(10, 1, "http_503")}, 1), 0);
  events::StoredEvent bad;
  bad.id = 11;
  bad.event.payload = "not json";
  EXPECT_EQ(provider_failures_before({retry(10, 1, "http_503"), bad}, 2), 1);
  // After a requeue the attempts count from 1 again: the newest event of a number wins, and a
  // run must go back in time (an older attempt's end never after a newer one's).
  EXPECT_EQ(provider_failures_before(
                {retry(10, 1, "http_503"), retry(20, 2, "http_503"), retry(30, 1, "http_400")}, 2),
            0);
  EXPECT_EQ(provider_failures_before(
                {retry(10, 1, "http_503"), retry(20, 2, "http_503"), retry(30, 1, "http_503")}, 3),
            1);
}

}  // namespace
}  // namespace autonous::worker
