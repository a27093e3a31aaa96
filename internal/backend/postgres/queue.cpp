#include "internal/backend/postgres/queue.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/events.h"
#include "internal/backend/postgres/queue_statements.h"
#include "internal/backend/postgres/search.h"
#include "internal/common/utf8.h"
#include "internal/events/event_types.h"
#include "internal/queue/lease_token.h"
#include "internal/queue/queue_events.h"

namespace autonous::queue {
namespace {

using db::pg::param;
using pg_statements::complete_turn;
using pg_statements::kClaimExpired;
using pg_statements::kClaimHead;
using pg_statements::kComplete;
using pg_statements::kEndedNotify;
using pg_statements::kFail;
using pg_statements::kHistoryRow;
using pg_statements::kNotifyAfterCommit;
using pg_statements::kRelease;
using pg_statements::kRenew;
using pg_statements::kRequeue;
using pg_statements::kRetry;

// Expired leases are looked for before the heads at most every kExpiredFirstMs per queue, and
// after them, when no head was claimable, at most every kExpiredIdleMs: each look walks the
// expiry index's dead entries. (A clock that went back, a new server's, looks again at once.)
constexpr int64_t kExpiredFirstMs = 10000;
constexpr int64_t kExpiredIdleMs = 1000;
int64_t ms(std::chrono::seconds s) { return std::chrono::milliseconds(s).count(); }

// A row's token count as a parameter: NULL when none is stored, or when the connection repairs
// `text` on its way (a NUL byte, invalid UTF-8: connection.h) and the count is another text's.
db::pg::Param count_of(const TurnTokens& t, int64_t n, const std::string& text) {
  if (t.counter.empty() || n < 0 || text.find('\0') != std::string::npos ||
      !common::is_valid_utf8(text))
    return db::pg::Param();
  return param(n);
}
db::pg::Param counter_of(const TurnTokens& t) {
  return t.counter.empty() ? db::pg::Param() : param(t.counter);
}

}  // namespace

PgQueue::PgQueue(db::pg::Connection& c, bool* pair_indexed) : c_(c), pair_indexed_(pair_indexed) {
  measure_clock(false);
}

void PgQueue::measure_clock(bool again) {
  static std::mutex m;
  static std::map<std::string, int64_t> measured;  // by URL
  std::unique_lock lock(m, std::defer_lock);
  if (!again) {
    lock.lock();  // sessions opened at once (a test's, the dashboard's) share one measurement
    if (const auto it = measured.find(c_.url()); it != measured.end()) {
      clock_offset_ms_ = it->second;
      return;
    }
  }
  // The server's clock minus ours, measured once (half the round trip is the error): every time
  // this queue compares or stores (leases, run_after) is on the server's clock, so workers on
  // hosts whose clocks disagree never take each other's live leases.
  // The fastest of three samples: a round trip slowed by a busy host would put the offset off
  // by half of it, and two connections' offsets would disagree by that much (a Retry-After of
  // 2 s was once kept as 1.99 s under a loaded CI).
  int64_t best_trip = INT64_MAX;
  for (int sample = 0; sample < 3; ++sample) {
    const int64_t before = common::to_unix_ms(std::chrono::system_clock::now());
    const int64_t server =
        c_.query("SELECT round(extract(epoch FROM clock_timestamp()) * 1000)::bigint").int64(0, 0);
    const int64_t after = common::to_unix_ms(std::chrono::system_clock::now());
    if (after - before < best_trip) {
      best_trip = after - before;
      clock_offset_ms_ = server - (before + after) / 2;
    }
  }
  if (!lock.owns_lock()) lock.lock();
  measured[c_.url()] = clock_offset_ms_;
}

int64_t PgQueue::after_reconnect() {
  measure_clock(true);  // perhaps another server now (a failover)
  if (unconfirmed_claim_.empty()) return 0;
  db::pg::Transaction tx(c_);
  const db::pg::Result r = c_.query(
      "UPDATE tasks SET status = 'queued', run_after = 0, attempts = greatest(attempts - 1, 0), "
      "lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = "
      "autonous_now() WHERE lease_token = $1 AND status = 'running' RETURNING id, chat_id",
      {param(unconfirmed_claim_)});
  int64_t id = 0;
  if (r.rows() > 0) {
    id = r.int64(0, 0);
    events::Event e;
    e.type = std::string(events::kAgentReleased);
    e.task_id = id;
    e.chat_id = r.text(0, 1);
    e.payload = R"({"reason":"connection_lost"})";
    events::append(c_, e);
  }
  tx.commit();
  unconfirmed_claim_.clear();
  return id;
}

int64_t PgQueue::server_ms(common::TimePoint t) const {
  return common::to_unix_ms(t) + clock_offset_ms_;
}

int64_t PgQueue::enqueue(const std::string& chat_id, const std::string& text, int priority) {
  return c_
      .query("INSERT INTO tasks(chat_id, text, priority) VALUES ($1, $2, $3) RETURNING id",
             {param(chat_id), param(text), param(int64_t{priority})})
      .int64(0, 0);
}

std::optional<Task> PgQueue::claim(const std::string& worker_id, common::TimePoint now,
                                   std::chrono::seconds lease) {
  db::pg::Transaction tx(c_);
  std::optional<Task> task = claim_in_transaction(worker_id, server_ms(now), lease);
  tx.commit();
  unconfirmed_claim_.clear();
  return task;
}

std::optional<Task> PgQueue::claim_in_transaction(const std::string& worker_id, int64_t now_ms,
                                                  std::chrono::seconds lease) {
  // A completion's chat is not notified once its transaction claims: its next task was taken
  // here, or an older head was (the system is busy), or none is claimable now.
  wake_chat_.clear();
  Task task;
  task.lease_token = new_lease_token();
  unconfirmed_claim_ = task.lease_token;  // until the caller's commit returns
  {
    const std::vector<db::pg::Param> params{param(now_ms), param(worker_id),
                                            param(task.lease_token), param(now_ms + ms(lease))};
    const auto expired = [&] {
      expired_checked_ms_ = now_ms;
      return c_.query(kClaimExpired, params);
    };
    const auto due = [&](int64_t every) {
      return now_ms < expired_checked_ms_ || now_ms - expired_checked_ms_ >= every;
    };
    const bool look_first = due(kExpiredFirstMs);
    const db::pg::Result first = look_first ? expired() : c_.query(kClaimHead, params);
    std::optional<db::pg::Result> second;
    if (first.rows() == 0 && (look_first || due(kExpiredIdleMs)))
      second.emplace(look_first ? c_.query(kClaimHead, params) : expired());
    const db::pg::Result& r = second ? *second : first;
    if (r.rows() == 0) return std::nullopt;
    task.id = r.int64(0, 0);
    task.reclaimed = r.text(0, 1) == "running";
    task.chat_id = r.text(0, 2);
    task.text = r.text(0, 3);
    task.priority = r.int64(0, 4);
    task.attempts = static_cast<int>(r.int64(0, 5));
    task.first_claimed_at = common::from_unix_ms(r.int64(0, 6) - clock_offset_ms_);  // ours
    task.lease_expiries = static_cast<int>(r.int64(0, 7));
    // The server's clock, as ours (first_claimed_at's offset).
    if (const auto at = common::parse_utc(r.text(0, 8)))
      task.enqueued_at = common::from_unix_ms(common::to_unix_ms(*at) - clock_offset_ms_);
    task.agent_event_id = r.int64(0, 9);
  }
  return task;
}

bool PgQueue::renew_lease(const Task& task, common::TimePoint now, std::chrono::seconds lease) {
  return c_.query(kRenew,
                  {param(server_ms(now) + ms(lease)), param(task.id), param(task.lease_token)})
             .affected() == 1;
}

bool PgQueue::complete_within(const Task& task, const std::string& user_text,
                              const std::vector<common::Message>& steps, const std::string& reply,
                              const std::vector<events::Event>& list, const TurnTokens& tokens) {
  if (steps.empty()) {
    std::vector<db::pg::Param> params = events::append_all_params(list);
    const store::NewRowsIndex index = store::index_new_rows(task.chat_id, {user_text, reply});
    const store::CountChange& n = index.counts;
    for (db::pg::Param& p : std::vector<db::pg::Param>{
             param(reply), param(task.id), param(task.lease_token), param(task.chat_id),
             param(user_text), count_of(tokens, tokens.user, user_text),
             count_of(tokens, tokens.reply, reply), counter_of(tokens), param(index.chat),
             param(index.terms.at(0)), param(index.terms.at(1)),
             db::pg::array_literal(n.overall_terms), db::pg::array_literal(n.overall_rows),
             db::pg::array_literal(n.chats), db::pg::array_literal(n.terms),
             db::pg::array_literal(n.rows)})
      params.push_back(std::move(p));
    const db::pg::Result r = c_.query(complete_turn(), params);
    if (r.int64(0, 0) != 1) return false;  // nothing written
    // The pair is indexed; the chat's other queued rows (a front end's), if any, are the
    // engine's write's to index in this transaction (PgSearchIndex::index_in_transaction).
    if (pair_indexed_ != nullptr) *pair_indexed_ = r.text(0, 2) != "t";
    wake_chat_ = task.chat_id;  // until this transaction claims the chat's next task
    // reply_delivery.notify as this statement saw it: switched on before the commit, this
    // completion goes untold (a hint; the next ones are told).
    if (r.text(0, 1) == "t") ended_.emplace_back(task.id, task.chat_id);
    return true;
  }
  const bool notify =
      c_.query("SELECT (SELECT notify FROM reply_delivery WHERE id = 1), " + kNotifyAfterCommit)
          .text(0, 0) == "t";
  if (c_.query(kComplete, {param(reply), param(task.id), param(task.lease_token)}).affected() != 1)
    return false;  // lease taken over: the caller rolls back
  wake_chat_ = task.chat_id;
  if (notify) ended_.emplace_back(task.id, task.chat_id);
  // The user's message, the steps in order, the reply: ids ascending in that order.
  c_.query(kHistoryRow,
           {param(task.chat_id), param("user"), param(user_text), param(task.id), std::nullopt,
            std::nullopt, count_of(tokens, tokens.user, user_text), counter_of(tokens)});
  for (size_t i = 0; i < steps.size(); ++i) {
    const common::Message& m = steps[i];
    const int64_t n = i < tokens.steps.size() ? tokens.steps[i] : -1;
    c_.query(kHistoryRow,
             {param(task.chat_id), param(std::string(common::to_string(m.role))), param(m.content),
              param(task.id), m.tool_calls.empty() ? db::pg::Param() : param(m.tool_calls),
              m.tool_call_id.empty() ? db::pg::Param() : param(m.tool_call_id),
              count_of(tokens, n, m.content), counter_of(tokens)});
  }
  c_.query(kHistoryRow,
           {param(task.chat_id), param("assistant"), param(reply), param(task.id), std::nullopt,
            std::nullopt, count_of(tokens, tokens.reply, reply), counter_of(tokens)});
  events::append_all(c_, list);
  return true;
}

std::optional<Task> PgQueue::claim_within(const std::string& worker_id, common::TimePoint now,
                                          std::chrono::seconds lease) {
  return claim_in_transaction(worker_id, server_ms(now), lease);
}

void PgQueue::before_commit() {
  if (wake_chat_.empty()) return;
  // A completion that claims nothing after it (a stopping slot, complete()): the chat's next
  // task, if it has one, is claimable and no one was told.
  c_.query(
      "SELECT pg_notify('autonous_tasks', task_id::text) FROM chat_heads WHERE chat_id = $1 "
      "AND NOT running",
      {param(wake_chat_)});
  wake_chat_.clear();
}

void PgQueue::commit(db::pg::Transaction& tx) {
  before_commit();
  // The notification goes through the same server session (a pooled connection would be given
  // back at the commit and borrowed again).
  const bool notify = !ended_.empty();
  if (notify) c_.hold(true);
  try {
    tx.commit();
  } catch (...) {
    // Committed or not, no one is told: a notification is a hint (migrations/postgres/0023).
    ended_.clear();
    if (notify) c_.hold(false);
    throw;
  }
  unconfirmed_claim_.clear();
  if (!notify) return;
  try {
    std::vector<db::pg::Param> ids;
    std::vector<db::pg::Param> chats;
    for (const auto& [id, chat] : ended_) {
      ids.push_back(param(id));
      chats.push_back(param(chat));
    }
    c_.query(kEndedNotify, {db::pg::array_literal(ids), db::pg::array_literal(chats)});
  } catch (const std::exception& e) {  // a hint: a broken connection shows at the next statement
    spdlog::debug("autonous_task_ended not sent after a commit: {}", e.what());
  }
  ended_.clear();
  c_.hold(false);
}

bool PgQueue::complete(const Task& task, const std::string& user_text, const std::string& reply,
                       const std::vector<events::Event>& list) {
  db::pg::Transaction tx(c_);
  transaction_begins();
  if (!complete_within(task, user_text, {}, reply, list, {})) return false;
  commit(tx);
  return true;
}

TaskQueue::CompleteAndClaim PgQueue::complete_and_claim(
    const Task& task, const std::string& user_text, const std::string& reply,
    const std::vector<events::Event>& list, const std::string& worker_id, common::TimePoint now,
    std::chrono::seconds lease) {
  CompleteAndClaim out;
  db::pg::Transaction tx(c_);
  transaction_begins();
  if (!complete_within(task, user_text, {}, reply, list, {})) return out;
  out.completed = true;
  out.next = claim_in_transaction(worker_id, server_ms(now), lease);
  commit(tx);
  return out;
}

bool PgQueue::fenced(const std::string& update_sql,
                     const std::vector<std::optional<std::string>>& params,
                     const std::vector<events::Event>& list) {
  db::pg::Transaction tx(c_);
  if (c_.query(update_sql, params).affected() != 1) return false;  // rolled back
  events::append_all(c_, list);
  tx.commit();
  return true;
}

bool PgQueue::retry_later(const Task& task, common::TimePoint run_after, const std::string& error,
                          const std::vector<events::Event>& list) {
  return fenced(
      kRetry, {param(server_ms(run_after)), param(error), param(task.id), param(task.lease_token)},
      list);
}

bool PgQueue::fail(const Task& task, const std::string& error,
                   const std::vector<events::Event>& list) {
  return fenced(kFail, {param(error), param(task.id), param(task.lease_token)}, list);
}

bool PgQueue::release(const Task& task, const std::vector<events::Event>& list) {
  return fenced(kRelease, {param(task.id), param(task.lease_token)}, list);
}

bool PgQueue::requeue(int64_t task_id) {
  db::pg::Transaction tx(c_);
  std::string chat_id;
  {
    const db::pg::Result r = c_.query(kRequeue, {param(task_id)});
    if (r.rows() == 0) return false;
    chat_id = r.text(0, 0);
  }
  events::append(c_, task_requeued(task_id, chat_id));
  tx.commit();
  return true;
}

std::vector<int64_t> PgQueue::failed_ids() {
  const db::pg::Result r = c_.query("SELECT id FROM tasks WHERE status = 'failed' ORDER BY id");
  std::vector<int64_t> ids;
  for (int i = 0; i < r.rows(); ++i) ids.push_back(r.int64(i, 0));
  return ids;
}

bool PgQueue::set_partial(const Task& task, const std::string& text) {
  return c_.query(
               "UPDATE tasks SET partial_reply = $1 WHERE id = $2 AND lease_token = $3 AND "
               "status = 'running'",
               {param(text), param(task.id), param(task.lease_token)})
             .affected() == 1;
}

std::optional<CancelResult> PgQueue::cancel(int64_t task_id) {
  db::pg::Transaction tx(c_);
  const db::pg::Result r =
      c_.query("SELECT status FROM tasks WHERE id = $1 FOR UPDATE", {param(task_id)});
  if (r.rows() == 0) return std::nullopt;
  const std::string was = r.text(0, 0);
  if (was != "queued" && was != "running") return CancelResult{false, was};
  c_.query("UPDATE tasks SET status = 'cancelled' WHERE id = $1", {param(task_id)});
  tx.commit();
  return CancelResult{true, was};
}

std::optional<TaskState> PgQueue::state(int64_t task_id) {
  const db::pg::Result r = c_.query(
      "SELECT chat_id, status, reply, error, partial_reply, attempts, coalesce(finished_at, '') "
      "FROM tasks WHERE id = $1",
      {param(task_id)});
  if (r.rows() == 0) return std::nullopt;
  const auto text = [&](int i) -> std::optional<std::string> {
    if (r.is_null(0, i)) return std::nullopt;
    return r.text(0, i);
  };
  return TaskState{r.text(0, 0), r.text(0, 1), text(2),
                   text(3),      text(4),      static_cast<int>(r.int64(0, 5)),
                   r.text(0, 6)};
}

bool PgQueue::still_held(const Task& task) {
  return c_.query(
               "SELECT 1 FROM tasks WHERE id = $1 AND lease_token = $2 AND status = "
               "'running'",
               {param(task.id), param(task.lease_token)})
             .rows() == 1;
}

bool PgQueue::has_pending() {
  return c_.query("SELECT EXISTS (SELECT 1 FROM chat_heads)").text(0, 0) == "t";
}

QueueStats PgQueue::stats(common::TimePoint now) {
  QueueStats s;
  // One snapshot for all three reads.
  db::pg::Transaction tx(c_);
  c_.exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
  {
    const db::pg::Result r = c_.query("SELECT status, count(*) FROM tasks GROUP BY status");
    for (int i = 0; i < r.rows(); ++i) {
      const std::string status = r.text(i, 0);
      const int64_t n = r.int64(i, 1);
      if (status == "queued") s.queued = n;
      if (status == "running") s.running = n;
      if (status == "done") s.done = n;
      if (status == "failed") s.failed = n;
      if (status == "cancelled") s.cancelled = n;
    }
  }
  {
    const db::pg::Result r = c_.query(
        "SELECT $1::bigint / 1000.0 - extract(epoch FROM min(created_at)::timestamptz) "
        "FROM tasks WHERE status = 'queued'",
        {param(server_ms(now))});
    if (!r.is_null(0, 0)) s.oldest_queued_age_seconds = r.real(0, 0);
  }
  {
    const db::pg::Result r = c_.query(
        "SELECT id, chat_id, coalesce(error, ''), coalesce(finished_at, '') FROM tasks "
        "WHERE status = 'failed' ORDER BY finished_at DESC NULLS LAST, id DESC LIMIT 5");
    for (int i = 0; i < r.rows(); ++i)
      s.recent_failures.push_back({r.int64(i, 0), r.text(i, 1), r.text(i, 2), r.text(i, 3)});
  }
  tx.commit();
  return s;
}

}  // namespace autonous::queue
