#include "internal/db/pg_copy.h"

#include <stdexcept>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>

#include "internal/db/pg_connection.h"

namespace autonous::db {
namespace {

// SQLite's FTS5 tables are read by their rowid and columns; PostgreSQL's have `rowid` as a
// column.
bool fts(const std::string& table) { return table == "history_terms" || table == "document_terms"; }

std::vector<std::string> columns(SQLite::Database& db, const std::string& table) {
  if (fts(table)) return {"rowid", "chat", "terms"};
  std::vector<std::string> out;
  SQLite::Statement q(db, "SELECT name FROM pragma_table_info(?) ORDER BY cid");
  q.bind(1, table);
  while (q.executeStep()) out.push_back(q.getColumn(0).getString());
  if (out.empty()) throw std::runtime_error("the SQLite file has no table " + table);
  return out;
}

// The columns that are jsonb on PostgreSQL (JSON text on SQLite).
bool jsonb(const std::string& table, const std::string& column) {
  return (table == "events" && column == "payload") ||
         (table == "chat_settings" && column == "settings") ||
         (table == "context_summaries" && column == "usage");
}

// A value as PostgreSQL's text input takes it: a BLOB as bytea hex, the text of a jsonb column
// without the \u0000 escapes jsonb refuses.
pg::Param text_of(const SQLite::Column& c, bool json) {
  if (c.isNull()) return std::nullopt;
  if (c.isBlob()) {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto* p = static_cast<const unsigned char*>(c.getBlob());
    std::string out = "\\x";
    for (int i = 0; i < c.getBytes(); ++i) {
      out += kHex[p[i] >> 4];
      out += kHex[p[i] & 0xF];
    }
    return out;
  }
  return json ? pg::without_nul_escapes(c.getString()) : c.getString();
}

int64_t copy_table(SQLite::Database& from, pg::Connection& to, const std::string& table) {
  const std::vector<std::string> cols = columns(from, table);
  std::string list;
  std::string params;
  for (size_t i = 0; i < cols.size(); ++i) {
    list += (i ? ", " : "") + cols[i];
    params += (i ? ", $" : "$") + std::to_string(i + 1);
  }
  const std::string insert =
      "INSERT INTO " + table + "(" + list + ") VALUES (" + params + ") ON CONFLICT DO NOTHING";
  // In id order where there is one: an event's parent, a summary's predecessor come first.
  const bool has_id = fts(table) || cols.front() == "id";
  SQLite::Statement rows(from, "SELECT " + list + " FROM " + table +
                                   (has_id ? " ORDER BY " + cols.front() : std::string()));
  std::vector<bool> json(cols.size());
  for (size_t i = 0; i < cols.size(); ++i) json[i] = jsonb(table, cols[i]);
  int64_t inserted = 0;
  std::vector<pg::Param> values(cols.size());
  while (rows.executeStep()) {
    for (size_t i = 0; i < cols.size(); ++i)
      values[i] = text_of(rows.getColumn(static_cast<int>(i)), json[i]);
    inserted += to.query(insert, values).affected();
  }
  return inserted;
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
  SQLite::Statement begin(from, "BEGIN");  // one read snapshot of the whole file
  begin.exec();
  pg::Transaction tx(to);
  for (const std::string& table : copied_tables()) {
    // The triggers queued every copied history and document row for indexing; the copy brings
    // the source's index and queue (copied last) as they are instead.
    if (table == "search_queue") to.exec("DELETE FROM search_queue");
    CopiedTable t;
    t.table = table;
    t.source_rows = from.execAndGet("SELECT count(*) FROM " + table).getInt64();
    t.inserted = copy_table(from, to, table);
    out.push_back(t);
  }
  for (const char* table : {"tasks", "history", "events", "context_summaries", "documents",
                            "chat_pins", "custom_blocks"})
    to.exec(std::string("SELECT setval(pg_get_serial_sequence('") + table + "', 'id'), " +
            "coalesce((SELECT max(id) FROM " + table + "), 0) + 1, false)");
  for (CopiedTable& t : out)
    t.target_rows = to.query("SELECT count(*) FROM " + t.table).int64(0, 0);
  tx.commit();
  from.exec("COMMIT");
  return out;
}

}  // namespace autonous::db
