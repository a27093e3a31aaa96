// The dashboard's reads on SQLite: a read-only PageDb on its own connection (ops/page_db.h).
#include "internal/backend/sqlite/page_db.h"

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <fmt/format.h>
#include <sqlite3.h>

namespace autonous::ops {

namespace {

// Interrupts the queries past the deadline (SQLite calls this every 1000 VM steps).
int past_deadline(void* deadline) {
  return std::chrono::steady_clock::now() >
                 *static_cast<std::chrono::steady_clock::time_point*>(deadline)
             ? 1
             : 0;
}

class SqlitePageDb final : public PageDb {
 public:
  explicit SqlitePageDb(std::unique_ptr<SQLite::Database> db) : db_(std::move(db)) {}
  ~SqlitePageDb() override { end_request(); }

  Rows query(const std::string& sql, const std::vector<PageParam>& params) override {
    try {
      SQLite::Statement q(*db_, sql);
      for (size_t i = 0; i < params.size(); ++i) {
        const int index = q.getIndex(("$" + std::to_string(i + 1)).c_str());
        if (index == 0) continue;  // not used by this statement
        std::visit([&](const auto& v) { q.bind(index, v); }, params[i]);
      }
      std::vector<std::string> columns;
      for (int c = 0; c < q.getColumnCount(); ++c) columns.emplace_back(q.getColumnName(c));
      std::vector<std::vector<Rows::Cell>> cells;
      while (q.executeStep()) {
        std::vector<Rows::Cell>& row = cells.emplace_back();
        for (int c = 0; c < q.getColumnCount(); ++c) {
          const SQLite::Column column = q.getColumn(c);
          row.push_back(column.isNull() ? Rows::Cell{} : Rows::Cell{column.getString()});
        }
      }
      return Rows(std::move(columns), std::move(cells));
    } catch (const SQLite::Exception& e) {
      if (e.getErrorCode() == SQLITE_INTERRUPT) throw DeadlinePassed();
      throw;
    }
  }

  std::string probe(bool need_write) override {
    try {
      if (!need_write) {
        (void)db_->execAndGet("SELECT count(*) FROM (SELECT 1 FROM tasks LIMIT 1)");
        return {};
      }
      db_->exec("BEGIN IMMEDIATE");
      db_->exec("ROLLBACK");
      return {};
    } catch (const std::exception& e) {
      try {
        if (need_write) db_->exec("ROLLBACK");  // BEGIN took the lock, something after failed
      } catch (const std::exception&) {         // no transaction open: nothing to undo
      }
      return std::string(need_write ? "database refuses writes: " : "database cannot be read: ") +
             e.what();
    }
  }

  void begin_request(std::chrono::steady_clock::time_point deadline) override {
    deadline_ = deadline;
    sqlite3_progress_handler(db_->getHandle(), 1000, past_deadline, &deadline_);
  }

  void end_request() noexcept override {
    sqlite3_progress_handler(db_->getHandle(), 0, nullptr, nullptr);
  }

  double now() override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

 private:
  std::unique_ptr<SQLite::Database> db_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace

std::unique_ptr<PageDb> sqlite_page_db(std::unique_ptr<SQLite::Database> db) {
  return std::make_unique<SqlitePageDb>(std::move(db));
}

}  // namespace autonous::ops
