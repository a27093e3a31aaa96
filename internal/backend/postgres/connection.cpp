#include "internal/backend/postgres/connection.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include <libpq-fe.h>
#include <poll.h>

#include "internal/backend/postgres/pool.h"
#include "internal/backend/postgres/timed_exec.h"
#include "internal/common/utf8.h"

namespace autonous::db::pg {
namespace {

std::string trimmed(const char* s) {
  std::string out = s ? s : "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

std::string redact_url(const std::string& url) {
  // scheme://user:password@host… → scheme://user:***@host…, and ?…password=… → password=***
  std::string out = url;
  const auto scheme = out.find("://");
  if (scheme != std::string::npos) {
    const auto at = out.find('@', scheme + 3);
    const auto colon = out.find(':', scheme + 3);
    if (at != std::string::npos && colon != std::string::npos && colon < at)
      out = out.substr(0, colon + 1) + "***" + out.substr(at);
  }
  for (auto p = out.find("password="); p != std::string::npos; p = out.find("password=", p + 1)) {
    const bool ssl = p >= 3 && out.compare(p - 3, 3, "ssl") == 0;  // sslpassword=
    const auto key = ssl ? p - 3 : p;
    if (key > 0 && out[key - 1] != '?' && out[key - 1] != '&' && out[key - 1] != ' ') continue;
    const auto value = p + 9;
    const auto end = out.find_first_of("& ", value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
  }
  return out;
}

std::string without_nul_escapes(const std::string& json) {
  if (json.find("\\u0000") == std::string::npos) return json;
  std::string out = json;
  for (size_t i = 0; i + 1 < out.size(); ++i) {
    if (out[i] != '\\') continue;
    if (out.compare(i + 1, 5, "u0000") == 0) out.replace(i + 2, 4, "fffd");
    ++i;  // a backslash pair is skipped whole
  }
  return out;
}

std::string array_literal(const std::vector<Param>& values) {
  std::string out = "{";
  for (const Param& v : values) {
    if (out.size() > 1) out += ',';
    if (!v) {
      out += "NULL";
      continue;
    }
    out += '"';
    for (const char ch : *v) {
      if (ch == '\0') {  // text cannot hold it: repaired as a scalar parameter is (query())
        out += "\xEF\xBF\xBD";
        continue;
      }
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    out += '"';
  }
  return out + "}";
}

Result::~Result() { PQclear(r_); }
int Result::rows() const noexcept { return PQntuples(r_); }
int Result::columns() const noexcept { return PQnfields(r_); }
std::string Result::column_name(int col) const {
  const char* name = PQfname(r_, col);
  return name != nullptr ? name : "";
}
int64_t Result::affected() const {
  const char* n = PQcmdTuples(r_);
  return (n && *n) ? std::strtoll(n, nullptr, 10) : 0;
}
bool Result::is_null(int row, int col) const noexcept { return PQgetisnull(r_, row, col) != 0; }
std::string Result::text(int row, int col) const {
  return std::string(PQgetvalue(r_, row, col), PQgetlength(r_, row, col));
}
int64_t Result::int64(int row, int col) const {
  if (is_null(row, col)) return 0;
  const char* v = PQgetvalue(r_, row, col);
  const char* end = v + PQgetlength(r_, row, col);
  int64_t out = 0;
  const auto [p, ec] = std::from_chars(v, end, out);
  if (ec != std::errc() || p != end)
    throw PgError("not an integer in column " + std::to_string(col) + ": " + std::string(v), "");
  return out;
}
double Result::real(int row, int col) const {
  return is_null(row, col) ? 0.0 : std::strtod(PQgetvalue(r_, row, col), nullptr);
}

std::unique_ptr<Connection> Connection::open(const std::string& url,
                                             std::chrono::seconds connect_timeout) {
  const std::string timeout = std::to_string(std::max<int64_t>(1, connect_timeout.count()));
  // Defaults first: the URL (expanded from `dbname`, the last keyword) overrides any of them.
  // TCP keepalives and a user timeout: a server gone silent (a partition) fails a statement in
  // about a minute instead of leaving it blocked for hours.
  const char* keys[] = {"connect_timeout",
                        "application_name",
                        "keepalives",
                        "keepalives_idle",
                        "keepalives_interval",
                        "keepalives_count",
                        "tcp_user_timeout",
                        "client_encoding",
                        "dbname",
                        nullptr};
  const char* values[] = {timeout.c_str(), "autonous", "1",         "30",   "10", "3",
                          "60000",         "UTF8",     url.c_str(), nullptr};
  pg_conn* c = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (c == nullptr) throw PgError("PostgreSQL: out of memory", "");
  if (PQstatus(c) != CONNECTION_OK) {
    const std::string why = trimmed(PQerrorMessage(c));
    PQfinish(c);
    throw PgError("PostgreSQL " + redact_url(url) + ": " + why, "");
  }
  auto conn = std::unique_ptr<Connection>(new Connection(c, url));
  conn->configure();
  return conn;
}

void Connection::configure() {
  // Times the server writes are UTC like SQLite's; a statement waits at most 30 s for a lock
  // (claims never wait: SKIP LOCKED). autonous never waits on anything else inside a
  // transaction (no HTTP call runs in one), so a session idle in a transaction for 10 s is a
  // frozen or stopped process: the server ends it and its locks go with it.
  exec(
      "SET TIME ZONE 'UTC'; SET lock_timeout = '30s'; "
      "SET idle_in_transaction_session_timeout = '10s'; SET bytea_output = 'hex'");
  if (query("SHOW server_encoding").text(0, 0) != "UTF8")
    throw PgError("PostgreSQL " + redact_url(url_) +
                      ": the database's encoding must be UTF8 (CREATE DATABASE … ENCODING 'UTF8')",
                  "");
}

std::unique_ptr<Connection> Connection::pooled(std::shared_ptr<Pool> pool) {
  if (!pool) throw std::invalid_argument("Connection::pooled: no pool");
  return std::unique_ptr<Connection>(new Connection(std::move(pool)));
}

Connection::Connection(std::shared_ptr<Pool> pool) noexcept : pool_(std::move(pool)) {}

bool Connection::idle_and_sound() const noexcept {
  if (PQstatus(c_) != CONNECTION_OK || PQtransactionStatus(c_) != PQTRANS_IDLE) return false;
  // An idle session is sent nothing (pooled ones LISTEN to nothing): anything readable is the
  // server ending it (a restart, pg_terminate_backend, idle_session_timeout) or closing it.
  pollfd p{PQsocket(c_), POLLIN, 0};
  return p.fd >= 0 && ::poll(&p, 1, 0) == 0;
}

Connection& Connection::borrowed() {
  if (lost_)
    throw PgError("PostgreSQL: the connection was lost; nothing runs until it is reconnected", "");
  if (!lent_) {
    try {
      lent_ = pool_->take();
    } catch (const PgError& e) {
      // None could be opened (the server down, refusing connections): as a direct connection
      // that broke, reported lost until reconnect() connects.
      if (e.sqlstate().empty()) lost_ = true;
      throw;
    }
  }
  return *lent_;
}

void Connection::settle() noexcept {
  if (!lent_) return;
  if (lent_->broken()) {
    lost_ = true;  // as a direct connection would be: broken until reconnect()
    pool_->drop(std::move(lent_), /*retire=*/true);
    return;
  }
  if (held_ || lent_->in_transaction()) return;
  if (doomed_) {
    doomed_ = false;
    pool_->drop(std::move(lent_), /*retire=*/true);
    return;
  }
  pool_->give(std::move(lent_));
}

template <typename Body>
void Connection::lend(Body&& body) {
  try {
    body(borrowed());
  } catch (const PgError& e) {
    failed(e);
    throw;
  } catch (...) {
    settle();
    throw;
  }
  settle();
}

void Connection::failed(const PgError& e) noexcept {
  // A session opened read-only (a standby, default_transaction_read_only) stays so however the
  // server changes: closed, so that the next statement connects afresh (to a promoted primary).
  // Closed when its transaction ends (until then its statements fail as the server says), and
  // the pool's others with it: they were opened on the same read-only server.
  if (lent_ && e.sqlstate() == "25006") doomed_ = true;
  settle();
}

void Connection::hold(bool on) {
  if (!pool_) return;
  held_ = on;
  if (!on) settle();
}

bool Connection::broken() const noexcept {
  if (pool_) return lost_ || (lent_ && lent_->broken());
  return PQstatus(c_) != CONNECTION_OK;
}

void Connection::reconnect() {
  if (pool_) {
    // A transaction or a session setting in the broken connection is gone with it. Every
    // connection of the pool opened before is retired too: the caller wants a new session (a
    // server restarted or promoted meanwhile).
    // (A handle already lost retired them when its connection broke.)
    if (lent_)
      pool_->drop(std::move(lent_), /*retire=*/true);
    else if (!lost_)
      pool_->retire();
    held_ = false;
    doomed_ = false;
    ++session_;
    lost_ = true;
    try {
      lent_ = pool_->take();  // throws when the server cannot be reached: still lost
    } catch (const PgError& e) {
      if (e.sqlstate() == "53300") lost_ = false;  // the pool is busy, not the server gone
      throw;
    }
    lost_ = false;
    settle();
    return;
  }
  PQreset(c_);
  if (PQstatus(c_) != CONNECTION_OK)
    throw PgError("PostgreSQL " + redact_url(url_) + ": " + trimmed(PQerrorMessage(c_)), "");
  ++session_;
  prepared_.clear();  // the server forgot them with the old session
  configure();
  for (const std::string& channel : channels_) exec("LISTEN " + channel);
}

Connection::~Connection() {
  if (c_ != nullptr) PQfinish(c_);
  // A borrowed connection still in a transaction or holding a setting is closed, not reused.
  if (lent_) {
    const bool broken = lent_->broken();
    pool_->drop(std::move(lent_), broken);
  }
}

bool PgError::transient() const noexcept {
  const std::string& s = sqlstate_;
  if (s.size() != 5) return false;
  const std::string cls = s.substr(0, 2);
  // 57014 is also a statement_timeout, which would recur: only a cancel (pg_cancel_backend)
  // passes.
  const bool cancelled = s == "57014" && std::string_view(what()).find("due to user request") !=
                                             std::string_view::npos;
  return s == "25006" || cancelled || s.rfind("57P0", 0) == 0 || cls == "53" || cls == "08" ||
         s == "55P03" || s == "40001" || s == "40P01";
}

void Connection::fail(const std::string& what, pg_result* r) const {
  std::string state;
  std::string message = trimmed(PQerrorMessage(c_));
  if (r != nullptr) {
    if (const char* s = PQresultErrorField(r, PG_DIAG_SQLSTATE)) state = s;
    if (const char* m = PQresultErrorMessage(r); m && *m) message = trimmed(m);
    PQclear(r);
  }
  throw PgError("PostgreSQL " + what + ": " + message, state);
}

void Connection::exec(const std::string& sql) {
  if (pool_) return lend([&](Connection& c) { c.exec(sql); });
  pg_result* r = PQexec(c_, sql.c_str());
  const auto status = PQresultStatus(r);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail("statement failed", r);
  PQclear(r);
}

Result Connection::query(const std::string& sql, const std::vector<Param>& params) {
  if (pool_) {
    std::optional<Result> r;  // a result outlives its connection's turn
    lend([&](Connection& c) { r.emplace(c.run(sql, params, deadline_)); });
    return std::move(*r);
  }
  return run(sql, params, deadline_);
}

Result Connection::run(const std::string& sql, const std::vector<Param>& params,
                       std::optional<std::chrono::steady_clock::time_point> deadline) {
  auto it = prepared_.find(sql);
  if (it == prepared_.end()) {
    const std::string name = "autonous_" + std::to_string(prepared_.size() + 1);
    pg_result* r = PQprepare(c_, name.c_str(), sql.c_str(), 0, nullptr);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) fail("prepare failed", r);
    PQclear(r);
    it = prepared_.emplace(sql, name).first;
  }
  // PostgreSQL text holds neither NUL bytes nor invalid UTF-8 (SQLite stores both): such a
  // value is stored repaired, not refused, like SQLite's readers see it (U+FFFD).
  std::vector<std::string> repaired;
  repaired.reserve(params.size());
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Param& p : params) {
    if (!p) {
      values.push_back(nullptr);
      continue;
    }
    if (p->find('\0') == std::string::npos && common::is_valid_utf8(*p)) {
      values.push_back(p->c_str());
      continue;
    }
    std::string v = common::sanitize_utf8(*p);
    for (size_t at = v.find('\0'); at != std::string::npos; at = v.find('\0', at))
      v.replace(at, 1, "\xEF\xBF\xBD");
    repaired.push_back(std::move(v));
    values.push_back(repaired.back().c_str());
  }
  bool cancelled = false;
  pg_result* r = deadline
                     ? exec_prepared_until(c_, it->second.c_str(), values, *deadline, &cancelled)
                     : PQexecPrepared(c_, it->second.c_str(), static_cast<int>(values.size()),
                                      values.data(), nullptr, nullptr, 0);
  const auto status = PQresultStatus(r);
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  if (cancelled && status == PGRES_FATAL_ERROR && state != nullptr &&
      std::string_view(state) == "57014") {
    PQclear(r);
    throw PgError("PostgreSQL: the statement passed its deadline and was cancelled", "57014");
  }
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) fail("statement failed", r);
  return Result(r);
}

void Connection::listen(const std::string& channel) {
  if (pool_) throw std::logic_error("LISTEN needs a direct connection, not a pooled one");
  exec("LISTEN " + channel);
  if (std::find(channels_.begin(), channels_.end(), channel) == channels_.end())
    channels_.push_back(channel);
}

int Connection::wait(std::chrono::milliseconds timeout, std::vector<std::string>* payloads) {
  if (pool_) throw std::logic_error("wait() needs a direct connection, not a pooled one");
  const auto consume = [this, payloads] {
    int got = 0;
    while (PGnotify* n = PQnotifies(c_)) {
      if (payloads != nullptr) payloads->emplace_back(n->extra != nullptr ? n->extra : "");
      PQfreemem(n);
      ++got;
    }
    return got;
  };
  if (PQconsumeInput(c_) == 0) fail("connection lost");
  if (const int n = consume(); n > 0) return n;
  pollfd p{PQsocket(c_), POLLIN, 0};
  if (p.fd < 0) fail("connection lost");
  const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
  if (n < 0 && errno != EINTR) fail("poll failed");
  if (n <= 0) return 0;
  if (PQconsumeInput(c_) == 0) fail("connection lost");
  return consume();
}

const std::string& Connection::url() const noexcept { return pool_ ? pool_->url() : url_; }

bool Connection::in_transaction() const noexcept {
  if (pool_) return lent_ && lent_->in_transaction();
  return PQtransactionStatus(c_) != PQTRANS_IDLE;
}

Transaction::Transaction(Connection& c) : c_(c), session_(c.session()) { c_.exec("BEGIN"); }
Transaction::~Transaction() {
  if (done_ || c_.session() != session_) return;  // a new session has no transaction of ours
  // A failed COMMIT that left the session idle (the server rolled back): nothing to roll back,
  // and a pooled connection must not borrow another just to say so.
  if (!c_.in_transaction()) return;
  try {
    c_.exec("ROLLBACK");
  } catch (...) {  // the connection is broken; the server rolls back when it closes
  }
}
void Connection::commit() {
  if (pool_) {
    if (!lent_) throw PgError("PostgreSQL: COMMIT outside a transaction", "25P01");
    return lend([](Connection& c) { c.commit(); });
  }
  pg_result* r = PQexec(c_, "COMMIT");
  if (PQresultStatus(r) != PGRES_COMMAND_OK) fail("COMMIT failed", r);
  const std::string tag = PQcmdStatus(r);
  PQclear(r);
  // COMMIT of a transaction an error aborted answers ROLLBACK, not an error.
  if (tag != "COMMIT") throw PgError("PostgreSQL: the transaction was rolled back", "25P02");
}

void Transaction::commit() {
  if (c_.session() != session_)
    throw PgError("PostgreSQL: the connection was lost inside a transaction; nothing committed",
                  "");
  c_.commit();
  done_ = true;
}

}  // namespace autonous::db::pg
