// The event log on SQLite: append and query (events/event_log.h says what they do).
#include <stdexcept>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <nlohmann/json.hpp>

#include "internal/backend/sqlite/events.h"
#include "internal/backend/sqlite/statement_cache.h"

namespace autonous::events {

namespace {

const std::string kInsert =
    "INSERT INTO events(created_at, type, task_id, chat_id, parent_id, payload) "
    "VALUES (CASE WHEN ?1 > 0 THEN strftime('%Y-%m-%dT%H:%M:%fZ', ?1 / 1000.0, 'unixepoch') "
    "ELSE strftime('%Y-%m-%dT%H:%M:%fZ', 'now') END, ?2, ?3, ?4, ?5, ?6)";

void bind_and_insert(SQLite::Statement& ins, const Event& event) {
  const auto parsed = nlohmann::json::parse(event.payload, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object())
    throw std::invalid_argument("event payload is not a JSON object: type=" + event.type);
  ins.bind(1, event.at_unix_ms);
  ins.bind(2, event.type);
  if (event.task_id) ins.bind(3, *event.task_id);
  if (event.chat_id) ins.bind(4, *event.chat_id);
  if (event.parent_id) ins.bind(5, *event.parent_id);
  ins.bind(6, event.payload);
  ins.exec();
}

}  // namespace

int64_t append(SQLite::Database& db, const Event& event) {
  SQLite::Statement ins(db, kInsert);
  bind_and_insert(ins, event);
  return db.getLastInsertRowid();
}

int64_t append(db::StatementCache& cache, const Event& event) {
  const db::CachedStatement ins = cache.get(kInsert);
  bind_and_insert(*ins, event);
  return cache.db().getLastInsertRowid();
}

std::vector<StoredEvent> query(SQLite::Database& db, const EventFilter& filter) {
  std::string sql =
      "SELECT id, created_at, type, task_id, chat_id, parent_id, payload FROM events WHERE id > ?";
  if (filter.task_id) sql += " AND task_id = ?";
  if (filter.type) sql += " AND type = ?";
  sql += " ORDER BY id LIMIT ?";
  SQLite::Statement q(db, sql);
  int i = 1;
  q.bind(i++, filter.after_id);
  if (filter.task_id) q.bind(i++, *filter.task_id);
  if (filter.type) q.bind(i++, *filter.type);
  q.bind(i, filter.limit);
  std::vector<StoredEvent> out;
  while (q.executeStep()) {
    StoredEvent e;
    e.id = q.getColumn(0).getInt64();
    e.created_at = q.getColumn(1).getString();
    e.event.type = q.getColumn(2).getString();
    if (!q.getColumn(3).isNull()) e.event.task_id = q.getColumn(3).getInt64();
    if (!q.getColumn(4).isNull()) e.event.chat_id = q.getColumn(4).getString();
    if (!q.getColumn(5).isNull()) e.event.parent_id = q.getColumn(5).getInt64();
    e.event.payload = q.getColumn(6).getString();
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace autonous::events
