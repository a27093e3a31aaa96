#pragma once
// StatementCache: prepared statements of one connection, compiled once and reused.
// Preparing is not free here: an UPDATE of `tasks` also compiles its triggers. get() hands back
// the statement reset, with its bindings cleared. Not thread-safe, like the connection.

#include <map>
#include <memory>
#include <string>

namespace SQLite {
class Database;
class Statement;
}  // namespace SQLite

namespace autonous::db {

// A cached statement in use; resets it when the scope ends, so a statement stepped only part
// way never keeps a read snapshot open (that would stall WAL checkpoints).
class CachedStatement {
 public:
  explicit CachedStatement(SQLite::Statement& s) noexcept : s_(s) {}
  ~CachedStatement();
  CachedStatement(const CachedStatement&) = delete;
  CachedStatement& operator=(const CachedStatement&) = delete;
  SQLite::Statement* operator->() const noexcept { return &s_; }
  SQLite::Statement& operator*() const noexcept { return s_; }

 private:
  SQLite::Statement& s_;
};

class StatementCache {
 public:
  // `db` must outlive the cache.
  explicit StatementCache(SQLite::Database& db);
  ~StatementCache();
  StatementCache(const StatementCache&) = delete;
  StatementCache& operator=(const StatementCache&) = delete;

  // The statement for `sql`, ready to bind. Use one statement at a time per `sql`.
  // Throws SQLite::Exception when `sql` does not compile.
  CachedStatement get(const std::string& sql);
  SQLite::Database& db() noexcept { return db_; }

 private:
  SQLite::Database& db_;
  std::map<std::string, std::unique_ptr<SQLite::Statement>> statements_;
};

}  // namespace autonous::db
