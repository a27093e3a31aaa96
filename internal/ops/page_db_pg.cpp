// PageDb on PostgreSQL (page_db.h): text results as libpq gives them; the request's deadline as
// the session's statement_timeout, plus a check before each statement, so a page's queries
// together stop near it.

#include <algorithm>

#include "internal/db/pg_connection.h"
#include "internal/ops/page_db.h"

namespace autonous::ops {
namespace {

class PgPageDb final : public PageDb {
 public:
  explicit PgPageDb(std::unique_ptr<db::pg::Connection> c) : c_(std::move(c)) {}

  Rows query(const std::string& sql, const std::vector<PageParam>& params) override {
    if (deadline_ && std::chrono::steady_clock::now() > *deadline_) throw DeadlinePassed();
    std::vector<db::pg::Param> text;
    text.reserve(params.size());
    for (const PageParam& p : params)
      text.push_back(std::visit([](const auto& v) { return db::pg::param(v); }, p));
    try {
      const db::pg::Result r = c_->query(sql, text);
      std::vector<std::string> columns;
      for (int c = 0; c < r.columns(); ++c) columns.push_back(r.column_name(c));
      std::vector<std::vector<Rows::Cell>> cells(static_cast<size_t>(r.rows()));
      for (int i = 0; i < r.rows(); ++i)
        for (int c = 0; c < r.columns(); ++c)
          cells[static_cast<size_t>(i)].push_back(r.is_null(i, c) ? Rows::Cell{}
                                                                  : Rows::Cell{r.text(i, c)});
      return Rows(std::move(columns), std::move(cells));
    } catch (const db::pg::PgError& e) {
      if (e.sqlstate() == "57014") throw DeadlinePassed();  // query_canceled: statement_timeout
      throw;
    }
  }

  std::string probe(bool need_write) override {
    try {
      db::pg::Transaction tx(*c_);  // rolled back: the probe leaves nothing behind
      c_->exec("SET LOCAL lock_timeout = '1s'");
      if (!need_write) {
        (void)c_->query("SELECT count(*) FROM (SELECT 1 FROM tasks LIMIT 1) t");
        return {};
      }
      // What a worker's claim needs: a server in read-write mode, a transaction that may write,
      // the tasks table's writer lock within a second (not held by a migration, say).
      c_->exec("LOCK TABLE tasks IN ROW EXCLUSIVE MODE");
      const bool read_only =
          c_->query("SELECT current_setting('transaction_read_only')").text(0, 0) == "on";
      if (read_only) return "database refuses writes: the server's transactions are read-only";
      return {};  // the transaction rolls back
    } catch (const std::exception& e) {
      return std::string(need_write ? "database refuses writes: " : "database cannot be read: ") +
             e.what();
    }
  }

  void begin_request(std::chrono::steady_clock::time_point deadline) override {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
    const int64_t timeout = std::max<int64_t>(100, ms / 100 * 100);  // mostly one SET a thread
    if (timeout != timeout_ms_) {
      c_->exec("SET statement_timeout = " + std::to_string(timeout));
      timeout_ms_ = timeout;
    }
    deadline_ = deadline;
  }

  void end_request() noexcept override { deadline_.reset(); }

 private:
  std::unique_ptr<db::pg::Connection> c_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  int64_t timeout_ms_ = -1;
};

}  // namespace

std::unique_ptr<PageDb> pg_page_db(std::unique_ptr<db::pg::Connection> c) {
  return std::make_unique<PgPageDb>(std::move(c));
}

}  // namespace autonous::ops
