// EventLog on PostgreSQL (event_log.h): the same rows, payload as jsonb.

#include "internal/events/event_log.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/events.h"

namespace autonous::events {
namespace {

const std::string kInsert =
    "INSERT INTO events(created_at, type, task_id, chat_id, parent_id, payload) "
    "VALUES (CASE WHEN $1::bigint > 0 THEN to_char(to_timestamp($1::bigint / 1000.0) AT TIME "
    "ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') ELSE autonous_now() END, $2, $3, $4, $5, "
    "$6::jsonb) RETURNING id";

// The batch insert, inserting nothing unless `only_if` holds (a completion's events: only
// when the task was done).
std::string insert_all(const std::string& only_if) {
  return "INSERT INTO events(created_at, type, task_id, chat_id, parent_id, payload) "
         "SELECT CASE WHEN e.at > 0 THEN to_char(to_timestamp(e.at / 1000.0) AT TIME ZONE 'UTC', "
         "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') ELSE autonous_now() END, e.type, e.task_id, "
         "e.chat_id, e.parent_id, e.payload::jsonb FROM unnest($1::bigint[], $2::text[], "
         "$3::bigint[], $4::text[], $5::bigint[], $6::text[]) WITH ORDINALITY AS e(at, type, "
         "task_id, chat_id, parent_id, payload, n)" +
         (only_if.empty() ? std::string() : " WHERE " + only_if) + " ORDER BY e.n";
}
const std::string kInsertAll = insert_all("");

void check_payload(const Event& event) {
  const auto parsed = nlohmann::json::parse(event.payload, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object())
    throw std::invalid_argument("event payload is not a JSON object: type=" + event.type);
}

}  // namespace

std::string append_all_statement(const std::string& only_if) { return insert_all(only_if); }

std::vector<db::pg::Param> append_all_params(const std::vector<Event>& list) {
  std::vector<db::pg::Param> at, type, task, chat, parent, payload;
  for (const Event& e : list) {
    check_payload(e);
    at.push_back(db::pg::param(e.at_unix_ms));
    type.push_back(db::pg::param(e.type));
    task.push_back(db::pg::param(e.task_id));
    chat.push_back(db::pg::param(e.chat_id));
    parent.push_back(db::pg::param(e.parent_id));
    payload.push_back(db::pg::without_nul_escapes(e.payload));
  }
  return {db::pg::array_literal(at),     db::pg::array_literal(type),
          db::pg::array_literal(task),   db::pg::array_literal(chat),
          db::pg::array_literal(parent), db::pg::array_literal(payload)};
}

void append_all(db::pg::Connection& c, const std::vector<Event>& list) {
  if (list.empty()) return;
  if (list.size() == 1) {
    append(c, list.front());
    return;
  }
  c.query(kInsertAll, append_all_params(list));
}

int64_t append(db::pg::Connection& c, const Event& event) {
  check_payload(event);
  const db::pg::Result r = c.query(
      kInsert, {db::pg::param(event.at_unix_ms), db::pg::param(event.type),
                db::pg::param(event.task_id), db::pg::param(event.chat_id),
                db::pg::param(event.parent_id), db::pg::without_nul_escapes(event.payload)});
  return r.int64(0, 0);
}

std::vector<StoredEvent> query(db::pg::Connection& c, const EventFilter& filter) {
  // One statement for every filter: a NULL parameter matches everything.
  const db::pg::Result r = c.query(
      "SELECT id, created_at, type, task_id, chat_id, parent_id, payload::text FROM events "
      "WHERE id > $1 AND ($2::bigint IS NULL OR task_id = $2) AND ($3::text IS NULL OR type = $3) "
      "ORDER BY id LIMIT $4",
      {db::pg::param(filter.after_id), db::pg::param(filter.task_id), db::pg::param(filter.type),
       db::pg::param(int64_t{filter.limit})});
  std::vector<StoredEvent> out;
  out.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) {
    StoredEvent e;
    e.id = r.int64(i, 0);
    e.created_at = r.text(i, 1);
    e.event.type = r.text(i, 2);
    if (!r.is_null(i, 3)) e.event.task_id = r.int64(i, 3);
    if (!r.is_null(i, 4)) e.event.chat_id = r.text(i, 4);
    if (!r.is_null(i, 5)) e.event.parent_id = r.int64(i, 5);
    e.event.payload = r.text(i, 6);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace autonous::events
