#include "internal/backend/postgres/copy.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "internal/backend/drivers.h"
#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/migrator.h"

namespace autonous::backend {
namespace pg = db::pg;
namespace {

bool jsonb(const std::string& table, const std::string& column) {
  return (table == "events" && column == "payload") ||
         (table == "chat_settings" && column == "settings") ||
         (table == "context_summaries" && column == "usage");
}

bool bytea(const std::string& table, const std::string& column) {
  return table == "history_vectors" && column == "vector";
}

// A cell as PostgreSQL's text input takes it: bytea as hex, a jsonb column's text without the
// \u0000 escapes jsonb refuses, anything else as its text (a BLOB in a text column: its bytes).
pg::Param text_of(const CopySource::Cell& c, const std::string& table, const std::string& column) {
  if (!c) return std::nullopt;
  if (bytea(table, column)) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\\x";
    for (const char ch : *c) {
      const auto byte = static_cast<unsigned char>(ch);
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    }
    return out;
  }
  return jsonb(table, column) ? pg::without_nul_escapes(*c) : *c;
}

// Inserts every row of `table`; a row whose key is there already takes the source's values
// (a second run brings rows changed since). Returns the rows written.
int64_t copy_table(CopySource& from, pg::Connection& to, const std::string& table) {
  const std::vector<CopySource::Column> cols = from.columns(table);
  std::string list;
  std::string params;
  std::string keys;
  std::string updates;
  for (size_t i = 0; i < cols.size(); ++i) {
    list += (i ? ", " : "") + cols[i].name;
    params += (i ? ", $" : "$") + std::to_string(i + 1);
    if (cols[i].key) {
      keys += (keys.empty() ? "" : ", ") + cols[i].name;
    } else {
      updates += (updates.empty() ? "" : ", ") + cols[i].name + " = excluded." + cols[i].name;
    }
  }
  if (keys.empty()) throw std::runtime_error("table " + table + " has no primary key");
  // Only a row that differs is updated: an unchanged one fires no trigger (a history row's
  // would queue it for indexing again and mark its vectors stale).
  std::string changed = "(";
  std::string theirs = "(";
  for (const CopySource::Column& c : cols) {
    if (c.key) continue;
    changed += (changed.size() > 1 ? ", " : "") + table + "." + c.name;
    theirs += std::string(theirs.size() > 1 ? ", " : "") + "excluded." + c.name;
  }
  const std::string insert = "INSERT INTO " + table + "(" + list + ") VALUES (" + params +
                             ") ON CONFLICT (" + keys + ") DO " +
                             (updates.empty() ? "NOTHING"
                                              : "UPDATE SET " + updates + " WHERE ROW" + changed +
                                                    ") IS DISTINCT FROM ROW" + theirs + ")");
  int64_t written = 0;
  std::vector<pg::Param> values(cols.size());
  from.rows(table, cols, [&](const std::vector<CopySource::Cell>& cells) {
    for (size_t i = 0; i < cols.size(); ++i) values[i] = text_of(cells[i], table, cols[i].name);
    try {
      written += to.query(insert, values).affected();
    } catch (const pg::PgError& e) {
      throw std::runtime_error("copying " + table + " (" + cols.front().name + " " +
                               values.front().value_or("NULL") + "): " + e.what());
    }
  });
  return written;
}

// Identity sequences continue after every id the source gave out: its rows, the ids its
// AUTOINCREMENT counter passed (deleted newest rows), and task ids its events and history
// still name; never backwards.
void continue_sequences(CopySource& from, pg::Connection& to) {
  std::map<std::string, int64_t> next;
  for (const char* table : {"tasks", "history", "events", "context_summaries", "documents",
                            "chat_pins", "custom_blocks", "reply_outbox"})
    next[table] = from.highest_id(table);
  next["tasks"] = std::max(next["tasks"], from.highest_task_reference());
  for (const auto& [table, seen] : next) {
    const std::string seq = "pg_get_serial_sequence('" + table + "', 'id')";
    to.query("SELECT setval(" + seq + ", greatest($1::bigint, (SELECT coalesce(max(id), 0) FROM " +
                 table + "), (SELECT last_value FROM " + table + "_id_seq)), true)",
             {std::to_string(std::max<int64_t>(seen, 1))});
  }
}

// The identity tables and where their sequences stand, as one line: what a copy leaves on the
// target (a comment on `tasks`), and what the next copy expects to find there.
std::string sequence_mark(pg::Connection& to) {
  std::string mark = "autonous copy:";
  for (const char* table : {"tasks", "history", "events", "context_summaries", "documents",
                            "chat_pins", "custom_blocks"})
    mark += std::string(" ") + table + "=" +
            to.query(std::string("SELECT last_value || CASE WHEN is_called THEN '' ELSE '-' END "
                                 "FROM ") +
                     table + "_id_seq")
                .text(0, 0);
  return mark;
}

// A target is copied into only when it is empty or nothing gave out an id there since the last
// copy (its sequences stand where that copy left them): a row written there, an answered task,
// would otherwise be overwritten by a source row of the same id.
void check_untouched(pg::Connection& to) {
  const pg::Result left =
      to.query("SELECT coalesce(obj_description('tasks'::regclass, 'pg_class'), '')");
  const std::string mark = left.text(0, 0);
  const bool empty = to.query(
                           "SELECT NOT EXISTS (SELECT 1 FROM tasks) AND NOT EXISTS (SELECT 1 "
                           "FROM history) AND NOT EXISTS (SELECT 1 FROM events)")
                         .text(0, 0) == "t";
  if (mark.empty() ? empty : mark == sequence_mark(to)) return;
  throw std::runtime_error(
      mark.empty() ? "the target already holds tasks, history or events that no copy wrote: "
                     "copy into an empty database"
                   : "the target was written to since the last copy (new ids were given out "
                     "there): a copy would overwrite those rows; it is in use, copy no more");
}

}  // namespace

const std::vector<std::string>& copied_tables() {
  static const std::vector<std::string> kTables = {
      "tasks",           "history",           "events",         "token_calibration",
      "chat_settings",   "context_summaries", "context_state",  "learned_limits",
      "documents",       "chat_pins",         "context_blocks", "custom_blocks",
      "history_vectors", "history_terms",     "document_terms", "search_term_rows",
      "search_queue",    "reply_outbox"};
  return kTables;
}

std::vector<CopiedTable> copy_into(CopySource& from, pg::Connection& to) {
  std::vector<CopiedTable> out;
  from.begin();  // one read snapshot of the whole source
  try {
    // One long transaction: no session timeout may end it half way.
    to.exec("SET idle_in_transaction_session_timeout = 0; SET lock_timeout = 0");
    pg::Transaction tx(to);
    to.exec("LOCK TABLE tasks IN SHARE ROW EXCLUSIVE MODE");  // no enqueue meanwhile
    // Under that lock the heads need no per-chat locks: a copy of many chats' queued tasks
    // would otherwise exhaust the server's lock table (migrations/postgres/0011).
    to.exec("SET LOCAL autonous.bulk = 'on'");
    check_untouched(to);
    for (const std::string& table : copied_tables()) {
      // The triggers queued every copied history and document row for indexing; the copy
      // brings the source's index and queue (copied last) as they are instead.
      if (table == "search_queue") to.exec("DELETE FROM search_queue");
      CopiedTable t;
      t.table = table;
      t.source_rows = from.count(table);
      t.normalised = from.normalised(table);
      t.inserted = copy_table(from, to, table);
      t.target_rows = to.query("SELECT count(*) FROM " + table).int64(0, 0);
      out.push_back(t);
    }
    continue_sequences(from, to);
    // Verified before anything is committed: a target holding rows the source does not (in use
    // already, or rows deleted from the source since an earlier copy) is refused whole.
    for (const CopiedTable& t : out)
      if (t.target_rows != t.source_rows) throw CopyNotVerified(out);
    to.exec("COMMENT ON TABLE tasks IS '" + sequence_mark(to) + "'");
    tx.commit();
  } catch (...) {
    from.end();
    throw;
  }
  from.end();
  return out;
}

std::vector<CopiedTable> copy_into_pg(CopySource& from, const std::string& url) {
  const std::unique_ptr<pg::Connection> to = pg::Connection::open(url);
  db::pg_migrate(*to);
  return copy_into(from, *to);
}

std::string redact_pg_url(const std::string& url) { return pg::redact_url(url); }

}  // namespace autonous::backend
