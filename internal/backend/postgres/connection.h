#pragma once
// PostgreSQL through libpq: one connection (one thread), statements with text parameters
// prepared once per connection and reused, results as RAII values, a transaction guard, and
// LISTEN/NOTIFY with a bounded wait. Errors throw PgError with the server's SQLSTATE.
// libpq directly, not libpqxx: Debian ships libpqxx 6.4 (its 7.x API differs), and what
// autonous needs (parameters, prepared statements, notifications, a socket to wait on) is a
// small part of libpq's C API; this header pulls in no libpq header.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

struct pg_conn;
struct pg_result;

namespace autonous::db::pg {

class Pool;  // pool.h

class PgError : public std::runtime_error {
 public:
  PgError(const std::string& message, std::string sqlstate)
      : std::runtime_error(message), sqlstate_(std::move(sqlstate)) {}
  // Five characters ("40P01" deadlock, "23505" unique violation), or "" for a client-side error
  // (the connection was lost, say).
  const std::string& sqlstate() const noexcept { return sqlstate_; }
  // A condition that passes by itself, worth waiting out: read-only for now (25006), cancelled
  // by pg_cancel_backend (57014 "due to user request"; not a statement_timeout's 57014), the server
  // starting or shutting down (57P01-57P05), out of resources (53xxx), a connection exception
  // (08xxx), a lock not available (55P03), a serialization failure or deadlock (40001, 40P01).
  bool transient() const noexcept;

 private:
  std::string sqlstate_;
};

// A parameter in text form; nullopt is SQL NULL.
using Param = std::optional<std::string>;
inline Param param(int64_t v) { return std::to_string(v); }
inline Param param(const std::string& v) { return v; }
inline Param param(const char* v) { return std::string(v); }
template <typename T>
Param param(const std::optional<T>& v) {
  return v ? param(*v) : Param{};
}

class Result {
 public:
  explicit Result(pg_result* r) noexcept : r_(r) {}
  ~Result();
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Result& operator=(Result&&) = delete;
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;

  int rows() const noexcept;
  int columns() const noexcept;
  std::string column_name(int col) const;
  int64_t affected() const;  // rows an INSERT/UPDATE/DELETE touched
  bool is_null(int row, int col) const noexcept;
  std::string text(int row, int col) const;  // "" for NULL
  int64_t int64(int row, int col) const;     // 0 for NULL; throws PgError when not an integer
  double real(int row, int col) const;       // 0 for NULL

 private:
  pg_result* r_;
};

// Direct (open()): one libpq connection of its own. Pooled (pooled()): the same interface over
// a process's Pool (pool.h): each statement borrows one of the pool's connections and gives it
// back at once, except that a connection in a transaction (from BEGIN to COMMIT or ROLLBACK) or
// held (hold()) stays with this one until then, so a transaction, its prepared statements'
// results and a session setting see one server session.
class Connection {
 public:
  // Connects to `url` (postgresql://user[:password]@host[:port]/db?options). Throws PgError
  // naming the server's reason; the URL's password is never in the message.
  static std::unique_ptr<Connection> open(
      const std::string& url, std::chrono::seconds connect_timeout = std::chrono::seconds(10));
  // A connection that borrows from `pool`; connects nothing until its first statement.
  static std::unique_ptr<Connection> pooled(std::shared_ptr<Pool> pool);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs `sql` (one or more statements, no parameters). Throws PgError.
  void exec(const std::string& sql);
  // Runs one statement with `params` ($1, $2, …), prepared on first use and reused. Throws
  // PgError.
  Result query(const std::string& sql, const std::vector<Param>& params = {});

  // LISTEN on `channel` (an identifier; again after a reconnect()). wait() returns how many
  // notifications arrived (all pending ones are consumed; their payloads appended to
  // `payloads` when given), 0 after `timeout`. Throws PgError when the connection breaks.
  // Direct connections only (std::logic_error when pooled).
  void listen(const std::string& channel);
  int wait(std::chrono::milliseconds timeout, std::vector<std::string>* payloads = nullptr);

  // Statements by query() from now on end by `deadline` (nullopt: none): past it the statement
  // is cancelled and fails with PgError 57014 ("... passed its deadline"), not transient. A
  // client-side statement_timeout without a SET and a RESET (timed_exec.h).
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) noexcept {
    deadline_ = deadline;
  }

  // Pooled: keeps the borrowed connection while `on` (a session setting, from its SET to its
  // RESET, stays with one server session). Direct: nothing to do.
  void hold(bool on);

  // True when the connection to the server is gone (a restart, a failover, a terminated
  // session): statements fail until reconnect(). Pooled: the connection borrowed broke.
  bool broken() const noexcept;
  // Connects again with the same parameters: the session settings and LISTENs are restored,
  // statements are prepared again on first use. Throws PgError when the server cannot be
  // reached (the connection stays broken; call again later). Pooled: forgets the broken one
  // (a transaction in it is gone) and borrows again.
  void reconnect();
  // Counts reconnect()s: a Transaction begun in an earlier session refuses to commit.
  uint64_t session() const noexcept { return session_; }

  // The server's URL (the pool's when pooled).
  const std::string& url() const noexcept;

  bool in_transaction() const noexcept;
  // COMMIT; throws PgError when the server rolled back instead (an earlier statement failed).
  void commit();

 private:
  friend class Pool;
  Connection(pg_conn* c, std::string url) noexcept : c_(c), url_(std::move(url)) {}
  explicit Connection(std::shared_ptr<Pool> pool) noexcept;
  [[noreturn]] void fail(const std::string& what, pg_result* r = nullptr) const;
  void configure();                        // the session settings; checks the encoding
  bool idle_and_sound() const noexcept;    // for the pool: nothing arrived while it was idle
  Connection& borrowed();                  // pooled: the connection borrowed, borrowing one
  void settle() noexcept;                  // pooled: gives it back unless in a transaction or held
  void failed(const PgError& e) noexcept;  // pooled: settle() after `e`, closing a read-only one
  // Pooled: `body` on the borrowed connection, then settle() (or failed()).
  template <typename Body>
  void lend(Body&& body);
  Result run(const std::string& sql, const std::vector<Param>& params,
             std::optional<std::chrono::steady_clock::time_point> deadline);
  pg_conn* c_ = nullptr;  // direct
  std::string url_;
  std::map<std::string, std::string> prepared_;  // sql → statement name
  std::vector<std::string> channels_;            // LISTENed
  uint64_t session_ = 0;
  std::shared_ptr<Pool> pool_;        // pooled
  std::unique_ptr<Connection> lent_;  // pooled: borrowed now
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  bool held_ = false;
  bool doomed_ = false;  // pooled: the borrowed one is closed, not given back, when idle
  bool lost_ = false;    // pooled: the borrowed connection broke; statements fail until reconnect()
};

// BEGIN at READ COMMITTED; rolls back unless commit() ran.
class Transaction {
 public:
  explicit Transaction(Connection& c);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Connection& c_;
  uint64_t session_;
  bool done_ = false;
};

// The connection string with any password replaced by "***", for messages and logs.
std::string redact_url(const std::string& url);

// JSON text with each \u0000 escape (which jsonb refuses) written as \ufffd; every other
// escape, and an escaped backslash followed by "u0000", is kept.
std::string without_nul_escapes(const std::string& json);

// `values` as one array parameter in PostgreSQL's array input syntax ({"a","b\"c",NULL}), to
// send many rows in one statement (`unnest($1::text[], …)`); nullopt is NULL. Each element is
// quoted, so any text (commas, braces, quotes, backslashes, "NULL") reads back as it was; a NUL
// byte (which PostgreSQL's text cannot hold) becomes U+FFFD, as in a scalar parameter.
std::string array_literal(const std::vector<Param>& values);

}  // namespace autonous::db::pg
