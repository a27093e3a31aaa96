// PostgreSQL's claim path after migration 0016: claimable heads only, an expired lease first, no
// notification for a completion (its transaction claims the next task itself), and the batched
// writes (array parameters, a trail's events in one statement).
#include <chrono>
#include <stdexcept>

#include <gtest/gtest.h>

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/events.h"
#include "internal/backend/postgres/queue.h"
#include "tests/support/pg_test_db.h"

namespace autonous::queue {
namespace {

using std::chrono::seconds;
const common::TimePoint kT0 = common::from_unix_ms(1'800'000'000'000);

// Notifications that arrive within `wait` (each wait() consumes what is pending).
int notifications(db::pg::Connection& listener, std::chrono::milliseconds wait) {
  int got = 0;
  const auto until = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < until)
    got += listener.wait(std::chrono::milliseconds(50)) ? 1 : 0;
  return got;
}

TEST(PgClaimTest, AClaimMarksItsHeadRunningAndAHeadQueuedAgainIsClaimableAgain) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  PgQueue q(t.db());
  q.enqueue("a", "1");
  q.enqueue("a", "2");
  q.enqueue("b", "3");
  const auto first = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(first);
  EXPECT_EQ(t.scalar("SELECT count(*) FROM chat_heads WHERE running AND chat_id = 'a'"), 1);
  EXPECT_EQ(t.scalar("SELECT count(*) FROM chat_heads WHERE NOT running"), 1);  // b's
  // A retry queues the task again: its head is claimable (after run_after), not running.
  ASSERT_TRUE(q.retry_later(*first, kT0 + seconds(5), "later", {}));
  EXPECT_EQ(t.scalar("SELECT count(*) FROM chat_heads WHERE running"), 0);
  EXPECT_EQ(q.claim("w", kT0, seconds(30))->chat_id, "b");  // a's waits for its run_after
  const auto again = q.claim("w", kT0 + seconds(6), seconds(30));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, first->id);
  // Done: the chat's next task becomes its head, claimable.
  ASSERT_TRUE(q.complete(*again, "1", "ok", {}));
  EXPECT_EQ(t.scalar("SELECT task_id FROM chat_heads WHERE chat_id = 'a' AND NOT running"),
            first->id + 1);
}

TEST(PgClaimTest, ATaskWhoseLeaseExpiredIsTakenBeforeAQueuedHeadOfHigherPriority) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  PgQueue q(t.db());
  const int64_t stuck = q.enqueue("a", "stuck");
  ASSERT_EQ(q.claim("w1", kT0, seconds(30))->id, stuck);
  q.enqueue("b", "urgent", 9);
  const auto next = q.claim("w2", kT0 + seconds(31), seconds(30));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->id, stuck);
  EXPECT_TRUE(next->reclaimed);
  EXPECT_EQ(next->lease_expiries, 1);
  EXPECT_EQ(q.claim("w2", kT0 + seconds(31), seconds(30))->chat_id, "b");
}

TEST(PgClaimTest, ACompletionWakesNobodyWhileANewTaskAFailureAndARetryDo) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  PgQueue q(t.db());
  auto listener = t.open_connection();
  listener->listen("autonous_tasks");
  q.enqueue("a", "1");
  q.enqueue("a", "2");
  q.enqueue("a", "3");
  q.enqueue("a", "4");
  EXPECT_EQ(notifications(*listener, std::chrono::milliseconds(300)), 1);  // the head only
  const auto t1 = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(t1);
  // The completing worker claims in the same transaction; NOTIFY would serialise the commits.
  ASSERT_TRUE(q.complete(*t1, "1", "ok", {}));
  EXPECT_EQ(notifications(*listener, std::chrono::milliseconds(300)), 0);
  // A failure leaves the next task to whoever is idle: it notifies.
  const auto t2 = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(q.fail(*t2, "boom", {}));
  EXPECT_GE(notifications(*listener, std::chrono::milliseconds(300)), 1);
  const auto t3 = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(q.retry_later(*t3, kT0, "again", {}));
  EXPECT_GE(notifications(*listener, std::chrono::milliseconds(300)), 1);
}

TEST(PgClaimTest, AnArrayParameterCarriesAnyTextAndNullUnchanged) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  const std::vector<db::pg::Param> values{
      "plain", "with \"quotes\"", "back\\slash\\", "{braces},commas", "NULL",
      "",      "  spaced  ",      std::nullopt,    "日本語 ✓",        "a\nnewline"};
  const db::pg::Result r = t.db().query(
      "SELECT v, v IS NULL FROM unnest($1::text[]) WITH ORDINALITY AS u(v, n) ORDER BY n",
      {db::pg::array_literal(values)});
  ASSERT_EQ(r.rows(), static_cast<int>(values.size()));
  for (int i = 0; i < r.rows(); ++i) {
    const auto& want = values[static_cast<size_t>(i)];
    EXPECT_EQ(r.text(i, 1) == "t", !want.has_value()) << i;
    if (want) {
      EXPECT_EQ(r.text(i, 0), *want) << i;
    }
  }
  EXPECT_EQ(db::pg::array_literal({}), "{}");
}

TEST(PgClaimTest, ATrailIsAppendedInOneStatementInItsOrderAndABadPayloadWritesNothing) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  std::vector<events::Event> trail(3);
  for (size_t i = 0; i < trail.size(); ++i) {
    trail[i].type = "step." + std::to_string(i);
    trail[i].task_id = 7;
    trail[i].chat_id = "c";
    trail[i].payload = R"({"n":)" + std::to_string(i) + R"(,"text":"a \"quoted\" \\ {x}"})";
  }
  trail[1].at_unix_ms = 1'800'000'000'000;
  events::append_all(t.db(), trail);
  const db::pg::Result r =
      t.db().query("SELECT type, payload->>'text', created_at FROM events ORDER BY id");
  ASSERT_EQ(r.rows(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.text(i, 0), "step." + std::to_string(i));
    EXPECT_EQ(r.text(i, 1), "a \"quoted\" \\ {x}");
  }
  EXPECT_EQ(r.text(1, 2), "2027-01-15T08:00:00.000Z");
  trail[2].payload = "[1]";
  EXPECT_THROW(events::append_all(t.db(), trail), std::invalid_argument);
  EXPECT_EQ(t.scalar("SELECT count(*) FROM events"), 3);
}

}  // namespace
}  // namespace autonous::queue
