#include "internal/backend/sqlite/queue.h"

#include <mutex>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/write_transaction.h"
#include "internal/queue/lease_token.h"
#include "internal/queue/queue_events.h"

namespace autonous::queue {
namespace {

#define AUTONOUS_NOW "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

// Chat heads in claim order; each is one primary-key lookup, so the cost grows with the number
// of chats that are blocked (running or backing off), never with a chat's backlog.
// A hand-written row may hold run_after or lease_expires_at as text, or a running row no lease
// at all: the casts and coalesce make such rows claimable instead of wedging their chat.
const std::string kCandidate =
    "SELECT t.id, t.status FROM chat_heads h JOIN tasks t ON t.id = h.task_id "
    "WHERE (t.status = 'queued' AND CAST(t.run_after AS INTEGER) <= ?1) "
    "   OR (t.status = 'running' AND coalesce(CAST(t.lease_expires_at AS INTEGER), 0) <= ?1) "
    "ORDER BY h.priority DESC, h.task_id LIMIT 1";
const std::string kClaim =
    "UPDATE tasks SET status = 'running', attempts = attempts + 1, partial_reply = NULL, "
    "lease_owner = ?, "
    "lease_token = ?, lease_expires_at = ?, started_at = coalesce(started_at, " AUTONOUS_NOW
    "), "
    "first_claimed_at = coalesce(first_claimed_at, ?5), "
    "lease_expiries = lease_expiries + (status = 'running'), "
    "updated_at = " AUTONOUS_NOW
    " WHERE id = ?4 RETURNING chat_id, text, priority, attempts, first_claimed_at, "
    "lease_expiries, created_at";
const std::string kRenew =
    "UPDATE tasks SET lease_expires_at = ? WHERE id = ? AND lease_token = ? AND status = 'running'";
const std::string kComplete =
    "UPDATE tasks SET status = 'done', reply = ?, error = NULL, partial_reply = NULL, lease_owner "
    "= NULL, "
    "lease_token = NULL, lease_expires_at = NULL, finished_at = " AUTONOUS_NOW
    ", "
    "updated_at = " AUTONOUS_NOW " WHERE id = ? AND lease_token = ? AND status = 'running'";
const std::string kHistory =
    "INSERT INTO history(chat_id, role, text, task_id, token_count, token_counter) "
    "VALUES (?, ?, ?, ?, ?, ?)";
const std::string kHistoryStep =
    "INSERT INTO history(chat_id, role, text, task_id, tool_calls, tool_call_id, token_count, "
    "token_counter) VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
const std::string kRetry =
    "UPDATE tasks SET status = 'queued', run_after = ?, error = ?, partial_reply = NULL, "
    "lease_owner = NULL, "
    "lease_token = NULL, lease_expires_at = NULL, updated_at = " AUTONOUS_NOW
    " WHERE id = ? AND lease_token = ? AND status = 'running'";
const std::string kFail =
    "UPDATE tasks SET status = 'failed', error = ?, partial_reply = NULL, lease_owner = NULL, "
    "lease_token = NULL, "
    "lease_expires_at = NULL, finished_at = " AUTONOUS_NOW ", updated_at = " AUTONOUS_NOW
    " WHERE id = ? AND lease_token = ? AND status = 'running'";
const std::string kRelease =
    "UPDATE tasks SET status = 'queued', run_after = 0, attempts = max(attempts - 1, 0), "
    "partial_reply = NULL, lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, "
    "updated_at = " AUTONOUS_NOW " WHERE id = ? AND lease_token = ? AND status = 'running'";
const std::string kRequeue =
    "UPDATE tasks SET status = 'queued', attempts = 0, run_after = 0, finished_at = NULL, "
    "first_claimed_at = NULL, lease_expiries = 0, "
    "updated_at = " AUTONOUS_NOW " WHERE id = ? AND status = 'failed' RETURNING chat_id";

#undef AUTONOUS_NOW

}  // namespace

bool Queue::fenced(const std::string& update_sql,
                   const std::function<void(SQLite::Statement&)>& bind,
                   const std::vector<events::Event>& list) {
  db::WriteTransaction tx(db_);
  {
    const db::CachedStatement update = cache_.get(update_sql);
    bind(*update);
    if (update->exec() != 1) return false;  // lease lost: the transaction rolls back
  }
  for (const auto& e : list) events::append(cache_, e);
  tx.commit();
  return true;
}

int64_t Queue::enqueue(const std::string& chat_id, const std::string& text, int priority) {
  db::WriteTransaction tx(db_);
  const db::CachedStatement ins =
      cache_.get("INSERT INTO tasks(chat_id, text, priority) VALUES (?, ?, ?)");
  ins->bind(1, chat_id);
  ins->bind(2, text);
  ins->bind(3, priority);
  ins->exec();
  const int64_t id = db_.getLastInsertRowid();
  tx.commit();
  return id;
}

std::optional<Task> Queue::claim(const std::string& worker_id, common::TimePoint now,
                                 std::chrono::seconds lease) {
  const int64_t now_ms = common::to_unix_ms(now);
  {
    // A read first, without the write lock: idle polling must not contend with writers.
    const db::CachedStatement peek = cache_.get(kCandidate);
    peek->bind(1, now_ms);
    if (!peek->executeStep()) return std::nullopt;
  }
  db::WriteTransaction tx(db_);
  std::optional<Task> task = claim_in_transaction(worker_id, now_ms, lease);
  if (task) tx.commit();
  return task;
}

std::optional<Task> Queue::claim_in_transaction(const std::string& worker_id, int64_t now_ms,
                                                std::chrono::seconds lease) {
  int64_t id = 0;
  bool reclaimed = false;
  {
    // Inside the write transaction: another worker may have taken it since any earlier look.
    const db::CachedStatement pick = cache_.get(kCandidate);
    pick->bind(1, now_ms);
    if (!pick->executeStep()) return std::nullopt;
    id = pick->getColumn(0).getInt64();
    reclaimed = pick->getColumn(1).getString() == "running";
  }
  Task task;
  task.id = id;
  task.reclaimed = reclaimed;
  task.lease_token = new_lease_token();
  {
    const db::CachedStatement upd = cache_.get(kClaim);
    upd->bind(1, worker_id);
    upd->bind(2, task.lease_token);
    upd->bind(3, now_ms + std::chrono::milliseconds(lease).count());
    upd->bind(4, id);
    upd->bind(5, now_ms);
    if (!upd->executeStep()) return std::nullopt;
    task.chat_id = upd->getColumn(0).getString();
    task.text = upd->getColumn(1).getString();
    task.priority = upd->getColumn(2).getInt64();
    task.attempts = upd->getColumn(3).getInt();
    task.first_claimed_at = common::from_unix_ms(upd->getColumn(4).getInt64());
    task.lease_expiries = upd->getColumn(5).getInt();
    task.enqueued_at =
        common::parse_utc(upd->getColumn(6).getString()).value_or(common::TimePoint{});
  }
  task.agent_event_id = events::append(cache_, agent_started(task, worker_id));
  return task;
}

bool Queue::renew_lease(const Task& task, common::TimePoint now, std::chrono::seconds lease) {
  db::WriteTransaction tx(db_);
  bool renewed = false;
  {
    const db::CachedStatement upd = cache_.get(kRenew);
    upd->bind(1, common::to_unix_ms(now) + std::chrono::milliseconds(lease).count());
    upd->bind(2, task.id);
    upd->bind(3, task.lease_token);
    renewed = upd->exec() == 1;
  }
  tx.commit();
  return renewed;
}

bool Queue::complete_within(const Task& task, const std::string& user_text,
                            const std::vector<common::Message>& steps, const std::string& reply,
                            const std::vector<events::Event>& list, const TurnTokens& tokens) {
  // A row's token count and its counter's name at `at`, `at + 1`: NULL when none is stored.
  const auto bind_count = [&tokens](SQLite::Statement& q, int at, int64_t n) {
    if (tokens.counter.empty() || n < 0) {
      q.bind(at);
      q.bind(at + 1);
    } else {
      q.bind(at, n);
      q.bind(at + 1, tokens.counter);
    }
  };
  {
    const db::CachedStatement upd = cache_.get(kComplete);
    upd->bind(1, reply);
    upd->bind(2, task.id);
    upd->bind(3, task.lease_token);
    if (upd->exec() != 1) return false;  // lease taken over: the caller rolls back
  }
  {
    const db::CachedStatement hist = cache_.get(kHistory);
    hist->bind(1, task.chat_id);
    hist->bind(2, "user");
    hist->bind(3, user_text);
    hist->bind(4, task.id);
    bind_count(*hist, 5, tokens.user);
    hist->exec();
    hist->reset();
  }
  if (!steps.empty()) {
    const db::CachedStatement step = cache_.get(kHistoryStep);
    for (size_t i = 0; i < steps.size(); ++i) {
      const common::Message& m = steps[i];
      step->bind(1, task.chat_id);
      step->bind(2, std::string(common::to_string(m.role)));
      step->bind(3, m.content);
      step->bind(4, task.id);
      if (m.tool_calls.empty())
        step->bind(5);
      else
        step->bind(5, m.tool_calls);
      if (m.tool_call_id.empty())
        step->bind(6);
      else
        step->bind(6, m.tool_call_id);
      bind_count(*step, 7, i < tokens.steps.size() ? tokens.steps[i] : -1);
      step->exec();
      step->reset();
    }
  }
  {
    const db::CachedStatement hist = cache_.get(kHistory);
    hist->bind(1, task.chat_id);
    hist->bind(2, "assistant");
    hist->bind(3, reply);
    hist->bind(4, task.id);
    bind_count(*hist, 5, tokens.reply);
    hist->exec();
  }
  for (const auto& e : list) events::append(cache_, e);
  return true;
}

std::optional<Task> Queue::claim_within(const std::string& worker_id, common::TimePoint now,
                                        std::chrono::seconds lease) {
  return claim_in_transaction(worker_id, common::to_unix_ms(now), lease);
}

bool Queue::complete(const Task& task, const std::string& user_text, const std::string& reply,
                     const std::vector<events::Event>& list) {
  db::WriteTransaction tx(db_);
  if (!complete_within(task, user_text, {}, reply, list, {})) return false;
  tx.commit();
  return true;
}

Queue::CompleteAndClaim Queue::complete_and_claim(const Task& task, const std::string& user_text,
                                                  const std::string& reply,
                                                  const std::vector<events::Event>& list,
                                                  const std::string& worker_id,
                                                  common::TimePoint now,
                                                  std::chrono::seconds lease) {
  CompleteAndClaim out;
  db::WriteTransaction tx(db_);
  if (!complete_within(task, user_text, {}, reply, list, {})) return out;
  out.completed = true;
  out.next = claim_in_transaction(worker_id, common::to_unix_ms(now), lease);
  tx.commit();
  return out;
}

bool Queue::retry_later(const Task& task, common::TimePoint run_after, const std::string& error,
                        const std::vector<events::Event>& list) {
  return fenced(
      kRetry,
      [&](SQLite::Statement& s) {
        s.bind(1, common::to_unix_ms(run_after));
        s.bind(2, error);
        s.bind(3, task.id);
        s.bind(4, task.lease_token);
      },
      list);
}

bool Queue::fail(const Task& task, const std::string& error,
                 const std::vector<events::Event>& list) {
  return fenced(
      kFail,
      [&](SQLite::Statement& s) {
        s.bind(1, error);
        s.bind(2, task.id);
        s.bind(3, task.lease_token);
      },
      list);
}

bool Queue::release(const Task& task, const std::vector<events::Event>& list) {
  return fenced(
      kRelease,
      [&](SQLite::Statement& s) {
        s.bind(1, task.id);
        s.bind(2, task.lease_token);
      },
      list);
}

bool Queue::requeue(int64_t task_id) {
  db::WriteTransaction tx(db_);
  std::string chat_id;
  {
    const db::CachedStatement upd = cache_.get(kRequeue);
    upd->bind(1, task_id);
    if (!upd->executeStep()) return false;
    chat_id = upd->getColumn(0).getString();
  }
  events::append(cache_, task_requeued(task_id, chat_id));
  tx.commit();
  return true;
}

std::vector<int64_t> Queue::failed_ids() {
  std::vector<int64_t> ids;
  const db::CachedStatement q =
      cache_.get("SELECT id FROM tasks WHERE status = 'failed' ORDER BY id");
  while (q->executeStep()) ids.push_back(q->getColumn(0).getInt64());
  return ids;
}

bool Queue::set_partial(const Task& task, const std::string& text) {
  db::WriteTransaction tx(db_);
  const db::CachedStatement upd = cache_.get(
      "UPDATE tasks SET partial_reply = ? WHERE id = ? AND lease_token = ? AND status = "
      "'running'");
  upd->bind(1, text);
  upd->bind(2, task.id);
  upd->bind(3, task.lease_token);
  if (upd->exec() != 1) return false;
  tx.commit();
  return true;
}

std::optional<CancelResult> Queue::cancel(int64_t task_id) {
  db::WriteTransaction tx(db_);
  std::string was;
  {
    const db::CachedStatement q = cache_.get("SELECT status FROM tasks WHERE id = ?");
    q->bind(1, task_id);
    if (!q->executeStep()) return std::nullopt;
    was = q->getColumn(0).getString();
  }
  if (was != "queued" && was != "running") return CancelResult{false, was};
  const db::CachedStatement upd = cache_.get(
      "UPDATE tasks SET status = 'cancelled' WHERE id = ? AND status IN ('queued', 'running')");
  upd->bind(1, task_id);
  upd->exec();
  tx.commit();
  return CancelResult{true, was};
}

std::optional<TaskState> Queue::state(int64_t task_id) {
  const db::CachedStatement q = cache_.get(
      "SELECT chat_id, status, reply, error, partial_reply, attempts, "
      "coalesce(finished_at, '') FROM tasks WHERE id = ?");
  q->bind(1, task_id);
  if (!q->executeStep()) return std::nullopt;
  const auto text = [&](int i) -> std::optional<std::string> {
    if (q->getColumn(i).isNull()) return std::nullopt;
    return q->getColumn(i).getString();
  };
  TaskState t{q->getColumn(0).getString(), q->getColumn(1).getString(), text(2), text(3), text(4),
              q->getColumn(5).getInt(),    q->getColumn(6).getString()};
  q->reset();
  return t;
}

bool Queue::still_held(const Task& task) {
  const db::CachedStatement q =
      cache_.get("SELECT 1 FROM tasks WHERE id = ? AND lease_token = ? AND status = 'running'");
  q->bind(1, task.id);
  q->bind(2, task.lease_token);
  const bool held = q->executeStep();
  q->reset();
  return held;
}

bool Queue::has_pending() {
  const db::CachedStatement q = cache_.get("SELECT EXISTS (SELECT 1 FROM chat_heads)");
  q->executeStep();
  return q->getColumn(0).getInt() != 0;
}

QueueStats Queue::stats(common::TimePoint now) {
  QueueStats s;
  {
    SQLite::Statement q(db_, "SELECT status, count(*) FROM tasks GROUP BY status");
    while (q.executeStep()) {
      const std::string status = q.getColumn(0).getString();
      const int64_t n = q.getColumn(1).getInt64();
      if (status == "queued") s.queued = n;
      if (status == "running") s.running = n;
      if (status == "done") s.done = n;
      if (status == "failed") s.failed = n;
      if (status == "cancelled") s.cancelled = n;
    }
  }
  {
    // julianday of the Unix epoch is 2440587.5.
    SQLite::Statement q(db_,
                        "SELECT (? / 86400000.0 + 2440587.5 - julianday(min(created_at))) * 86400 "
                        "FROM tasks WHERE status = 'queued'");
    q.bind(1, common::to_unix_ms(now));
    if (q.executeStep() && !q.getColumn(0).isNull())
      s.oldest_queued_age_seconds = q.getColumn(0).getDouble();
  }
  {
    SQLite::Statement q(db_,
                        "SELECT id, chat_id, coalesce(error, ''), coalesce(finished_at, '') "
                        "FROM tasks WHERE status = 'failed' ORDER BY finished_at DESC, id DESC "
                        "LIMIT 5");
    while (q.executeStep()) {
      s.recent_failures.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getString(),
                                   q.getColumn(2).getString(), q.getColumn(3).getString()});
    }
  }
  return s;
}

}  // namespace autonous::queue
