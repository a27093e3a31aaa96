#pragma once
// PageDb: the operator surface's connection to either backend, one per server thread. Its
// queries are written once, in the SQL that SQLite (3.40) and PostgreSQL (15) both speak: `$1`
// parameters (bound by name on SQLite), `->` / `->>` on JSON, `count(*) FILTER (WHERE …)`,
// CASE, no backend's own functions (times are compared as the stored ISO-8601 text and turned
// into seconds here). Rows come back as text. Not thread-safe.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace autonous::ops {

using PageParam = std::variant<int64_t, std::string>;

class Rows {
 public:
  using Cell = std::optional<std::string>;
  Rows(std::vector<std::string> columns, std::vector<std::vector<Cell>> cells)
      : columns_(std::move(columns)), cells_(std::move(cells)) {}
  size_t size() const noexcept { return cells_.size(); }
  bool empty() const noexcept { return cells_.empty(); }
  const std::vector<std::string>& columns() const noexcept { return columns_; }
  int column(std::string_view name) const;  // -1 when there is none
  bool is_null(size_t row, int col) const { return !cells_.at(row).at(col); }
  const std::string& text(size_t row, int col) const;  // "" for NULL
  double real(size_t row, int col) const;              // 0 for NULL or text that is no number
  int64_t int64(size_t row, int col) const;            // real(), truncated

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<Cell>> cells_;
};

// A query stopped because its request's deadline passed.
class DeadlinePassed : public std::runtime_error {
 public:
  DeadlinePassed() : std::runtime_error("the page took longer than its deadline") {}
};

class PageDb {
 public:
  virtual ~PageDb() = default;
  // Runs one read-only statement. Throws DeadlinePassed past the request's deadline, the
  // backend's exception otherwise (after which the connection should not be kept).
  virtual Rows query(const std::string& sql, const std::vector<PageParam>& params = {}) = 0;
  // Empty when the database answers; otherwise why not (health.h). `need_write`: it would take
  // a worker's writes (SQLite: BEGIN IMMEDIATE; ROLLBACK; PostgreSQL: a writable server whose
  // tasks table takes a writer's lock), else it answers a read. Waits at most ~1 s for a lock.
  virtual std::string probe(bool need_write) = 0;
  // The queries until end_request() stop at `deadline`.
  virtual void begin_request(std::chrono::steady_clock::time_point deadline) = 0;
  virtual void end_request() noexcept = 0;
  // Now, in Unix seconds, on the clock that writes the stored times (PostgreSQL: the server's,
  // so every host reports the same ages).
  virtual double now() = 0;
};

// Each backend makes one (sqlite_page_db, pg_page_db in backend/<driver>/page_db.h).

// Unix seconds of a stored time (2026-11-23T09:08:26.244Z, with or without fraction and Z);
// nullopt for text that is not one.
std::optional<double> unix_seconds(const std::string& iso);
// The stored form of a Unix time in seconds (millisecond precision, UTC, trailing Z).
std::string iso_time(double unix_seconds);

}  // namespace autonous::ops
