#include "internal/queue/queue.h"

#include <set>
#include <thread>

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <gtest/gtest.h>

#include "internal/events/event_types.h"
#include "tests/support/test_db.h"

namespace autonous::queue {
namespace {

using std::chrono::seconds;

const common::TimePoint kT0 = common::from_unix_ms(1'800'000'000'000);

class QueueTest : public ::testing::Test {
 protected:
  std::string status_of(int64_t id) {
    SQLite::Statement q(t_.db(), "SELECT status FROM tasks WHERE id = ?");
    q.bind(1, id);
    q.executeStep();
    return q.getColumn(0).getString();
  }
  int64_t count(const std::string& sql) { return t_.db().execAndGet(sql).getInt64(); }

  testing::TestDb t_;
  Queue q_{t_.db()};
};

TEST_F(QueueTest, ClaimsHighestPriorityThenOldest) {
  const int64_t a = q_.enqueue("a", "1");
  const int64_t b = q_.enqueue("b", "2", 5);
  const int64_t c = q_.enqueue("c", "3");
  EXPECT_EQ(q_.claim("w", kT0, seconds(30))->id, b);
  EXPECT_EQ(q_.claim("w", kT0, seconds(30))->id, a);
  EXPECT_EQ(q_.claim("w", kT0, seconds(30))->id, c);
  EXPECT_FALSE(q_.claim("w", kT0, seconds(30)));
}

TEST_F(QueueTest, ClaimCountsTheAttemptAndRecordsAgentStarted) {
  q_.enqueue("a", "hi");
  const auto task = q_.claim("worker-1", kT0, seconds(30));
  ASSERT_TRUE(task);
  EXPECT_EQ(task->attempts, 1);
  EXPECT_EQ(task->chat_id, "a");
  EXPECT_EQ(task->text, "hi");
  EXPECT_EQ(task->lease_token.size(), 32u);
  EXPECT_FALSE(task->reclaimed);
  EXPECT_EQ(status_of(task->id), "running");
  EXPECT_EQ(count("SELECT count(*) FROM events WHERE type = 'agent.started' AND "
                  "json_extract(payload, '$.worker_id') = 'worker-1'"),
            1);
  EXPECT_EQ(task->agent_event_id, count("SELECT max(id) FROM events"));
}

TEST_F(QueueTest, SecondTaskOfAChatWaitsForTheFirst) {
  const int64_t a1 = q_.enqueue("a", "first");
  const int64_t a2 = q_.enqueue("a", "second");
  const int64_t b1 = q_.enqueue("b", "other chat");
  const auto first = q_.claim("w", kT0, seconds(30));
  ASSERT_EQ(first->id, a1);
  // a2 is blocked behind a1; b1 runs in parallel.
  EXPECT_EQ(q_.claim("w", kT0, seconds(30))->id, b1);
  EXPECT_FALSE(q_.claim("w", kT0, seconds(30)));
  ASSERT_TRUE(q_.complete(*first, "first", "reply", {}));
  EXPECT_EQ(q_.claim("w", kT0, seconds(30))->id, a2);
}

TEST_F(QueueTest, ChatWaitsWhileItsHeadBacksOffThenRunsInOrder) {
  const int64_t a1 = q_.enqueue("a", "first");
  const int64_t a2 = q_.enqueue("a", "second");
  auto t = q_.claim("w", kT0, seconds(30));
  ASSERT_TRUE(q_.retry_later(*t, kT0 + seconds(10), "HTTP 500", {}));
  EXPECT_FALSE(q_.claim("w", kT0 + seconds(5), seconds(30)));  // a2 must not overtake a1
  auto again = q_.claim("w", kT0 + seconds(10), seconds(30));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, a1);
  EXPECT_EQ(again->attempts, 2);
  ASSERT_TRUE(q_.fail(*again, "gave up", {}));
  EXPECT_EQ(q_.claim("w", kT0 + seconds(10), seconds(30))->id, a2);  // a failure unblocks
}

TEST_F(QueueTest, CompletionWritesThePairTheReplyAndEventsTogether) {
  q_.enqueue("a", "hello");
  const auto t = q_.claim("w", kT0, seconds(30));
  events::Event e{std::string(events::kTurnCompleted), t->id, "a", t->agent_event_id, "{}"};
  ASSERT_TRUE(q_.complete(*t, "hello", "hi there", {e}));
  EXPECT_EQ(status_of(t->id), "done");
  EXPECT_EQ(t_.db().execAndGet("SELECT reply FROM tasks").getString(), "hi there");
  EXPECT_EQ(count("SELECT count(*) FROM history WHERE task_id = 1"), 2);
  EXPECT_EQ(t_.db()
                .execAndGet("SELECT group_concat(role || ':' || text, '|') FROM "
                            "(SELECT * FROM history ORDER BY id)")
                .getString(),
            "user:hello|assistant:hi there");
  EXPECT_EQ(count("SELECT count(*) FROM events WHERE type = 'turn.completed'"), 1);
  EXPECT_EQ(count("SELECT count(*) FROM chat_heads"), 0);
  EXPECT_FALSE(q_.has_pending());
}

TEST_F(QueueTest, ExpiredLeaseIsReclaimedAndTheStaleWorkerCommitsNothing) {
  q_.enqueue("a", "hello");
  const auto stale = q_.claim("w1", kT0, seconds(30));
  EXPECT_FALSE(q_.claim("w2", kT0 + seconds(29), seconds(30)));  // lease still live
  const auto fresh = q_.claim("w2", kT0 + seconds(31), seconds(30));
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(fresh->reclaimed);
  EXPECT_EQ(fresh->attempts, 2);

  events::Event e{"turn.completed", stale->id, "a", stale->agent_event_id, "{}"};
  EXPECT_FALSE(q_.complete(*stale, "hello", "stale reply", {e}));
  EXPECT_FALSE(q_.renew_lease(*stale, kT0 + seconds(32), seconds(30)));
  EXPECT_FALSE(q_.fail(*stale, "x", {}));
  EXPECT_FALSE(q_.retry_later(*stale, kT0, "x", {}));
  EXPECT_EQ(count("SELECT count(*) FROM history"), 0);
  EXPECT_EQ(count("SELECT count(*) FROM events WHERE type = 'turn.completed'"), 0);

  ASSERT_TRUE(q_.complete(*fresh, "hello", "fresh reply", {}));
  EXPECT_EQ(t_.db().execAndGet("SELECT reply FROM tasks").getString(), "fresh reply");
  EXPECT_EQ(count("SELECT count(*) FROM history"), 2);
}

TEST_F(QueueTest, RenewedLeaseIsNotReclaimed) {
  q_.enqueue("a", "x");
  const auto t = q_.claim("w1", kT0, seconds(30));
  ASSERT_TRUE(q_.renew_lease(*t, kT0 + seconds(25), seconds(30)));
  EXPECT_FALSE(q_.claim("w2", kT0 + seconds(40), seconds(30)));
  EXPECT_TRUE(q_.claim("w2", kT0 + seconds(56), seconds(30)));
}

TEST_F(QueueTest, CompleteAndClaimTakesTheNextTaskInTheSameTransaction) {
  const int64_t a1 = q_.enqueue("a", "first");
  const int64_t a2 = q_.enqueue("a", "second");
  const auto t = q_.claim("w", kT0, seconds(30));
  ASSERT_EQ(t->id, a1);
  const int64_t commits_before = count("SELECT count(*) FROM events");
  const auto r = q_.complete_and_claim(*t, "first", "reply", {}, "w", kT0, seconds(30));
  EXPECT_TRUE(r.completed);
  ASSERT_TRUE(r.next);
  EXPECT_EQ(r.next->id, a2);  // the chat's head moved inside the same transaction
  EXPECT_EQ(r.next->attempts, 1);
  EXPECT_EQ(status_of(a1), "done");
  EXPECT_EQ(status_of(a2), "running");
  EXPECT_EQ(count("SELECT count(*) FROM events"), commits_before + 1);  // its agent.started
  // Nothing left: completed, no next.
  const auto last = q_.complete_and_claim(*r.next, "second", "reply 2", {}, "w", kT0, seconds(30));
  EXPECT_TRUE(last.completed);
  EXPECT_FALSE(last.next);
}

TEST_F(QueueTest, CompleteAndClaimWithALostLeaseWritesAndClaimsNothing) {
  q_.enqueue("a", "x");
  q_.enqueue("b", "y");
  const auto stale = q_.claim("w1", kT0, seconds(30));
  const auto fresh = q_.claim("w2", kT0 + seconds(31), seconds(30));  // takes "a" over
  ASSERT_EQ(fresh->id, stale->id);
  const auto r =
      q_.complete_and_claim(*stale, "x", "stale", {}, "w1", kT0 + seconds(31), seconds(30));
  EXPECT_FALSE(r.completed);
  EXPECT_FALSE(r.next);
  EXPECT_EQ(status_of(2), "queued");  // "b" was not claimed by the refused transaction
  EXPECT_EQ(count("SELECT count(*) FROM history"), 0);
}

TEST_F(QueueTest, ReleaseRequeuesAtOnceWithoutCountingTheAttempt) {
  q_.enqueue("a", "x");
  const auto t = q_.claim("w1", kT0, seconds(300));
  ASSERT_TRUE(q_.release(*t, {}));
  const auto again = q_.claim("w2", kT0, seconds(300));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempts, 1);
}

TEST_F(QueueTest, UniqueIndexMakesASecondPairImpossible) {
  q_.enqueue("a", "x");
  const auto t = q_.claim("w", kT0, seconds(30));
  ASSERT_TRUE(q_.complete(*t, "x", "y", {}));
  EXPECT_THROW(t_.db().exec("INSERT INTO history(chat_id, role, text, task_id) VALUES ('a', "
                            "'assistant', 'again', 1)"),
               SQLite::Exception);
}

TEST_F(QueueTest, RequeuePutsFailedTasksBackWithFreshAttempts) {
  q_.enqueue("a", "x");
  q_.enqueue("b", "y");
  auto t1 = q_.claim("w", kT0, seconds(30));
  auto t2 = q_.claim("w", kT0, seconds(30));
  ASSERT_TRUE(q_.fail(*t1, "boom", {}));
  EXPECT_FALSE(q_.requeue(t2->id));  // running, not failed
  ASSERT_TRUE(q_.fail(*t2, "boom", {}));
  EXPECT_TRUE(q_.requeue(t1->id));
  EXPECT_EQ(status_of(t1->id), "queued");
  EXPECT_EQ(q_.requeue_failed(), 1);
  EXPECT_EQ(q_.claim("w", kT0, seconds(30))->attempts, 1);
  EXPECT_EQ(count("SELECT count(*) FROM events WHERE type = 'task.requeued'"), 2);
  EXPECT_FALSE(q_.requeue(999));
}

TEST_F(QueueTest, StatsCountStatusesAndListFailures) {
  q_.enqueue("a", "x");
  q_.enqueue("b", "y");
  q_.enqueue("c", "z");
  auto t = q_.claim("w", kT0, seconds(30));
  ASSERT_TRUE(q_.fail(*t, "HTTP 401: bad key", {}));
  q_.claim("w", kT0, seconds(30));
  const QueueStats s = q_.stats(std::chrono::system_clock::now());
  EXPECT_EQ(s.queued, 1);
  EXPECT_EQ(s.running, 1);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.done, 0);
  ASSERT_TRUE(s.oldest_queued_age_seconds);
  EXPECT_GE(*s.oldest_queued_age_seconds, 0.0);
  EXPECT_LT(*s.oldest_queued_age_seconds, 60.0);
  ASSERT_EQ(s.recent_failures.size(), 1u);
  EXPECT_EQ(s.recent_failures[0].error, "HTTP 401: bad key");
}

TEST_F(QueueTest, FrontEndInsertsAndDeletesKeepChatHeadsExact) {
  t_.db().exec("INSERT INTO tasks(chat_id, text) VALUES ('a', '1'), ('a', '2'), ('b', '3')");
  EXPECT_EQ(count("SELECT count(*) FROM chat_heads"), 2);
  t_.db().exec("DELETE FROM tasks WHERE id = 1");
  EXPECT_EQ(count("SELECT task_id FROM chat_heads WHERE chat_id = 'a'"), 2);
  t_.db().exec("UPDATE tasks SET priority = 9 WHERE id = 3");
  EXPECT_EQ(q_.claim("w", kT0, seconds(30))->id, 3);
}

TEST_F(QueueTest, ConcurrentClaimersNeverShareATask) {
  for (int i = 0; i < 200; ++i) q_.enqueue("chat" + std::to_string(i), "x");
  std::vector<std::set<int64_t>> seen(4);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      auto db = t_.open_connection();
      Queue q(*db);
      while (auto task = q.claim("w" + std::to_string(w), kT0, seconds(30))) {
        seen[static_cast<size_t>(w)].insert(task->id);
        q.complete(*task, "x", "y", {});
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<int64_t> all;
  size_t total = 0;
  for (const auto& s : seen) {
    total += s.size();
    all.insert(s.begin(), s.end());
  }
  EXPECT_EQ(total, 200u);
  EXPECT_EQ(all.size(), 200u);
  EXPECT_EQ(count("SELECT count(*) FROM history"), 400);
}

TEST_F(QueueTest, RequeuingAnOlderTaskNeverRunsTwoTasksOfAChatAtOnce) {
  const int64_t older = q_.enqueue("c", "first");
  const auto t1 = q_.claim("w", kT0, seconds(30));
  ASSERT_TRUE(t1);
  ASSERT_TRUE(q_.fail(*t1, "boom", {}));
  const int64_t newer = q_.enqueue("c", "second");
  const auto t2 = q_.claim("w", kT0, seconds(30));
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->id, newer);
  // The older task comes back while the newer one is running: before, the head trigger moved
  // the chat's head to it and a second worker claimed it at once.
  ASSERT_TRUE(q_.requeue(older));
  EXPECT_FALSE(q_.claim("w2", kT0, seconds(30)));
  EXPECT_EQ(count("SELECT task_id FROM chat_heads WHERE chat_id = 'c'"), newer);
  ASSERT_TRUE(q_.complete(*t2, "second", "ok", {}));
  const auto t3 = q_.claim("w2", kT0, seconds(30));
  ASSERT_TRUE(t3);
  EXPECT_EQ(t3->id, older);
}

TEST_F(QueueTest, TaskIdsAreNeverReusedAfterAFrontEndDeletesTheNewestRows) {
  q_.enqueue("c", "a");
  const int64_t b = q_.enqueue("c", "b");
  t_.db().exec("DELETE FROM tasks WHERE id = " + std::to_string(b));
  EXPECT_EQ(q_.enqueue("c", "c"), b + 1);
  t_.db().exec("DELETE FROM tasks");
  EXPECT_EQ(q_.enqueue("c", "d"), b + 2);
}

TEST_F(QueueTest, HandWrittenRunningRowsWithoutALeaseAndTextTimesAreRecovered) {
  // Before: a running row without lease_expires_at, or run_after stored as text, was never
  // claimable, wedged its chat, and `worker --drain` never exited.
  t_.db().exec("INSERT INTO tasks(chat_id, text, status) VALUES ('a', 'x', 'running')");
  t_.db().exec("INSERT INTO tasks(chat_id, text, run_after) VALUES ('b', 'y', '1000')");
  const auto a = q_.claim("w", kT0, seconds(30));
  const auto b = q_.claim("w", kT0, seconds(30));
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_TRUE(a->reclaimed);
  EXPECT_EQ(a->chat_id, "a");
  EXPECT_EQ(b->chat_id, "b");
}

TEST_F(QueueTest, AWriterHoldingTheLockDelaysButDoesNotFailAClaim) {
  q_.enqueue("a", "x");
  auto other = t_.open_connection();
  std::thread holder([&] {
    SQLite::Transaction tx(*other, SQLite::TransactionBehavior::IMMEDIATE);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    tx.commit();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto started = std::chrono::steady_clock::now();
  const auto t = q_.claim("w", kT0, seconds(30));
  const auto waited = std::chrono::steady_clock::now() - started;
  holder.join();
  ASSERT_TRUE(t);
  EXPECT_GE(waited, std::chrono::milliseconds(100));
}

}  // namespace
}  // namespace autonous::queue
