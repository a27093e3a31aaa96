// PostgreSQL's claim path after migrations 0016 and 0017: claimable heads only, walked by a
// cursor whatever the statistics, an expired lease first, no
// notification for a completion (its transaction claims the next task itself), and the batched
// writes (array parameters, a trail's events in one statement).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/events.h"
#include "internal/backend/postgres/migrator.h"
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

// 0017: the pick walks the claimable heads by a cursor and looks each head's task up by its
// key, whatever the planner knows. 0016's join hashed every queued task on tables without
// statistics (a fresh database, a backlog queued before autovacuum's ANALYZE): 12 000 task
// rows read to claim one.
TEST(PgClaimTest, AClaimReadsItsHeadsTaskOnlyHoweverManyAreQueuedAndWithoutStatistics) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  t.db().exec(
      "INSERT INTO tasks(chat_id, text) SELECT 'chat' || (i % 400), 'm' || i "
      "FROM generate_series(0, 11999) AS g(i)");
  PgQueue q(t.db());
  for (int i = 0; i < 3; ++i) {  // the first also looks for expired leases (none)
    // (Rows read so far, not yet flushed to the statistics: the claim's are the difference.)
    const std::string read =
        "SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) "
        "FROM pg_stat_xact_user_tables WHERE relname = 'tasks'";
    t.db().exec("BEGIN");
    const int64_t before = t.scalar(read);
    const auto task = q.claim_within("w", kT0, seconds(30));
    ASSERT_TRUE(task);
    EXPECT_EQ(task->id, i + 1);  // the oldest heads, in order
    EXPECT_LE(t.scalar(read) - before, 5);
    t.db().exec("COMMIT");
  }
}

// Concurrent claimers: each locks the head it takes, passes over heads another claim holds and
// a head whose task row a front end holds (that head stays locked until the claim commits), and
// never waits; a head whose task is not due yet (a retry's run_after) is passed over unlocked.
TEST(PgClaimTest, ConcurrentClaimsLockOneHeadEachAndPassOverLockedRowsWithoutWaiting) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  t.db().exec(
      "INSERT INTO tasks(chat_id, text) SELECT 'chat' || i, 'm' || i "
      "FROM generate_series(1, 20) AS g(i)");
  t.db().exec("UPDATE tasks SET run_after = 9000000000000000 WHERE id = 1");  // not due
  auto c1 = t.open_connection();
  auto c2 = t.open_connection();
  auto front = t.open_connection();
  PgQueue q1(*c1);
  PgQueue q2(*c2);
  front->exec("BEGIN");
  front->exec("SELECT id FROM tasks WHERE id = 2 FOR UPDATE");  // a front end's edit
  c1->exec("BEGIN");
  c2->exec("BEGIN");
  const auto a = q1.claim_within("w1", kT0, seconds(30));
  const auto b = q2.claim_within("w2", kT0, seconds(30));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->id, 3);  // 1 is not due, 2's row is held by the front end
  EXPECT_EQ(b->id, 4);  // and 3 is held by the first claim
  // Held now: the two claimed heads and the head whose task the front end holds (the first
  // claimer locked it before it looked at the task); the not-due head and the rest are free.
  const std::string free_heads =
      "SELECT count(*) FROM (SELECT 1 FROM chat_heads FOR UPDATE SKIP LOCKED) x";
  EXPECT_EQ(t.scalar(free_heads), 20 - 3);
  EXPECT_EQ(t.scalar("SELECT count(*) FROM (SELECT 1 FROM chat_heads WHERE chat_id = 'chat1' "
                     "FOR UPDATE SKIP LOCKED) x"),
            1);
  c1->exec("COMMIT");
  c2->exec("COMMIT");
  front->exec("COMMIT");
  EXPECT_EQ(t.scalar("SELECT count(*) FROM chat_heads WHERE running"), 2);
  EXPECT_EQ(q1.claim("w1", kT0, seconds(30))->id, 2);  // free again
}

// Claims racing inserts into new and busy chats, half of them in completions' transactions
// (the worker's path): every task is claimed once, in its chat's order, and no head is ever
// marked running over a task that is not (a claim whose pick saw a task its update did not
// would strand the chat for good). Bounded: a stranded chat fails the test, it does not hang.
TEST(PgClaimTest, ClaimsRacingInsertsLeaveNoHeadRunningOverAQueuedTask) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  constexpr int kTasks = 300;
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  std::atomic<int> claimed{0};
  std::atomic<bool> inserting{true};
  std::atomic<bool> failed{false};
  std::mutex m;
  std::map<std::string, std::vector<int64_t>> order;  // per chat, as claimed
  const std::string stranded =
      "SELECT count(*) FROM chat_heads h JOIN tasks t ON t.id = h.task_id "
      "WHERE h.running AND t.status <> 'running'";
  std::vector<std::thread> claimers;
  for (int w = 0; w < 4; ++w)
    claimers.emplace_back([&, w] {
      auto c = t.open_connection();
      PgQueue q(*c);
      const std::string worker = "w" + std::to_string(w);
      std::optional<Task> task;
      while ((inserting || claimed < kTasks) && !failed &&
             std::chrono::steady_clock::now() < deadline) {
        if (!task) task = q.claim(worker, kT0, seconds(30));
        if (!task) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          continue;
        }
        {
          const std::lock_guard lock(m);
          order[task->chat_id].push_back(task->id);
        }
        ++claimed;
        if (w % 2 == 0) {  // complete, then claim apart
          if (!q.complete(*task, "u", "r", {})) failed = true;
          task.reset();
        } else {  // complete and claim the next in one transaction
          const auto out = q.complete_and_claim(*task, "u", "r", {}, worker, kT0, seconds(30));
          if (!out.completed) failed = true;
          task = out.next;
        }
      }
    });
  {
    auto c = t.open_connection();
    PgQueue q(*c);
    for (int i = 0; i < kTasks; ++i) {
      q.enqueue("chat" + std::to_string(i % 37), "m");
      if (i % 50 == 0 && t.scalar(stranded) != 0) failed = true;
    }
    inserting = false;
  }
  for (auto& th : claimers) th.join();
  EXPECT_FALSE(failed);
  EXPECT_EQ(claimed, kTasks);
  EXPECT_EQ(t.scalar(stranded), 0);
  EXPECT_EQ(t.scalar("SELECT count(*) FROM tasks WHERE status = 'done' AND attempts = 1"), kTasks);
  EXPECT_EQ(t.scalar("SELECT count(*) FROM chat_heads"), 0);
  for (const auto& [chat, ids] : order) EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << chat;
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

TEST(PgClaimTest, ACompletionThatClaimsWakesNobodyWhileOneThatDoesNotAndTheOthersDo) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  PgQueue q(t.db());
  auto listener = t.open_connection();
  listener->listen("autonous_tasks");
  for (int i = 1; i <= 6; ++i) q.enqueue("a", std::to_string(i));
  EXPECT_EQ(notifications(*listener, std::chrono::milliseconds(300)), 1);  // the head only
  auto task = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(task);
  // A completion that claims in its transaction: NOTIFY would serialise the commits.
  auto both = q.complete_and_claim(*task, "1", "ok", {}, "w", kT0, seconds(30));
  ASSERT_TRUE(both.completed);
  ASSERT_TRUE(both.next);
  EXPECT_EQ(notifications(*listener, std::chrono::milliseconds(300)), 0);
  // One that claims nothing after it (a stopping worker): the chat's next task is announced.
  ASSERT_TRUE(q.complete(*both.next, "2", "ok", {}));
  EXPECT_EQ(notifications(*listener, std::chrono::milliseconds(300)), 1);
  // A failure, a retry and a release leave their chat's next task to whoever is idle.
  task = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(q.fail(*task, "boom", {}));
  EXPECT_GE(notifications(*listener, std::chrono::milliseconds(300)), 1);
  task = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(q.retry_later(*task, kT0, "again", {}));
  EXPECT_GE(notifications(*listener, std::chrono::milliseconds(300)), 1);
  task = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(q.release(*task, {}));
  EXPECT_GE(notifications(*listener, std::chrono::milliseconds(300)), 1);
  // A requeued failure behind nothing: it becomes the head again once the chat is idle.
  task = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(q.complete(*task, "4", "ok", {}));
  notifications(*listener, std::chrono::milliseconds(300));
  for (auto next = q.claim("w", kT0, seconds(30)); next; next = q.claim("w", kT0, seconds(30)))
    ASSERT_TRUE(q.complete(*next, next->text, "ok", {}));
  notifications(*listener, std::chrono::milliseconds(300));
  ASSERT_TRUE(q.requeue(q.failed_ids().front()));
  EXPECT_GE(notifications(*listener, std::chrono::milliseconds(300)), 1);
}

// Front ends and operators may write tasks by hand (docs/front-end.md).
TEST(PgClaimTest, HandWrittenChangesKeepTheRunningMarkExact) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  PgQueue q(t.db());
  const int64_t a1 = q.enqueue("a", "1");
  const int64_t a2 = q.enqueue("a", "2");
  ASSERT_EQ(q.claim("w", kT0, seconds(30))->id, a1);
  // Running to queued by hand: the head is claimable again.
  t.db().exec("UPDATE tasks SET status = 'queued', lease_token = NULL WHERE id = " +
              std::to_string(a1));
  EXPECT_EQ(t.scalar("SELECT count(*) FROM chat_heads WHERE running"), 0);
  ASSERT_EQ(q.claim("w", kT0, seconds(30))->id, a1);
  // The running head deleted: the next task is the head, claimable.
  t.db().exec("DELETE FROM tasks WHERE id = " + std::to_string(a1));
  EXPECT_EQ(t.scalar("SELECT task_id FROM chat_heads WHERE chat_id = 'a' AND NOT running"), a2);
  // Queued to running by hand, behind its chat's head, without a lease: not reclaimed as
  // expired while the head waits (that would run two of the chat's tasks at once).
  const int64_t a3 = q.enqueue("a", "3");
  t.db().exec("UPDATE tasks SET status = 'running' WHERE id = " + std::to_string(a3));
  const auto head = q.claim("w", kT0 + seconds(5), seconds(30));
  ASSERT_TRUE(head);
  EXPECT_EQ(head->id, a2);
  EXPECT_FALSE(q.claim("w", kT0 + seconds(10), seconds(30)));
}

// An upgrade to 0016 while workers from before it still run: a running task's head is marked
// running, and a retry that an older worker commits while the migration waits for the table is
// seen by the backfill (before the migration locked tasks first, the backfill read the task as
// running, the retry committed after, and the chat's head stayed marked running for good).
TEST(PgClaimTest, AnUpgradeTo16WithTasksInFlightMarksTheRunningHeadsAndNothingElse) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  t.db().exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public");
  std::vector<db::Migration> upto15;
  for (const db::Migration& m : db::embedded_pg_migrations())
    if (m.version <= 15) upto15.push_back(m);
  ASSERT_EQ(db::pg_migrate(t.db(), upto15), 15);
  t.db().exec(
      "INSERT INTO tasks(chat_id, text) VALUES ('a', '1'), ('a', '2'), ('b', '3'), ('c', '4')");
  // An older worker's claims (0015's rules: the head row stays as it is).
  t.db().exec(
      "UPDATE tasks SET status = 'running', lease_token = 't', lease_expires_at = 1 "
      "WHERE id IN (1, 3)");
  // Another older worker retries task 3, its transaction still open when the migration starts.
  auto retrier = t.open_connection();
  retrier->exec("BEGIN");
  retrier->exec("UPDATE tasks SET status = 'queued', lease_token = NULL WHERE id = 3");
  std::thread migration([&] {
    auto c = t.open_connection();
    std::vector<db::Migration> upto16;
    for (const db::Migration& m : db::embedded_pg_migrations())
      if (m.version <= 16) upto16.push_back(m);
    EXPECT_EQ(db::pg_migrate(*c, upto16, std::chrono::seconds(20)), 16);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the migration waits for it
  retrier->exec("COMMIT");
  migration.join();
  EXPECT_EQ(t.scalar("SELECT count(*) FROM chat_heads WHERE running AND chat_id = 'a'"), 1);
  EXPECT_EQ(t.scalar("SELECT count(*) FROM chat_heads WHERE running"), 1);
  ASSERT_EQ(db::pg_migrate(t.db(), db::embedded_pg_migrations()), 24);
  // The new claim: b's retried task and c's, never a's second while its first runs; then a's
  // first, whose lease expired, is taken over.
  PgQueue q(t.db());
  const auto first = q.claim("w", kT0, seconds(30));
  const auto second = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(first && second);
  EXPECT_TRUE(first->reclaimed);  // the expired lease first
  EXPECT_EQ(first->id, 1);
  EXPECT_EQ(second->id, 3);
  EXPECT_EQ(q.claim("w", kT0, seconds(30))->id, 4);
  EXPECT_FALSE(q.claim("w", kT0, seconds(30)));
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
  const db::pg::Result nul =
      t.db().query("SELECT (($1::text[]))[1]", {db::pg::array_literal({std::string("a\0b", 3)})});
  EXPECT_EQ(nul.text(0, 0),
            "a\xEF\xBF\xBD"
            "b");
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

namespace autonous::queue {
namespace {

// A completion without tool steps indexes its two history rows in its own statement
// (migrations/postgres/0024): committed without any indexing call, they are in history_terms
// and nothing of them is in search_queue; rows inserted in the same transaction afterwards
// (the same task's too), and a front end's, are queued as before; a session's flag tells the
// engine's write that the pair is indexed, unless other rows of the chat were queued.
TEST(PgCompletionIndexTest, ACompletionIndexesItsOwnRowsAndOnlyThose) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  bool pair_indexed = false;
  PgQueue q(t.db(), &pair_indexed);
  const int64_t id = q.enqueue("a", "the parcel to Lyon");
  const auto task = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(task);
  const int64_t other = q.enqueue("b", "another chat's");
  ASSERT_TRUE(q.cancel(other));  // only its id is wanted here
  t.db().exec("INSERT INTO history(chat_id, role, text) VALUES ('b', 'user', 'elsewhere')");
  {
    db::pg::Transaction tx(t.db());
    q.transaction_begins();
    ASSERT_TRUE(q.complete_within(*task, "the parcel to Lyon", {}, "on its way", {}, {}));
    EXPECT_TRUE(pair_indexed);
    t.db().exec("INSERT INTO history(chat_id, role, text, task_id) VALUES ('a', 'user', 'x', " +
                std::to_string(other) + "), ('a', 'user', 'y', NULL), ('a', 'tool', 'z', " +
                std::to_string(id) + ")");
    q.commit(tx);
  }
  EXPECT_EQ(t.scalar("SELECT count(*) FROM history_terms t JOIN history h ON h.id = t.rowid "
                     "WHERE h.task_id = " +
                     std::to_string(id)),
            2);
  EXPECT_EQ(t.scalar("SELECT count(*) FROM search_queue q JOIN history h ON h.id = q.row_id "
                     "WHERE h.role <> 'tool' AND h.task_id = " +
                     std::to_string(id)),
            0);
  EXPECT_EQ(t.scalar("SELECT count(*) FROM search_queue WHERE chat_id = 'a'"), 3);  // x, y, z
  EXPECT_EQ(t.scalar("SELECT rows FROM search_term_rows WHERE chat <> '' AND term = ''"), 2);
  EXPECT_EQ(t.scalar("SELECT sum(rows) FROM search_term_deltas WHERE term = ''"), 2);
  // The flag is the transaction's: the next one starts without it. With the chat's rows
  // queued, the next completion leaves them to the engine's write (the flag stays false).
  q.transaction_begins();
  EXPECT_FALSE(pair_indexed);
  q.enqueue("a", "and to Paris?");
  const auto next = q.claim("w", kT0, seconds(30));
  ASSERT_TRUE(next);
  {
    db::pg::Transaction tx(t.db());
    q.transaction_begins();
    ASSERT_TRUE(q.complete_within(*next, "and to Paris?", {}, "also", {}, {}));
    EXPECT_FALSE(pair_indexed);
    q.commit(tx);
  }
  EXPECT_EQ(t.scalar("SELECT count(*) FROM search_queue"), 4);  // elsewhere, x, y, z
  // Editing or deleting the rows later queues them as any row.
  t.db().exec("UPDATE history SET text = 'the parcel to Paris' WHERE task_id = " +
              std::to_string(id) + " AND role = 'user'");
  EXPECT_EQ(t.scalar("SELECT count(*) FROM search_queue"), 5);
}

}  // namespace
}  // namespace autonous::queue
