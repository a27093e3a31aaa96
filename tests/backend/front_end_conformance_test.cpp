// What front ends rely on (#32), the same assertions on both backends through the seam:
// cancelling queued and running tasks (a front end's own UPDATE too), the task.cancelled event
// and finished_at the trigger writes, a cancelled task never blocking its chat, and the reply
// webhook's outbox: rows written only while the webhook is on, their body, claims fenced on the
// attempt, retry, give up, delivered.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/queue.h"
#include "internal/backend/session.h"
#include "internal/queue/reply_outbox.h"
#include "internal/queue/task_queue.h"
#include "tests/backend/backend_fixture.h"

namespace autonous::queue {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const common::TimePoint kNow = common::from_unix_ms(1'800'000'000'000);

template <typename B>
class FrontEndTest : public ::testing::Test {
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
  ReplyOutbox& outbox() { return b_->s->outbox(); }
  std::vector<nlohmann::json> events_of(const std::string& type) {
    std::vector<nlohmann::json> out;
    for (const auto& e : b_->all_events())
      if (e.event.type == type) out.push_back(nlohmann::json::parse(e.event.payload));
    return out;
  }
  events::Event event(const OutboxRow& row, const std::string& type) {
    return {type, row.task_id, row.chat_id, std::nullopt, "{}", 0};
  }

  std::unique_ptr<B> b_;
};

TYPED_TEST_SUITE(FrontEndTest, testing::Backends, testing::BackendNames);

TYPED_TEST(FrontEndTest, ACancelledQueuedTaskIsNeverClaimedAndItsChatGoesOn) {
  const int64_t a1 = this->q().enqueue("a", "first");
  const int64_t a2 = this->q().enqueue("a", "second");
  const auto r = this->q().cancel(a1);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->cancelled);
  EXPECT_EQ(r->was, "queued");
  EXPECT_EQ(this->status_of(a1), "cancelled");
  EXPECT_EQ(this->count("SELECT count(*) FROM tasks WHERE id = " + std::to_string(a1) +
                        " AND finished_at IS NOT NULL"),
            1);
  const auto next = this->q().claim("w", kNow, seconds(30));
  ASSERT_TRUE(next);
  EXPECT_EQ(next->id, a2);  // the chat's next task, at once
  const auto cancelled = this->events_of("task.cancelled");
  ASSERT_EQ(cancelled.size(), 1u);
  EXPECT_EQ(cancelled[0].at("was"), "queued");
  const auto state = this->q().state(a1);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->status, "cancelled");
  EXPECT_FALSE(state->finished_at.empty());
  EXPECT_EQ(this->q().stats(kNow).cancelled, 1);
}

TYPED_TEST(FrontEndTest, AFrontEndsOwnUpdateCancelsAsTheCommandDoes) {
  const int64_t a1 = this->q().enqueue("a", "first");
  const int64_t a2 = this->q().enqueue("a", "second");
  this->b_->exec("UPDATE tasks SET status = 'cancelled' WHERE id = " + std::to_string(a1) +
                 " AND status = 'queued'");
  EXPECT_EQ(this->events_of("task.cancelled").size(), 1u);
  EXPECT_EQ(this->q().claim("w", kNow, seconds(30))->id, a2);
}

TYPED_TEST(FrontEndTest, ARunningTaskCancelledCommitsNothingMoreAndFreesItsChat) {
  const int64_t a1 = this->q().enqueue("a", "first");
  const int64_t a2 = this->q().enqueue("a", "second");
  const auto running = this->q().claim("w", kNow, seconds(30));
  ASSERT_EQ(running->id, a1);
  EXPECT_TRUE(this->q().still_held(*running));
  const auto r = this->q().cancel(a1);
  ASSERT_TRUE(r && r->cancelled);
  EXPECT_EQ(r->was, "running");
  EXPECT_FALSE(this->q().still_held(*running));
  EXPECT_FALSE(this->q().renew_lease(*running, kNow, seconds(30)));
  EXPECT_FALSE(this->q().complete(*running, "first", "a late reply", {}));
  EXPECT_FALSE(this->q().fail(*running, "late", {}));
  EXPECT_FALSE(this->q().retry_later(*running, kNow, "late", {}));
  EXPECT_EQ(this->status_of(a1), "cancelled");
  EXPECT_EQ(this->count("SELECT count(*) FROM history"), 0);
  EXPECT_EQ(this->count("SELECT count(*) FROM tasks WHERE lease_token IS NOT NULL AND id = " +
                        std::to_string(a1)),
            0);
  EXPECT_EQ(this->q().claim("w", kNow, seconds(30))->id, a2);
  EXPECT_EQ(this->events_of("task.cancelled").at(0).at("was"), "running");
}

TYPED_TEST(FrontEndTest, AnEndedTaskIsNotCancelledAndAMissingOneIsSaidSo) {
  const int64_t a = this->q().enqueue("a", "hello");
  const auto t = this->q().claim("w", kNow, seconds(30));
  ASSERT_TRUE(this->q().complete(*t, "hello", "hi", {}));
  const auto r = this->q().cancel(a);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->cancelled);
  EXPECT_EQ(r->was, "done");
  EXPECT_EQ(this->status_of(a), "done");
  EXPECT_FALSE(this->q().cancel(a + 1000));
  EXPECT_FALSE(this->q().state(a + 1000));
  EXPECT_EQ(this->q().state(a)->reply, "hi");
  EXPECT_TRUE(this->events_of("task.cancelled").empty());
}

TYPED_TEST(FrontEndTest, EndingsLeaveOutboxRowsOnlyWhileTheWebhookIsOn) {
  const int64_t off = this->q().enqueue("a", "before");
  this->q().cancel(off);
  EXPECT_EQ(this->count("SELECT count(*) FROM reply_outbox"), 0);
  this->outbox().keep_webhook_on(std::chrono::minutes(60));
  const int64_t done = this->q().enqueue("b", "hello");
  const int64_t failed = this->q().enqueue("c", "doomed");
  const int64_t cancelled = this->q().enqueue("d", "withdrawn");
  const auto t1 = this->q().claim("w", kNow, seconds(30));
  const auto t2 = this->q().claim("w", kNow, seconds(30));
  ASSERT_TRUE(this->q().complete(*t1, "hello", "hi \"there\"\n", {}));
  ASSERT_TRUE(this->q().fail(*t2, "model said no", {}));
  this->q().cancel(cancelled);
  EXPECT_EQ(this->outbox().pending(false), 3);
  const std::vector<OutboxRow> rows = this->outbox().claim(milliseconds(60000), 10);
  ASSERT_EQ(rows.size(), 3u);
  std::map<int64_t, nlohmann::json> body;
  for (const OutboxRow& r : rows) {
    EXPECT_EQ(r.attempts, 1);
    body[r.task_id] = nlohmann::json::parse(r.body);
    EXPECT_EQ(body[r.task_id].at("status"), r.status);
    EXPECT_EQ(body[r.task_id].at("idempotency_key"), std::to_string(r.task_id));
  }
  EXPECT_EQ(body[done].at("reply"), "hi \"there\"\n");
  EXPECT_TRUE(body[done].at("error").is_null());
  EXPECT_EQ(body[done].at("chat_id"), "b");
  EXPECT_EQ(body[done].at("attempts"), 1);
  EXPECT_FALSE(body[done].at("finished_at").get<std::string>().empty());
  EXPECT_EQ(body[failed].at("error"), "model said no");
  EXPECT_TRUE(body[failed].at("reply").is_null());
  EXPECT_EQ(body[cancelled].at("status"), "cancelled");
  // Leased: nothing more to claim now.
  EXPECT_TRUE(this->outbox().claim(milliseconds(60000), 10).empty());
  EXPECT_EQ(this->outbox().pending(true), 0);
  this->b_->exec("UPDATE reply_delivery SET webhook_until = 0");  // the operator's off
  const int64_t later = this->q().enqueue("e", "after");
  this->q().cancel(later);
  EXPECT_EQ(this->count("SELECT count(*) FROM reply_outbox"), 3);
}

TYPED_TEST(FrontEndTest, TheWebhookStaysOnForItsSpanAndNothingTurnsItOffButTime) {
  this->outbox().keep_webhook_on(std::chrono::minutes(60));
  const int64_t until = this->count("SELECT webhook_until FROM reply_delivery");
  // Said again soon after: nothing is written (more than half the span is left).
  this->outbox().keep_webhook_on(std::chrono::minutes(60));
  EXPECT_EQ(this->count("SELECT webhook_until FROM reply_delivery"), until);
  // A shorter span never shortens it (a worker with a webhook is still on).
  this->outbox().keep_webhook_on(std::chrono::milliseconds(1));
  EXPECT_EQ(this->count("SELECT webhook_until FROM reply_delivery"), until);
  // Past its time, endings leave no rows.
  this->b_->exec("UPDATE reply_delivery SET webhook_until = 1000");
  this->q().cancel(this->q().enqueue("a", "x"));
  EXPECT_EQ(this->count("SELECT count(*) FROM reply_outbox"), 0);
  EXPECT_FALSE(this->outbox().next_due());
}

TYPED_TEST(FrontEndTest, AnEndingIsFinal) {
  const int64_t done = this->q().enqueue("a", "hello");
  ASSERT_TRUE(this->q().complete(*this->q().claim("w", kNow, seconds(30)), "hello", "hi", {}));
  const int64_t cancelled = this->q().enqueue("b", "withdrawn");
  this->q().cancel(cancelled);
  const int64_t failed = this->q().enqueue("c", "doomed");
  ASSERT_TRUE(this->q().fail(*this->q().claim("w", kNow, seconds(30)), "no", {}));
  // A front end's UPDATE without `AND status = 'queued'` cannot turn a reply into a
  // cancellation, nor bring a cancelled task back.
  for (const auto& [id, to] : {std::pair{done, "cancelled"},
                               {done, "queued"},
                               {cancelled, "queued"},
                               {failed, "cancelled"}})
    EXPECT_ANY_THROW(this->b_->exec("UPDATE tasks SET status = '" + std::string(to) +
                                    "' WHERE id = " + std::to_string(id)))
        << id << " to " << to;
  EXPECT_EQ(this->status_of(done), "done");
  EXPECT_EQ(this->status_of(cancelled), "cancelled");
  EXPECT_TRUE(this->q().requeue(failed));  // a failure is not final: requeue takes it
  EXPECT_EQ(this->events_of("task.cancelled").size(), 1u);
}

TYPED_TEST(FrontEndTest, AReclaimStartsThePartialReplyOver) {
  this->q().enqueue("a", "hello");
  const auto first = this->q().claim("w", kNow, seconds(30));
  ASSERT_TRUE(this->q().set_partial(*first, "half a rep"));
  EXPECT_EQ(this->b_->text("SELECT partial_reply FROM tasks"), "half a rep");
  // The worker died: its lease expires and another claim takes the task.
  const auto second = this->q().claim("w2", kNow + seconds(31), seconds(30));
  ASSERT_TRUE(second);
  EXPECT_EQ(this->count("SELECT count(*) FROM tasks WHERE partial_reply IS NULL"), 1);
  EXPECT_FALSE(this->q().set_partial(*first, "stale"));  // fenced on the lease
  ASSERT_TRUE(this->q().set_partial(*second, "new"));
  ASSERT_TRUE(this->q().complete(*second, "hello", "the reply", {}));
  EXPECT_EQ(this->count("SELECT count(*) FROM tasks WHERE partial_reply IS NULL"), 1);
}

TYPED_TEST(FrontEndTest, DeliveryReportsAreFencedOnTheClaimAndRetriesComeBack) {
  this->outbox().keep_webhook_on(std::chrono::minutes(60));
  this->q().cancel(this->q().enqueue("a", "x"));
  const std::vector<OutboxRow> first = this->outbox().claim(milliseconds(0), 5);  // expires at once
  ASSERT_EQ(first.size(), 1u);
  const std::vector<OutboxRow> second = this->outbox().claim(milliseconds(60000), 5);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].attempts, 2);
  // The first claim's worker is late: its reports change nothing.
  EXPECT_FALSE(this->outbox().delivered(first[0], this->event(first[0], "reply.delivered")));
  EXPECT_FALSE(this->outbox().retry(first[0], milliseconds(0), "late", this->event(first[0], "x")));
  EXPECT_TRUE(this->outbox().retry(second[0], milliseconds(0), "HTTP 500",
                                   this->event(second[0], "reply.delivery_failed")));
  EXPECT_EQ(this->b_->text("SELECT last_error FROM reply_outbox"), "HTTP 500");
  const std::vector<OutboxRow> third = this->outbox().claim(milliseconds(60000), 5);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(third[0].attempts, 3);
  EXPECT_TRUE(this->outbox().delivered(third[0], this->event(third[0], "reply.delivered")));
  EXPECT_EQ(this->count("SELECT count(*) FROM reply_outbox"), 0);
  EXPECT_EQ(this->outbox().pending(false), 0);
  EXPECT_EQ(this->events_of("reply.delivered").size(), 1u);
  EXPECT_EQ(this->events_of("reply.delivery_failed").size(), 1u);
}

TYPED_TEST(FrontEndTest, AGivenUpRowStaysForTheOperatorAndIsNotPending) {
  this->outbox().keep_webhook_on(std::chrono::minutes(60));
  this->q().cancel(this->q().enqueue("a", "x"));
  const std::vector<OutboxRow> rows = this->outbox().claim(milliseconds(60000), 5);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(
      this->outbox().give_up(rows[0], "HTTP 410", this->event(rows[0], "reply.delivery_failed")));
  EXPECT_EQ(this->outbox().pending(false), 0);
  EXPECT_EQ(this->count("SELECT count(*) FROM reply_outbox WHERE gave_up_at IS NOT NULL"), 1);
  EXPECT_TRUE(this->outbox().claim(milliseconds(0), 5).empty());
}

TYPED_TEST(FrontEndTest, ARetryIsNotDueBeforeItsDelay) {
  this->outbox().keep_webhook_on(std::chrono::minutes(60));
  this->q().cancel(this->q().enqueue("a", "x"));
  const std::vector<OutboxRow> rows = this->outbox().claim(milliseconds(60000), 5);
  ASSERT_TRUE(
      this->outbox().retry(rows.at(0), milliseconds(600000), "down", this->event(rows[0], "x")));
  EXPECT_TRUE(this->outbox().claim(milliseconds(60000), 5).empty());
  EXPECT_EQ(this->outbox().pending(false), 1);
  EXPECT_EQ(this->outbox().pending(true), 0);
  const auto next = this->outbox().next_due();
  ASSERT_TRUE(next);
  EXPECT_GT(*next, milliseconds(590000));
  EXPECT_LE(*next, milliseconds(600000));
}

// PostgreSQL's NOTIFY autonous_task_ended, which `autonous wait` and front ends LISTEN to: sent
// for every ending while reply_delivery.notify is on (TASK_ENDED_NOTIFY), none once off.
TEST(PgTaskEndedNotifyTest, EveryEndingIsNotifiedUnlessTurnedOff) {
  PG_TEST_OR_SKIP();
  testing::Backend<testing::PgDb> b;
  const auto listener = db::pg::Connection::open(b.t.url());
  listener->listen("autonous_task_ended");
  b.q().cancel(b.q().enqueue("a", "x"));
  EXPECT_EQ(listener->wait(milliseconds(5000)), 1);
  const int64_t queued = b.q().enqueue("a", "y");
  EXPECT_EQ(listener->wait(milliseconds(200)), 0);  // enqueueing is no ending
  b.s->outbox().set_notify(false);
  b.q().cancel(queued);
  EXPECT_EQ(listener->wait(milliseconds(300)), 0);
}

// A worker's completion notifies after its commit, from a statement of its own, so that its
// commit does not queue on PostgreSQL's notification lock (migrations/postgres/0023): the commit
// alone sends nothing; PgQueue::commit sends what the trigger would have.
TEST(PgTaskEndedNotifyTest, AWorkersCompletionIsNotifiedAfterItsCommitAsTheTriggerWouldSayIt) {
  PG_TEST_OR_SKIP();
  testing::Backend<testing::PgDb> b;
  const auto listener = db::pg::Connection::open(b.t.url());
  listener->listen("autonous_task_ended");
  const auto c = db::pg::Connection::open(b.t.url());
  PgQueue q(*c);
  const auto claimed = [&](const std::string& chat) {
    q.enqueue(chat, "hello");
    const std::optional<Task> t =
        q.claim("w", std::chrono::system_clock::now(), std::chrono::seconds(60));
    if (!t) throw std::runtime_error("nothing claimed");
    return *t;
  };
  const Task first = claimed("a");
  {
    db::pg::Transaction tx(*c);
    q.transaction_begins();
    ASSERT_TRUE(q.complete_within(first, "hello", {}, "hi", {}, {}));
    tx.commit();  // the transaction's own commit: the trigger left the notification out
  }
  std::vector<std::string> got;
  EXPECT_EQ(listener->wait(milliseconds(300), &got), 0);
  // Any chat id: the ids and chats go to the server as arrays.
  const std::string chat = "tg:\"q\\\\,{x} NULL é";
  const Task second = claimed(chat);
  {
    db::pg::Transaction tx(*c);
    q.transaction_begins();
    ASSERT_TRUE(q.complete_within(second, "hello", {}, "hi", {}, {}));
    q.commit(tx);
  }
  EXPECT_EQ(listener->wait(milliseconds(5000), &got), 1);
  EXPECT_EQ(listener->wait(milliseconds(200), &got), 0);  // once
  const std::string expected =
      c->query(
           "SELECT json_build_object('task_id', $1::bigint, 'chat_id', $2::text, 'status', "
           "'done')::text",
           {db::pg::param(second.id), db::pg::param(chat)})
          .text(0, 0);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], expected);
  // The trigger's own (a cancellation) has the same three keys.
  q.cancel(q.enqueue("a", "later"));
  EXPECT_EQ(listener->wait(milliseconds(5000), &got), 1);
  EXPECT_EQ(nlohmann::json::parse(got.at(1)).size(), 3u);
}

// The worker's path (Session::write_if): exactly one notification per completion, with tool
// steps too; none for a completion rolled back after it was written, a lost lease, or while
// TASK_ENDED_NOTIFY is off.
TEST(PgTaskEndedNotifyTest, TheWorkersWritesNotifyEachCompletionOnceAndNothingRolledBack) {
  PG_TEST_OR_SKIP();
  testing::Backend<testing::PgDb> b;
  const auto listener = db::pg::Connection::open(b.t.url());
  listener->listen("autonous_task_ended");
  const auto turn = [&](const std::string& chat, bool steps, bool keep, bool lose_lease) {
    b.q().enqueue(chat, "hello");
    std::optional<Task> t =
        b.q().claim("w", std::chrono::system_clock::now(), std::chrono::seconds(60));
    if (!t) throw std::runtime_error("nothing claimed");
    if (lose_lease) t->lease_token = "taken";
    std::vector<common::Message> tool_steps;
    if (steps) {
      tool_steps.emplace_back(common::Role::kAssistant, "");
      tool_steps.back().tool_calls =
          R"([{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}])";
      tool_steps.emplace_back(common::Role::kTool, "42");
      tool_steps.back().tool_call_id = "c1";
    }
    return b.s->write_if(
        [&] { return b.q().complete_within(*t, "hello", tool_steps, "hi", {}, {}) && keep; });
  };
  EXPECT_TRUE(turn("a", false, true, false));
  EXPECT_EQ(listener->wait(milliseconds(5000)), 1);
  EXPECT_EQ(listener->wait(milliseconds(300)), 0);
  EXPECT_TRUE(turn("b", true, true, false));
  EXPECT_EQ(listener->wait(milliseconds(5000)), 1);
  EXPECT_EQ(listener->wait(milliseconds(300)), 0);
  EXPECT_FALSE(turn("c", false, false, false));  // written, then rolled back
  EXPECT_FALSE(turn("d", true, false, false));
  EXPECT_FALSE(turn("e", false, true, true));  // the lease lost
  EXPECT_EQ(listener->wait(milliseconds(300)), 0);
  b.s->outbox().set_notify(false);
  EXPECT_TRUE(turn("f", false, true, false));
  EXPECT_TRUE(turn("g", true, true, false));
  EXPECT_EQ(listener->wait(milliseconds(300)), 0);
  EXPECT_EQ(b.scalar("SELECT count(*) FROM tasks WHERE status = 'done'"), 4);
}

}  // namespace
}  // namespace autonous::queue
