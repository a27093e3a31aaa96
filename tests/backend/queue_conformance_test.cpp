// The queue's contract (queue/task_queue.h) through the seam (backend::open_session), the same
// assertions on both backends: SQLite, and PostgreSQL on the throwaway server of
// scripts/with-postgres (tests/backend/backend_fixture.h). Tables are read with plain SQL on a
// connection of the test's own.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/backend/session.h"
#include "internal/config/config.h"
#include "internal/events/event_types.h"
#include "internal/queue/task_queue.h"
#include "tests/backend/backend_fixture.h"

namespace autonous::queue {
namespace {

using std::chrono::seconds;

const common::TimePoint kT0 = common::from_unix_ms(1'800'000'000'000);

template <typename B>
class QueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (B::kPostgres) PG_TEST_OR_SKIP();
    b_ = std::make_unique<B>();
  }
  std::string status_of(int64_t id) {
    return b_->text("SELECT status FROM tasks WHERE id = " + std::to_string(id));
  }
  int64_t count(const std::string& sql) { return b_->scalar(sql); }
  TaskQueue& q() { return b_->q(); }

  std::unique_ptr<B> b_;
};

TYPED_TEST_SUITE(QueueTest, testing::Backends, testing::BackendNames);

TYPED_TEST(QueueTest, ClaimsHighestPriorityThenOldest) {
  const int64_t a = this->q().enqueue("a", "1");
  const int64_t b = this->q().enqueue("b", "2", 5);
  const int64_t c = this->q().enqueue("c", "3");
  EXPECT_EQ(this->q().claim("w", kT0, seconds(30))->id, b);
  EXPECT_EQ(this->q().claim("w", kT0, seconds(30))->id, a);
  EXPECT_EQ(this->q().claim("w", kT0, seconds(30))->id, c);
  EXPECT_FALSE(this->q().claim("w", kT0, seconds(30)));
}

TYPED_TEST(QueueTest, ClaimCountsTheAttemptAndRecordsAgentStarted) {
  this->q().enqueue("a", "hi");
  const auto task = this->q().claim("worker-1", kT0, seconds(30));
  ASSERT_TRUE(task);
  EXPECT_EQ(task->attempts, 1);
  EXPECT_EQ(task->chat_id, "a");
  EXPECT_EQ(task->text, "hi");
  EXPECT_EQ(task->lease_token.size(), 32u);
  EXPECT_FALSE(task->reclaimed);
  EXPECT_EQ(this->status_of(task->id), "running");
  const auto events = this->b_->all_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event.type, "agent.started");
  EXPECT_EQ(nlohmann::json::parse(events[0].event.payload),
            nlohmann::json::parse(
                R"({"attempt": 1, "worker_id": "worker-1", "reclaimed": false, "priority": 0})"));
  EXPECT_EQ(events[0].event.task_id, task->id);
  EXPECT_EQ(events[0].event.chat_id, "a");
  EXPECT_EQ(task->agent_event_id, this->count("SELECT max(id) FROM events"));
  // Its lease expired: taken over, the second attempt says so.
  const auto again = this->q().claim("worker-2", kT0 + seconds(31), seconds(30));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, task->id);
  EXPECT_TRUE(again->reclaimed);
  const auto after = this->b_->all_events();
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(after[1].event.payload),
            nlohmann::json::parse(
                R"({"attempt": 2, "worker_id": "worker-2", "reclaimed": true, "priority": 0})"));
  EXPECT_EQ(again->agent_event_id, after[1].id);
}

TYPED_TEST(QueueTest, SecondTaskOfAChatWaitsForTheFirst) {
  const int64_t a1 = this->q().enqueue("a", "first");
  const int64_t a2 = this->q().enqueue("a", "second");
  const int64_t b1 = this->q().enqueue("b", "other chat");
  const auto first = this->q().claim("w", kT0, seconds(30));
  ASSERT_EQ(first->id, a1);
  // a2 is blocked behind a1; b1 runs in parallel.
  EXPECT_EQ(this->q().claim("w", kT0, seconds(30))->id, b1);
  EXPECT_FALSE(this->q().claim("w", kT0, seconds(30)));
  ASSERT_TRUE(this->q().complete(*first, "first", "reply", {}));
  EXPECT_EQ(this->q().claim("w", kT0, seconds(30))->id, a2);
}

TYPED_TEST(QueueTest, ChatWaitsWhileItsHeadBacksOffThenRunsInOrder) {
  const int64_t a1 = this->q().enqueue("a", "first");
  const int64_t a2 = this->q().enqueue("a", "second");
  auto t = this->q().claim("w", kT0, seconds(30));
  ASSERT_TRUE(this->q().retry_later(*t, kT0 + seconds(10), "HTTP 500", {}));
  EXPECT_FALSE(this->q().claim("w", kT0 + seconds(5), seconds(30)));  // a2 must not overtake a1
  auto again = this->q().claim("w", kT0 + seconds(10), seconds(30));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, a1);
  EXPECT_EQ(again->attempts, 2);
  ASSERT_TRUE(this->q().fail(*again, "gave up", {}));
  EXPECT_EQ(this->q().claim("w", kT0 + seconds(10), seconds(30))->id, a2);  // a failure unblocks
}

TYPED_TEST(QueueTest, CompletionWritesThePairTheReplyAndEventsTogether) {
  this->q().enqueue("a", "hello");
  const auto t = this->q().claim("w", kT0, seconds(30));
  events::Event started{"turn.started", t->id, "a", t->agent_event_id, R"({"n": 1})"};
  events::Event e{std::string(events::kTurnCompleted), t->id, "a", t->agent_event_id, "{}"};
  ASSERT_TRUE(this->q().complete(*t, "hello", "hi there", {started, e}));
  // The turn's events after its agent.started, in the order given, with their parent.
  const auto trail = this->b_->all_events();
  ASSERT_EQ(trail.size(), 3u);
  EXPECT_EQ(trail[1].event.type, "turn.started");
  EXPECT_EQ(nlohmann::json::parse(trail[1].event.payload), nlohmann::json({{"n", 1}}));
  EXPECT_EQ(trail[2].event.type, "turn.completed");
  EXPECT_EQ(trail[1].event.parent_id, t->agent_event_id);
  EXPECT_EQ(trail[2].event.parent_id, t->agent_event_id);
  EXPECT_EQ(trail[2].event.task_id, t->id);
  EXPECT_EQ(this->status_of(t->id), "done");
  EXPECT_EQ(this->b_->text("SELECT reply FROM tasks"), "hi there");
  EXPECT_EQ(this->count("SELECT count(*) FROM history WHERE task_id = 1"), 2);
  EXPECT_EQ(this->b_->text("SELECT text FROM history WHERE role = 'user' AND task_id = 1"),
            "hello");
  EXPECT_EQ(this->b_->text("SELECT text FROM history WHERE role = 'assistant' AND task_id = 1"),
            "hi there");
  EXPECT_LT(this->count("SELECT id FROM history WHERE role = 'user'"),
            this->count("SELECT id FROM history WHERE role = 'assistant'"));
  EXPECT_EQ(this->count("SELECT count(*) FROM events WHERE type = 'turn.completed'"), 1);
  EXPECT_EQ(this->count("SELECT count(*) FROM chat_heads"), 0);
  EXPECT_FALSE(this->q().has_pending());
}

TYPED_TEST(QueueTest, ExpiredLeaseIsReclaimedAndTheStaleWorkerCommitsNothing) {
  this->q().enqueue("a", "hello");
  const auto stale = this->q().claim("w1", kT0, seconds(30));
  EXPECT_FALSE(this->q().claim("w2", kT0 + seconds(29), seconds(30)));  // lease still live
  const auto fresh = this->q().claim("w2", kT0 + seconds(31), seconds(30));
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(fresh->reclaimed);
  EXPECT_EQ(fresh->attempts, 2);

  events::Event e{"turn.completed", stale->id, "a", stale->agent_event_id, "{}"};
  EXPECT_FALSE(this->q().complete(*stale, "hello", "stale reply", {e}));
  EXPECT_FALSE(this->q().renew_lease(*stale, kT0 + seconds(32), seconds(30)));
  EXPECT_FALSE(this->q().fail(*stale, "x", {}));
  EXPECT_FALSE(this->q().retry_later(*stale, kT0, "x", {}));
  EXPECT_EQ(this->count("SELECT count(*) FROM history"), 0);
  EXPECT_EQ(this->count("SELECT count(*) FROM events WHERE type = 'turn.completed'"), 0);

  ASSERT_TRUE(this->q().complete(*fresh, "hello", "fresh reply", {}));
  EXPECT_EQ(this->b_->text("SELECT reply FROM tasks"), "fresh reply");
  EXPECT_EQ(this->count("SELECT count(*) FROM history"), 2);
}

TYPED_TEST(QueueTest, AStaleCompletionAfterTheNewHoldersIsRefusedAndWritesNothing) {
  // The new holder answers first; the old one's completion (or a slot's second try of a commit
  // whose reply a lost connection hid) comes after it and must not fail on the stored pair.
  this->q().enqueue("a", "hello");
  const auto stale = this->q().claim("w1", kT0, seconds(30));
  ASSERT_TRUE(stale);
  const auto fresh = this->q().claim("w2", kT0 + seconds(31), seconds(30));
  ASSERT_TRUE(fresh);
  ASSERT_TRUE(this->q().complete(*fresh, "hello", "fresh reply", {}));
  events::Event e{"turn.completed", stale->id, "a", stale->agent_event_id, "{}"};
  EXPECT_FALSE(this->q().complete(*stale, "hello", "stale reply", {e}));
  EXPECT_FALSE(this->q().complete(*fresh, "hello", "fresh reply again", {e}));
  const auto r = this->q().complete_and_claim(*stale, "hello", "stale", {e}, "w1",
                                              kT0 + seconds(32), seconds(30));
  EXPECT_FALSE(r.completed);
  EXPECT_EQ(this->b_->text("SELECT reply FROM tasks"), "fresh reply");
  EXPECT_EQ(this->count("SELECT count(*) FROM history"), 2);
  EXPECT_EQ(this->count("SELECT count(*) FROM events WHERE type = 'turn.completed'"), 0);
}

TYPED_TEST(QueueTest, RenewedLeaseIsNotReclaimed) {
  this->q().enqueue("a", "x");
  const auto t = this->q().claim("w1", kT0, seconds(30));
  ASSERT_TRUE(this->q().renew_lease(*t, kT0 + seconds(25), seconds(30)));
  EXPECT_FALSE(this->q().claim("w2", kT0 + seconds(40), seconds(30)));
  EXPECT_TRUE(this->q().claim("w2", kT0 + seconds(56), seconds(30)));
}

TYPED_TEST(QueueTest, CompleteAndClaimTakesTheNextTaskInTheSameTransaction) {
  const int64_t a1 = this->q().enqueue("a", "first");
  const int64_t a2 = this->q().enqueue("a", "second");
  const auto t = this->q().claim("w", kT0, seconds(30));
  ASSERT_EQ(t->id, a1);
  const int64_t commits_before = this->count("SELECT count(*) FROM events");
  const auto r = this->q().complete_and_claim(*t, "first", "reply", {}, "w", kT0, seconds(30));
  EXPECT_TRUE(r.completed);
  ASSERT_TRUE(r.next);
  EXPECT_EQ(r.next->id, a2);  // the chat's head moved inside the same transaction
  EXPECT_EQ(r.next->attempts, 1);
  EXPECT_EQ(this->status_of(a1), "done");
  EXPECT_EQ(this->status_of(a2), "running");
  EXPECT_EQ(this->count("SELECT count(*) FROM events"), commits_before + 1);  // its agent.started
  // Nothing left: completed, no next.
  const auto last =
      this->q().complete_and_claim(*r.next, "second", "reply 2", {}, "w", kT0, seconds(30));
  EXPECT_TRUE(last.completed);
  EXPECT_FALSE(last.next);
}

TYPED_TEST(QueueTest, CompleteAndClaimWithALostLeaseWritesAndClaimsNothing) {
  this->q().enqueue("a", "x");
  this->q().enqueue("b", "y");
  const auto stale = this->q().claim("w1", kT0, seconds(30));
  const auto fresh = this->q().claim("w2", kT0 + seconds(31), seconds(30));  // takes "a" over
  ASSERT_EQ(fresh->id, stale->id);
  const auto r =
      this->q().complete_and_claim(*stale, "x", "stale", {}, "w1", kT0 + seconds(31), seconds(30));
  EXPECT_FALSE(r.completed);
  EXPECT_FALSE(r.next);
  EXPECT_EQ(this->status_of(2), "queued");  // "b" was not claimed by the refused transaction
  EXPECT_EQ(this->count("SELECT count(*) FROM history"), 0);
}

TYPED_TEST(QueueTest, ReleaseRequeuesAtOnceWithoutCountingTheAttempt) {
  this->q().enqueue("a", "x");
  const auto t = this->q().claim("w1", kT0, seconds(300));
  ASSERT_TRUE(this->q().release(*t, {}));
  const auto again = this->q().claim("w2", kT0, seconds(300));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempts, 1);
}

TYPED_TEST(QueueTest, UniqueIndexMakesASecondPairImpossible) {
  this->q().enqueue("a", "x");
  const auto t = this->q().claim("w", kT0, seconds(30));
  ASSERT_TRUE(this->q().complete(*t, "x", "y", {}));
  EXPECT_THROW(this->b_->exec("INSERT INTO history(chat_id, role, text, task_id) VALUES ('a', "
                              "'assistant', 'again', 1)"),
               std::exception);
}

TYPED_TEST(QueueTest, RequeuePutsFailedTasksBackWithFreshAttempts) {
  this->q().enqueue("a", "x");
  this->q().enqueue("b", "y");
  auto t1 = this->q().claim("w", kT0, seconds(30));
  auto t2 = this->q().claim("w", kT0, seconds(30));
  ASSERT_TRUE(this->q().fail(*t1, "boom", {}));
  EXPECT_FALSE(this->q().requeue(t2->id));  // running, not failed
  ASSERT_TRUE(this->q().fail(*t2, "boom", {}));
  EXPECT_TRUE(this->q().requeue(t1->id));
  EXPECT_EQ(this->status_of(t1->id), "queued");
  EXPECT_EQ(this->q().requeue_failed(), 1);
  EXPECT_EQ(this->q().claim("w", kT0, seconds(30))->attempts, 1);
  EXPECT_EQ(this->count("SELECT count(*) FROM events WHERE type = 'task.requeued'"), 2);
  EXPECT_FALSE(this->q().requeue(999));
}

TYPED_TEST(QueueTest, StatsCountStatusesAndListFailures) {
  this->q().enqueue("a", "x");
  this->q().enqueue("b", "y");
  this->q().enqueue("c", "z");
  auto t = this->q().claim("w", kT0, seconds(30));
  ASSERT_TRUE(this->q().fail(*t, "HTTP 401: bad key", {}));
  this->q().claim("w", kT0, seconds(30));
  const QueueStats s = this->q().stats(std::chrono::system_clock::now());
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

TYPED_TEST(QueueTest, FrontEndInsertsAndDeletesKeepChatHeadsExact) {
  this->b_->exec("INSERT INTO tasks(chat_id, text) VALUES ('a', '1'), ('a', '2'), ('b', '3')");
  EXPECT_EQ(this->count("SELECT count(*) FROM chat_heads"), 2);
  this->b_->exec("DELETE FROM tasks WHERE id = 1");
  EXPECT_EQ(this->count("SELECT task_id FROM chat_heads WHERE chat_id = 'a'"), 2);
  this->b_->exec("UPDATE tasks SET priority = 9 WHERE id = 3");
  EXPECT_EQ(this->q().claim("w", kT0, seconds(30))->id, 3);
}

TYPED_TEST(QueueTest, ConcurrentClaimersNeverShareATask) {
  for (int i = 0; i < 200; ++i) this->q().enqueue("chat" + std::to_string(i), "x");
  std::vector<std::set<int64_t>> seen(4);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      testing::OwnedQueue o = this->b_->open_queue();
      TaskQueue& q = *o.q;
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
  EXPECT_EQ(this->count("SELECT count(*) FROM history"), 400);
}

TYPED_TEST(QueueTest, EnqueuersAndClaimersOnOneChatKeepOrderAndNeverRunTwoAtOnce) {
  // Two front ends enqueue into one chat while four workers claim and complete: every task runs
  // once, one at a time, in id order (queue order), and none is stranded without a head.
  constexpr int kPerEnqueuer = 60;
  std::atomic<int> running{0};
  std::atomic<int> most_running{0};
  std::atomic<bool> enqueuing{true};
  std::mutex mu;
  std::vector<int64_t> completed;
  std::vector<std::thread> enqueuers;
  for (int e = 0; e < 2; ++e)
    enqueuers.emplace_back([&] {
      testing::OwnedQueue o = this->b_->open_queue();
      for (int i = 0; i < kPerEnqueuer; ++i) o.q->enqueue("one", "m" + std::to_string(i));
    });
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w)
    workers.emplace_back([&, w] {
      testing::OwnedQueue o = this->b_->open_queue();
      int idle = 0;
      while (idle < 100) {
        const auto t = o.q->claim("w" + std::to_string(w), kT0, seconds(30));
        if (!t) {
          if (!enqueuing) ++idle;
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          continue;
        }
        idle = 0;
        const int now_running = ++running;
        int seen = most_running.load();
        while (now_running > seen && !most_running.compare_exchange_weak(seen, now_running)) {
        }
        {
          const std::lock_guard lock(mu);
          completed.push_back(t->id);
        }
        --running;  // before the commit that makes the next task claimable
        EXPECT_TRUE(o.q->complete(*t, "x", "y", {}));
      }
    });
  for (auto& th : enqueuers) th.join();
  enqueuing = false;
  for (auto& th : workers) th.join();
  EXPECT_EQ(most_running.load(), 1);
  ASSERT_EQ(completed.size(), 2u * kPerEnqueuer);
  EXPECT_TRUE(std::is_sorted(completed.begin(), completed.end()));
  EXPECT_EQ(this->count("SELECT count(*) FROM tasks WHERE status = 'done'"), 2 * kPerEnqueuer);
  EXPECT_EQ(this->count("SELECT count(*) FROM chat_heads"), 0);
}

TYPED_TEST(QueueTest, RequeuingAnOlderTaskNeverRunsTwoTasksOfAChatAtOnce) {
  const int64_t older = this->q().enqueue("c", "first");
  const auto t1 = this->q().claim("w", kT0, seconds(30));
  ASSERT_TRUE(t1);
  ASSERT_TRUE(this->q().fail(*t1, "boom", {}));
  const int64_t newer = this->q().enqueue("c", "second");
  const auto t2 = this->q().claim("w", kT0, seconds(30));
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->id, newer);
  // The older task comes back while the newer one is running: before, the head trigger moved
  // the chat's head to it and a second worker claimed it at once.
  ASSERT_TRUE(this->q().requeue(older));
  EXPECT_FALSE(this->q().claim("w2", kT0, seconds(30)));
  EXPECT_EQ(this->count("SELECT task_id FROM chat_heads WHERE chat_id = 'c'"), newer);
  ASSERT_TRUE(this->q().complete(*t2, "second", "ok", {}));
  const auto t3 = this->q().claim("w2", kT0, seconds(30));
  ASSERT_TRUE(t3);
  EXPECT_EQ(t3->id, older);
}

TYPED_TEST(QueueTest, TaskIdsAreNeverReusedAfterAFrontEndDeletesTheNewestRows) {
  this->q().enqueue("c", "a");
  const int64_t b = this->q().enqueue("c", "b");
  this->b_->exec("DELETE FROM tasks WHERE id = " + std::to_string(b));
  EXPECT_EQ(this->q().enqueue("c", "c"), b + 1);
  this->b_->exec("DELETE FROM tasks");
  EXPECT_EQ(this->q().enqueue("c", "d"), b + 2);
}

TYPED_TEST(QueueTest, HandWrittenRunningRowsWithoutALeaseAndTextTimesAreRecovered) {
  // Before: a running row without lease_expires_at, or run_after stored as text, was never
  // claimable, wedged its chat, and `worker --drain` never exited.
  this->b_->exec("INSERT INTO tasks(chat_id, text, status) VALUES ('a', 'x', 'running')");
  this->b_->exec("INSERT INTO tasks(chat_id, text, run_after) VALUES ('b', 'y', '1000')");
  const auto a = this->q().claim("w", kT0, seconds(30));
  const auto b = this->q().claim("w", kT0, seconds(30));
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_TRUE(a->reclaimed);
  EXPECT_EQ(a->chat_id, "a");
  EXPECT_EQ(b->chat_id, "b");
}

}  // namespace
}  // namespace autonous::queue
