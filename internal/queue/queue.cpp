#include "internal/queue/queue.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

#include "internal/db/write_gate.h"
#include "internal/events/event_types.h"

namespace autonous::queue {
namespace {

constexpr const char* kNow = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

std::string new_lease_token() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token(32, '0');
  for (int half = 0; half < 2; ++half) {
    uint64_t v = rng();
    for (int i = 0; i < 16; ++i, v >>= 4) token[half * 16 + i] = kHex[v & 0xF];
  }
  return token;
}

void append_events(SQLite::Database& db, const std::vector<events::Event>& list) {
  for (const auto& e : list) events::append(db, e);
}

// Runs `update` (already bound, fenced on id + lease token) and `list` in one IMMEDIATE
// transaction. Returns false, writing nothing, when the fence matched no row.
bool fenced(SQLite::Database& db, SQLite::Statement& update,
            const std::vector<events::Event>& list) {
  const std::lock_guard gate(db::write_gate());
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  if (update.exec() != 1) return false;  // lease lost: the transaction rolls back
  append_events(db, list);
  tx.commit();
  return true;
}

}  // namespace

int64_t Queue::enqueue(const std::string& chat_id, const std::string& text, int priority) {
  const std::lock_guard gate(db::write_gate());
  SQLite::Statement ins(db_, "INSERT INTO tasks(chat_id, text, priority) VALUES (?, ?, ?)");
  ins.bind(1, chat_id);
  ins.bind(2, text);
  ins.bind(3, priority);
  ins.exec();
  return db_.getLastInsertRowid();
}

std::optional<Task> Queue::claim(const std::string& worker_id, common::TimePoint now,
                                 std::chrono::seconds lease) {
  const int64_t now_ms = common::to_unix_ms(now);
  // Chat heads in claim order; each is one primary-key lookup, so the cost grows with the
  // number of chats that are blocked (running or backing off), never with a chat's backlog.
  static constexpr const char* kCandidate =
      "SELECT t.id, t.status FROM chat_heads h JOIN tasks t ON t.id = h.task_id "
      "WHERE (t.status = 'queued' AND t.run_after <= ?1) "
      "   OR (t.status = 'running' AND t.lease_expires_at <= ?1) "
      "ORDER BY h.priority DESC, h.task_id LIMIT 1";
  {
    // A read first, without the write lock: idle polling must not contend with writers.
    SQLite::Statement peek(db_, kCandidate);
    peek.bind(1, now_ms);
    if (!peek.executeStep()) return std::nullopt;
  }
  const std::lock_guard gate(db::write_gate());
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  SQLite::Statement pick(db_, kCandidate);
  pick.bind(1, now_ms);
  if (!pick.executeStep()) return std::nullopt;
  const int64_t id = pick.getColumn(0).getInt64();
  const bool reclaimed = pick.getColumn(1).getString() == "running";

  Task task;
  task.lease_token = new_lease_token();
  SQLite::Statement upd(db_, std::string("UPDATE tasks SET status = 'running', attempts = attempts + 1, "
                                         "lease_owner = ?, lease_token = ?, lease_expires_at = ?, "
                                         "started_at = coalesce(started_at, ") +
                                 kNow + "), updated_at = " + kNow +
                                 " WHERE id = ? RETURNING chat_id, text, priority, attempts");
  upd.bind(1, worker_id);
  upd.bind(2, task.lease_token);
  upd.bind(3, now_ms + std::chrono::milliseconds(lease).count());
  upd.bind(4, id);
  if (!upd.executeStep()) return std::nullopt;
  task.id = id;
  task.chat_id = upd.getColumn(0).getString();
  task.text = upd.getColumn(1).getString();
  task.priority = upd.getColumn(2).getInt();
  task.attempts = upd.getColumn(3).getInt();
  task.reclaimed = reclaimed;
  upd.reset();

  events::Event started;
  started.type = std::string(events::kAgentStarted);
  started.task_id = task.id;
  started.chat_id = task.chat_id;
  started.payload = nlohmann::json{{"attempt", task.attempts},
                                    {"worker_id", worker_id},
                                    {"reclaimed", reclaimed},
                                    {"priority", task.priority}}
                        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  task.agent_event_id = events::append(db_, started);
  tx.commit();
  return task;
}

bool Queue::renew_lease(const Task& task, common::TimePoint now, std::chrono::seconds lease) {
  const std::lock_guard gate(db::write_gate());
  SQLite::Statement upd(db_,
                        "UPDATE tasks SET lease_expires_at = ? "
                        "WHERE id = ? AND lease_token = ? AND status = 'running'");
  upd.bind(1, common::to_unix_ms(now) + std::chrono::milliseconds(lease).count());
  upd.bind(2, task.id);
  upd.bind(3, task.lease_token);
  return upd.exec() == 1;
}

bool Queue::complete(const Task& task, const std::string& user_text, const std::string& reply,
                     const std::vector<events::Event>& list) {
  const std::lock_guard gate(db::write_gate());
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  SQLite::Statement upd(db_, std::string("UPDATE tasks SET status = 'done', reply = ?, error = NULL, "
                                         "lease_owner = NULL, lease_token = NULL, "
                                         "lease_expires_at = NULL, finished_at = ") +
                                 kNow + ", updated_at = " + kNow +
                                 " WHERE id = ? AND lease_token = ? AND status = 'running'");
  upd.bind(1, reply);
  upd.bind(2, task.id);
  upd.bind(3, task.lease_token);
  if (upd.exec() != 1) return false;  // lease taken over: roll back, write nothing
  SQLite::Statement hist(db_,
                         "INSERT INTO history(chat_id, role, text, task_id) VALUES (?, ?, ?, ?)");
  hist.bind(1, task.chat_id);
  hist.bind(2, "user");
  hist.bind(3, user_text);
  hist.bind(4, task.id);
  hist.exec();
  hist.reset();
  hist.bind(2, "assistant");
  hist.bind(3, reply);
  hist.exec();
  append_events(db_, list);
  tx.commit();
  return true;
}

bool Queue::retry_later(const Task& task, common::TimePoint run_after, const std::string& error,
                        const std::vector<events::Event>& list) {
  SQLite::Statement upd(db_, std::string("UPDATE tasks SET status = 'queued', run_after = ?, error = ?, "
                                         "lease_owner = NULL, lease_token = NULL, "
                                         "lease_expires_at = NULL, updated_at = ") +
                                 kNow + " WHERE id = ? AND lease_token = ? AND status = 'running'");
  upd.bind(1, common::to_unix_ms(run_after));
  upd.bind(2, error);
  upd.bind(3, task.id);
  upd.bind(4, task.lease_token);
  return fenced(db_, upd, list);
}

bool Queue::fail(const Task& task, const std::string& error,
                 const std::vector<events::Event>& list) {
  SQLite::Statement upd(db_, std::string("UPDATE tasks SET status = 'failed', error = ?, "
                                         "lease_owner = NULL, lease_token = NULL, "
                                         "lease_expires_at = NULL, finished_at = ") +
                                 kNow + ", updated_at = " + kNow +
                                 " WHERE id = ? AND lease_token = ? AND status = 'running'");
  upd.bind(1, error);
  upd.bind(2, task.id);
  upd.bind(3, task.lease_token);
  return fenced(db_, upd, list);
}

bool Queue::release(const Task& task, const std::vector<events::Event>& list) {
  SQLite::Statement upd(db_, std::string("UPDATE tasks SET status = 'queued', run_after = 0, "
                                         "attempts = max(attempts - 1, 0), lease_owner = NULL, "
                                         "lease_token = NULL, lease_expires_at = NULL, "
                                         "updated_at = ") +
                                 kNow + " WHERE id = ? AND lease_token = ? AND status = 'running'");
  upd.bind(1, task.id);
  upd.bind(2, task.lease_token);
  return fenced(db_, upd, list);
}

bool Queue::requeue(int64_t task_id) {
  const std::lock_guard gate(db::write_gate());
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  SQLite::Statement upd(db_, std::string("UPDATE tasks SET status = 'queued', attempts = 0, "
                                         "run_after = 0, finished_at = NULL, updated_at = ") +
                                 kNow + " WHERE id = ? AND status = 'failed' RETURNING chat_id");
  upd.bind(1, task_id);
  if (!upd.executeStep()) return false;
  events::Event e;
  e.type = std::string(events::kTaskRequeued);
  e.task_id = task_id;
  e.chat_id = upd.getColumn(0).getString();
  upd.reset();
  events::append(db_, e);
  tx.commit();
  return true;
}

int64_t Queue::requeue_failed() {
  std::vector<int64_t> ids;
  {
    SQLite::Statement q(db_, "SELECT id FROM tasks WHERE status = 'failed' ORDER BY id");
    while (q.executeStep()) ids.push_back(q.getColumn(0).getInt64());
  }
  int64_t n = 0;
  for (const int64_t id : ids) n += requeue(id) ? 1 : 0;
  return n;
}

bool Queue::has_pending() {
  SQLite::Statement q(db_, "SELECT EXISTS (SELECT 1 FROM chat_heads)");
  q.executeStep();
  return q.getColumn(0).getInt() != 0;
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
    }
  }
  {
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
