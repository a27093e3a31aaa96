#include "internal/backend/sqlite/reply_outbox.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/backend/sqlite/events.h"
#include "internal/backend/sqlite/write_transaction.h"

namespace autonous::queue {
namespace {

#define OUTBOX_NOW_MS "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"

// Runs `sql` (bound to the row's id and attempt: its claim) and appends `event` in one
// transaction; false, writing nothing, when the claim was lost.
bool outbox_fenced(SQLite::Database& db, const std::string& sql, const OutboxRow& row,
                   const std::optional<std::string>& error, std::optional<int64_t> delay_ms,
                   const events::Event& event) {
  db::WriteTransaction tx(db);
  SQLite::Statement q(db, sql);
  int i = 1;
  if (delay_ms) q.bind(i++, *delay_ms);
  if (error) q.bind(i++, *error);
  q.bind(i++, row.id);
  q.bind(i, row.attempts);
  if (q.exec() != 1) return false;
  events::append(db, event);
  tx.commit();
  return true;
}

}  // namespace

void SqliteOutbox::keep_webhook_on(std::chrono::milliseconds span) {
  // A read first: a worker that moves nothing writes nothing (a locked file waits for no one).
  // The time moves when less than half the span is left.
  {
    SQLite::Statement now(
        db_, "SELECT webhook_until - " OUTBOX_NOW_MS " FROM reply_delivery WHERE id = 1");
    if (now.executeStep() && now.getColumn(0).getInt64() > span.count() / 2) return;
  }
  db::WriteTransaction tx(db_);
  SQLite::Statement q(db_,
                      "UPDATE reply_delivery SET webhook_until = max(webhook_until, " OUTBOX_NOW_MS
                      " + ?) WHERE id = 1");
  q.bind(1, static_cast<int64_t>(span.count()));
  q.exec();
  tx.commit();
}

void SqliteOutbox::set_notify(bool /*PostgreSQL's*/) {}

std::vector<OutboxRow> SqliteOutbox::claim(std::chrono::milliseconds lease, int limit) {
  std::vector<OutboxRow> rows;
  {
    // A read first, without the write lock: an idle poll must not contend with writers.
    SQLite::Statement peek(db_,
                           "SELECT 1 FROM reply_outbox WHERE gave_up_at IS NULL AND next_at "
                           "<= " OUTBOX_NOW_MS " AND lease_until <= " OUTBOX_NOW_MS " LIMIT 1");
    if (!peek.executeStep()) return rows;
  }
  db::WriteTransaction tx(db_);
  SQLite::Statement q(
      db_, "UPDATE reply_outbox SET attempts = attempts + 1, lease_until = " OUTBOX_NOW_MS
           " + ? WHERE id IN (SELECT id FROM reply_outbox WHERE gave_up_at IS NULL AND next_at "
           "<= " OUTBOX_NOW_MS " AND lease_until <= " OUTBOX_NOW_MS
           " ORDER BY next_at, id LIMIT ?) RETURNING id, task_id, chat_id, status, body, attempts");
  q.bind(1, static_cast<int64_t>(lease.count()));
  q.bind(2, limit);
  while (q.executeStep())
    rows.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getInt64(),
                    q.getColumn(2).getString(), q.getColumn(3).getString(),
                    q.getColumn(4).getString(), q.getColumn(5).getInt()});
  tx.commit();
  return rows;
}

bool SqliteOutbox::delivered(const OutboxRow& row, const events::Event& event) {
  return outbox_fenced(db_, "DELETE FROM reply_outbox WHERE id = ? AND attempts = ?", row,
                       std::nullopt, std::nullopt, event);
}

bool SqliteOutbox::retry(const OutboxRow& row, std::chrono::milliseconds delay,
                         const std::string& error, const events::Event& event) {
  return outbox_fenced(db_,
                       "UPDATE reply_outbox SET next_at = " OUTBOX_NOW_MS
                       " + ?, lease_until = 0, last_error = ? WHERE id = ? AND attempts = ?",
                       row, error, delay.count(), event);
}

bool SqliteOutbox::give_up(const OutboxRow& row, const std::string& error,
                           const events::Event& event) {
  return outbox_fenced(
      db_,
      "UPDATE reply_outbox SET gave_up_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), "
      "lease_until = 0, last_error = ? WHERE id = ? AND attempts = ?",
      row, error, std::nullopt, event);
}

int64_t SqliteOutbox::pending(bool due) {
  SQLite::Statement q(db_, due ? "SELECT count(*) FROM reply_outbox WHERE gave_up_at IS NULL AND "
                                 "next_at <= " OUTBOX_NOW_MS " AND lease_until <= " OUTBOX_NOW_MS
                               : "SELECT count(*) FROM reply_outbox WHERE gave_up_at IS NULL");
  q.executeStep();
  return q.getColumn(0).getInt64();
}

std::optional<std::chrono::milliseconds> SqliteOutbox::next_due() {
  SQLite::Statement q(db_, "SELECT max(0, min(max(next_at, lease_until)) - " OUTBOX_NOW_MS
                           ") FROM reply_outbox WHERE gave_up_at IS NULL");
  if (!q.executeStep() || q.getColumn(0).isNull()) return std::nullopt;
  return std::chrono::milliseconds(q.getColumn(0).getInt64());
}

#undef OUTBOX_NOW_MS

}  // namespace autonous::queue
