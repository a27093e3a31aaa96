#include "internal/db/pg_copy.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/db/pg_connection.h"

namespace autonous::db {
namespace {

// SQLite's FTS5 tables are read by their rowid and columns; PostgreSQL's have `rowid` as a
// column (the key).
bool fts(const std::string& table) { return table == "history_terms" || table == "document_terms"; }

struct Column {
  std::string name;
  bool key = false;
};

std::vector<Column> columns(SQLite::Database& db, const std::string& table) {
  if (fts(table)) return {{"rowid", true}, {"chat", false}, {"terms", false}};
  std::vector<Column> out;
  SQLite::Statement q(db, "SELECT name, pk FROM pragma_table_info(?) ORDER BY cid");
  q.bind(1, table);
  while (q.executeStep()) {
    const std::string name = q.getColumn(0).getString();
    // history_vectors' key is its unique index (id, model): a rowid table without a primary key.
    const bool vector_key = table == "history_vectors" && (name == "id" || name == "model");
    out.push_back({name, q.getColumn(1).getInt() > 0 || vector_key});
  }
  if (out.empty()) throw std::runtime_error("the SQLite file has no table " + table);
  return out;
}

// What is read for a column: a reference to a row the source no longer has (deleted from the
// sqlite3 shell, where foreign keys are off) is read as NULL, as ON DELETE SET NULL would have
// left it; PostgreSQL's foreign keys would refuse it.
std::string select_expression(const std::string& table, const std::string& column) {
  if (table == "history" && column == "task_id")
    return "(SELECT id FROM tasks t WHERE t.id = history.task_id)";
  if (table == "events" && column == "parent_id")
    return "(SELECT id FROM events p WHERE p.id = events.parent_id)";
  if (table == "context_summaries" && column == "previous_id")
    return "(SELECT id FROM context_summaries p WHERE p.id = context_summaries.previous_id)";
  return column;
}

bool jsonb(const std::string& table, const std::string& column) {
  return (table == "events" && column == "payload") ||
         (table == "chat_settings" && column == "settings") ||
         (table == "context_summaries" && column == "usage");
}

bool bytea(const std::string& table, const std::string& column) {
  return table == "history_vectors" && column == "vector";
}

// A value as PostgreSQL's text input takes it: bytea as hex, a jsonb column's text without the
// \u0000 escapes jsonb refuses, anything else as its text (a BLOB in a text column: its bytes).
pg::Param text_of(const SQLite::Column& c, const std::string& table, const std::string& column) {
  if (c.isNull()) return std::nullopt;
  if (bytea(table, column)) {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto* p = static_cast<const unsigned char*>(c.getBlob());
    std::string out = "\\x";
    for (int i = 0; i < c.getBytes(); ++i) {
      out += kHex[p[i] >> 4];
      out += kHex[p[i] & 0xF];
    }
    return out;
  }
  const auto* bytes = static_cast<const char*>(c.getBlob());  // text or blob, as it is stored
  std::string text = bytes != nullptr ? std::string(bytes, static_cast<size_t>(c.getBytes())) : "";
  return jsonb(table, column) ? pg::without_nul_escapes(text) : text;
}

// Inserts every row of `table`; a row whose key is there already takes the source's values
// (a second run brings rows changed since). Returns the rows written.
int64_t copy_table(SQLite::Database& from, pg::Connection& to, const std::string& table) {
  const std::vector<Column> cols = columns(from, table);
  std::string list;
  std::string select;
  std::string params;
  std::string keys;
  std::string updates;
  for (size_t i = 0; i < cols.size(); ++i) {
    list += (i ? ", " : "") + cols[i].name;
    select += (i ? ", " : "") + select_expression(table, cols[i].name);
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
  for (const Column& c : cols) {
    if (c.key) continue;
    changed += (changed.size() > 1 ? ", " : "") + table + "." + c.name;
    theirs += std::string(theirs.size() > 1 ? ", " : "") + "excluded." + c.name;
  }
  const std::string insert = "INSERT INTO " + table + "(" + list + ") VALUES (" + params +
                             ") ON CONFLICT (" + keys + ") DO " +
                             (updates.empty() ? "NOTHING"
                                              : "UPDATE SET " + updates + " WHERE ROW" + changed +
                                                    ") IS DISTINCT FROM ROW" + theirs + ")");
  // In id order where there is one: an event's parent, a summary's predecessor come first.
  const bool ordered = fts(table) || cols.front().name == "id";
  SQLite::Statement rows(from, "SELECT " + select + " FROM " + table +
                                   (ordered ? " ORDER BY " + cols.front().name : std::string()));
  int64_t written = 0;
  std::vector<pg::Param> values(cols.size());
  while (rows.executeStep()) {
    for (size_t i = 0; i < cols.size(); ++i)
      values[i] = text_of(rows.getColumn(static_cast<int>(i)), table, cols[i].name);
    try {
      written += to.query(insert, values).affected();
    } catch (const pg::PgError& e) {
      throw std::runtime_error("copying " + table + " (" + cols.front().name + " " +
                               values.front().value_or("NULL") + "): " + e.what());
    }
  }
  return written;
}

int64_t sqlite_max(SQLite::Database& db, const std::string& sql) {
  const SQLite::Column v = db.execAndGet(sql);
  return v.isNull() ? 0 : v.getInt64();
}

// Identity sequences continue after every id the source gave out: its rows, the ids its
// AUTOINCREMENT counter passed (deleted newest rows), and task ids its events and history
// still name; never backwards.
void continue_sequences(SQLite::Database& from, pg::Connection& to) {
  const auto counter = [&](const std::string& table) {
    return sqlite_max(from, "SELECT max(seq) FROM sqlite_sequence WHERE name = '" + table + "'");
  };
  std::map<std::string, int64_t> next;
  for (const char* table : {"tasks", "history", "events", "context_summaries", "documents",
                            "chat_pins", "custom_blocks"})
    next[table] =
        std::max(sqlite_max(from, std::string("SELECT max(id) FROM ") + table), counter(table));
  next["tasks"] = std::max({next["tasks"], sqlite_max(from, "SELECT max(task_id) FROM events"),
                            sqlite_max(from, "SELECT max(task_id) FROM history")});
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
      "search_queue"};
  return kTables;
}

std::vector<CopiedTable> copy_to_postgres(SQLite::Database& from, pg::Connection& to) {
  std::vector<CopiedTable> out;
  from.exec("BEGIN");  // one read snapshot of the whole file
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
      t.source_rows = from.execAndGet("SELECT count(*) FROM " + table).getInt64();
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
    from.exec("ROLLBACK");
    throw;
  }
  from.exec("COMMIT");
  return out;
}

}  // namespace autonous::db
