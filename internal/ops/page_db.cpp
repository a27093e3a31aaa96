#include "internal/ops/page_db.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <fmt/format.h>
#include <sqlite3.h>

namespace autonous::ops {

int Rows::column(std::string_view name) const {
  for (size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i] == name) return static_cast<int>(i);
  return -1;
}

const std::string& Rows::text(size_t row, int col) const {
  static const std::string kEmpty;
  const Cell& c = cells_.at(row).at(col);
  return c ? *c : kEmpty;
}

double Rows::real(size_t row, int col) const {
  const Cell& c = cells_.at(row).at(col);
  if (!c || c->empty()) return 0;
  char* end = nullptr;
  const double v = std::strtod(c->c_str(), &end);
  return end == c->c_str() || !std::isfinite(v) ? 0 : v;
}

int64_t Rows::int64(size_t row, int col) const {
  const double v = real(row, col);
  if (v >= 9.2e18 || v <= -9.2e18) return 0;
  const Cell& c = cells_.at(row).at(col);
  // Whole numbers exactly (a double holds 2^53 only); fractions truncated.
  if (c && c->find_first_of(".eE") == std::string::npos)
    return std::strtoll(c->c_str(), nullptr, 10);
  return static_cast<int64_t>(v);
}

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

std::optional<double> unix_seconds(const std::string& iso) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != 19)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  double fraction = 0;
  const std::string rest = iso.substr(19);
  if (!rest.empty() && rest[0] == '.') {
    char* end = nullptr;
    fraction = std::strtod(("0" + rest).c_str(), &end);
  }
  return static_cast<double>(timegm(&tm)) + fraction;
}

std::string iso_time(double unix_seconds) {
  const auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
  const auto ms = static_cast<int>(std::floor((unix_seconds - static_cast<double>(whole)) * 1000));
  std::tm tm{};
  gmtime_r(&whole, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

}  // namespace autonous::ops
