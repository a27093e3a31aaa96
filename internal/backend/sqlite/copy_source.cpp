// The SQLite side of `autonous copy` (backend/copy.h): a deployment's file read as a CopySource.
#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <fmt/format.h>

#include "internal/backend/drivers.h"
#include "internal/backend/sqlite/migrator.h"

namespace autonous::backend {
namespace {

// SQLite's FTS5 tables are read by their rowid and columns; the target's have `rowid` as a
// column (the key).
bool fts(const std::string& table) { return table == "history_terms" || table == "document_terms"; }

// What is read for a column: a reference to a row the source no longer has (deleted from the
// sqlite3 shell, where foreign keys are off) is read as NULL, as ON DELETE SET NULL would have
// left it; the target's foreign keys would refuse it.
// A task's number that is not an integer as stored (a front end's text run_after, say) is read as
// the SQLite worker reads it (CAST AS INTEGER); a priority outside PostgreSQL's 32 bits is
// brought to its bound (the order among such priorities is lost; `copy` reports how many rows).
const char* const kTaskNumbers[] = {"attempts", "run_after", "lease_expires_at", "first_claimed_at",
                                    "lease_expiries"};
constexpr const char* kPriority =
    "CASE WHEN CAST(priority AS INTEGER) > 2147483647 THEN 2147483647 "
    "WHEN CAST(priority AS INTEGER) < -2147483648 THEN -2147483648 "
    "ELSE CAST(priority AS INTEGER) END";

std::string select_expression(const std::string& table, const std::string& column) {
  if (table == "tasks" && column == "priority") return kPriority;
  if (table == "tasks")
    for (const char* n : kTaskNumbers)
      if (column == n)
        return "CASE WHEN typeof(" + column + ") IN ('integer', 'null') THEN " + column +
               " ELSE CAST(" + column + " AS INTEGER) END";
  if (table == "history" && column == "task_id")
    return "(SELECT id FROM tasks t WHERE t.id = history.task_id)";
  if (table == "events" && column == "parent_id")
    return "(SELECT id FROM events p WHERE p.id = events.parent_id)";
  if (table == "context_summaries" && column == "previous_id")
    return "(SELECT id FROM context_summaries p WHERE p.id = context_summaries.previous_id)";
  return column;
}

class SqliteCopySource final : public CopySource {
 public:
  explicit SqliteCopySource(std::unique_ptr<SQLite::Database> db) : db_(std::move(db)) {}
  ~SqliteCopySource() override { end(); }

  void begin() override {
    db_->exec("BEGIN");  // one read snapshot of the whole file
    open_ = true;
  }
  void end() noexcept override {
    if (!open_) return;
    open_ = false;
    try {
      db_->exec("COMMIT");
    } catch (...) {  // nothing was written: the snapshot just ends
    }
  }

  std::vector<Column> columns(const std::string& table) override {
    if (fts(table)) return {{"rowid", true}, {"chat", false}, {"terms", false}};
    std::vector<Column> out;
    SQLite::Statement q(*db_, "SELECT name, pk FROM pragma_table_info(?) ORDER BY cid");
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

  int64_t count(const std::string& table) override {
    return db_->execAndGet("SELECT count(*) FROM " + table).getInt64();
  }

  int64_t normalised(const std::string& table) override {
    if (table != "tasks") return 0;
    std::string where =
        "typeof(priority) <> 'integer' OR priority > 2147483647 OR "
        "priority < -2147483648";
    for (const char* n : kTaskNumbers)
      where += std::string(" OR typeof(") + n + ") NOT IN ('integer', 'null')";
    return db_->execAndGet("SELECT count(*) FROM tasks WHERE " + where).getInt64();
  }

  void rows(const std::string& table, const std::vector<Column>& cols, const Row& each) override {
    std::string select;
    for (size_t i = 0; i < cols.size(); ++i)
      select += (i ? ", " : "") + select_expression(table, cols[i].name);
    // In id order where there is one: an event's parent, a summary's predecessor come first.
    const bool ordered = fts(table) || (!cols.empty() && cols.front().name == "id");
    SQLite::Statement q(*db_, "SELECT " + select + " FROM " + table +
                                  (ordered ? " ORDER BY " + cols.front().name : std::string()));
    std::vector<Cell> cells(cols.size());
    while (q.executeStep()) {
      for (size_t i = 0; i < cols.size(); ++i) {
        const SQLite::Column c = q.getColumn(static_cast<int>(i));
        if (c.isNull()) {
          cells[i].reset();
          continue;
        }
        const auto* bytes = static_cast<const char*>(c.getBlob());  // text or blob, as stored
        cells[i] = bytes != nullptr ? std::string(bytes, static_cast<size_t>(c.getBytes())) : "";
      }
      each(cells);
    }
  }

  int64_t highest_id(const std::string& table) override {
    return std::max(max_of("SELECT max(id) FROM " + table),
                    max_of("SELECT max(seq) FROM sqlite_sequence WHERE name = '" + table + "'"));
  }

  int64_t highest_task_reference() override {
    return std::max(max_of("SELECT max(task_id) FROM events"),
                    max_of("SELECT max(task_id) FROM history"));
  }

 private:
  int64_t max_of(const std::string& sql) {
    const SQLite::Column v = db_->execAndGet(sql);
    return v.isNull() ? 0 : v.getInt64();
  }

  std::unique_ptr<SQLite::Database> db_;
  bool open_ = false;
};

}  // namespace

std::unique_ptr<CopySource> open_sqlite_copy_source(const std::string& path,
                                                    std::chrono::milliseconds busy_timeout) {
  if (!std::filesystem::is_regular_file(path)) throw SourceRefused(path + " is not a SQLite file");
  std::unique_ptr<SQLite::Database> db;
  try {
    db = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READONLY);
    db->setBusyTimeout(static_cast<int>(busy_timeout.count()));
    db->execAndGet("SELECT count(*) FROM sqlite_schema");
  } catch (const SQLite::Exception& e) {
    throw SourceRefused("cannot read " + path + " with its newest commits (" + e.what() +
                        "; the folder must be writable for its -shm file)");
  }
  const int version = db::schema_version(*db);
  const int current = db::embedded_migrations().back().version;
  if (version != current)
    throw SourceRefused(
        fmt::format("{} is at schema version {}; run `DB_PATH={} autonous "
                    "migrate` first (this binary's is {})",
                    path, version, path, current));
  return std::make_unique<SqliteCopySource>(std::move(db));
}

}  // namespace autonous::backend
