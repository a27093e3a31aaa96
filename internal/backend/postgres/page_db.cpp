// PageDb on PostgreSQL (page_db.h): text results as libpq gives them; the request's deadline as
// the session's statement_timeout, plus a check before each statement, so a page's queries
// together stop near it.

#include "internal/backend/postgres/page_db.h"

#include <algorithm>
#include <type_traits>

#include "internal/backend/postgres/connection.h"

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
      return healing([&] {
        const db::pg::Result r = c_->query(sql, text);
        std::vector<std::string> columns;
        for (int c = 0; c < r.columns(); ++c) columns.push_back(r.column_name(c));
        std::vector<std::vector<Rows::Cell>> cells(static_cast<size_t>(r.rows()));
        for (int i = 0; i < r.rows(); ++i)
          for (int c = 0; c < r.columns(); ++c)
            cells[static_cast<size_t>(i)].push_back(r.is_null(i, c) ? Rows::Cell{}
                                                                    : Rows::Cell{r.text(i, c)});
        return Rows(std::move(columns), std::move(cells));
      });
    } catch (const db::pg::PgError& e) {
      if (e.sqlstate() == "57014") throw DeadlinePassed();  // query_canceled: statement_timeout
      throw;
    }
  }

  std::string probe(bool need_write) override {
    try {
      if (read_only_seen_) {
        // A session keeps the read-only default it started with: after a read-only answer
        // the probe asks through a new one, which sees a promoted server (as the slots do).
        read_only_seen_ = false;
        reconnect();
      }
      const std::string problem = healing([&]() -> std::string {
        db::pg::Transaction tx(*c_);  // rolled back: the probe leaves nothing behind
        c_->exec("SET LOCAL lock_timeout = '1s'");
        if (!need_write) {
          (void)c_->query("SELECT count(*) FROM (SELECT 1 FROM tasks LIMIT 1) t");
          return {};
        }
        // What a worker's claim needs: a server in read-write mode, a transaction that may
        // write, the tasks table's writer lock within a second (not held by a migration, say).
        c_->exec("LOCK TABLE tasks IN ROW EXCLUSIVE MODE");
        if (c_->query("SELECT current_setting('transaction_read_only')").text(0, 0) == "on")
          return "database refuses writes: the server's transactions are read-only";
        return {};
      });
      read_only_seen_ = !problem.empty();
      return problem;
    } catch (const std::exception& e) {
      return std::string(need_write ? "database refuses writes: " : "database cannot be read: ") +
             e.what();
    }
  }

  void begin_request(std::chrono::steady_clock::time_point deadline) override {
    deadline_ = deadline;
    healing([&] {
      set_timeout();
      return 0;
    });
  }

  void end_request() noexcept override { deadline_.reset(); }

  double now() override {
    return query("SELECT extract(epoch FROM clock_timestamp())", {}).real(0, 0);
  }

 private:
  // Runs `f`; a session the server ended (a restart, a failover, a terminated backend) is
  // found broken by its first statement: connected again, `f` runs once more. Throws when the
  // server cannot be reached (the request, or the probe, says so).
  template <typename F>
  std::invoke_result_t<F&> healing(F&& f) {
    if (c_->broken()) reconnect();
    try {
      return f();
    } catch (const db::pg::PgError&) {
      if (!c_->broken()) throw;
      reconnect();
      return f();
    }
  }

  void reconnect() {
    c_->reconnect();
    timeout_ms_ = -1;  // the new session has the default statement_timeout
    if (deadline_) set_timeout();
  }

  // The request's deadline as the session's statement_timeout (mostly one SET a thread).
  void set_timeout() {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        *deadline_ - std::chrono::steady_clock::now())
                        .count();
    const int64_t timeout = std::max<int64_t>(100, ms / 100 * 100);
    if (timeout == timeout_ms_) return;
    c_->exec("SET statement_timeout = " + std::to_string(timeout));
    timeout_ms_ = timeout;
  }

  std::unique_ptr<db::pg::Connection> c_;
  bool read_only_seen_ = false;  // the last probe found the session read-only
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  int64_t timeout_ms_ = -1;
};

}  // namespace

std::unique_ptr<PageDb> pg_page_db(std::unique_ptr<db::pg::Connection> c) {
  return std::make_unique<PgPageDb>(std::move(c));
}

}  // namespace autonous::ops
