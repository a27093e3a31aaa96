#include "internal/backend/postgres/migrator.h"

#include <string>

#include <spdlog/spdlog.h>

#include "internal/backend/postgres/connection.h"
#include "internal/common/log.h"

namespace autonous::db {
namespace {

// Held for the whole run: concurrent migrators wait here, then find the work done.
class MigrationLock {
 public:
  explicit MigrationLock(pg::Connection& c) : c_(c) {
    // However long another process's migration takes (lock_timeout would give up after 30 s).
    c_.exec(
        "SET lock_timeout = 0; SELECT pg_advisory_lock(hashtextextended('autonous.migrate', 0))");
  }
  ~MigrationLock() {
    try {
      c_.exec(
          "SELECT pg_advisory_unlock(hashtextextended('autonous.migrate', 0)); "
          "SET lock_timeout = '30s'");
    } catch (...) {  // a broken connection releases its locks when it closes
    }
  }
  MigrationLock(const MigrationLock&) = delete;
  MigrationLock& operator=(const MigrationLock&) = delete;

 private:
  pg::Connection& c_;
};

void check_not_newer(int current, int known) {
  if (current > known)
    throw SchemaTooNewError("database schema version " + std::to_string(current) +
                            " is newer than this binary knows (" + std::to_string(known) +
                            "); upgrade autonous");
}

}  // namespace

int pg_schema_version(pg::Connection& c) {
  const pg::Result exists = c.query("SELECT to_regclass('schema_migrations') IS NOT NULL");
  if (exists.text(0, 0) != "t") return 0;
  return static_cast<int>(
      c.query("SELECT coalesce(max(version), 0) FROM schema_migrations").int64(0, 0));
}

int pg_migrate(pg::Connection& c, const std::vector<Migration>& migrations,
               std::chrono::milliseconds lock_wait) {
  const int known = migrations.empty() ? 0 : migrations.back().version;
  int current = pg_schema_version(c);  // the fast path: most commands find it current
  check_not_newer(current, known);
  if (current == known) return current;
  const MigrationLock lock(c);
  c.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations ("
      " version integer PRIMARY KEY, name text NOT NULL,"
      " applied_at text NOT NULL DEFAULT to_char(clock_timestamp() AT TIME ZONE 'UTC',"
      " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))");
  current = pg_schema_version(c);
  check_not_newer(current, known);
  for (const Migration& m : migrations) {
    if (m.version <= current) continue;
    pg::Transaction tx(c);
    c.exec("SET LOCAL lock_timeout = " + std::to_string(lock_wait.count()));
    try {
      c.exec(std::string(m.sql));
    } catch (const pg::PgError& e) {
      // 55P03: a lock not granted in time; 40P01: a deadlock with a running worker's
      // transaction (PostgreSQL rolled this one back). Either way nothing was applied.
      if (e.sqlstate() != "55P03" && e.sqlstate() != "40P01") throw;
      throw pg::PgError(
          "migration " + std::string(m.name) +
              (e.sqlstate() == "40P01" ? std::string(" deadlocked with another transaction")
                                       : " waited " + std::to_string(lock_wait.count()) +
                                             " ms for a lock another transaction holds (a long or "
                                             "idle-in-transaction session?)") +
              "; nothing of it was applied, run it again: " + e.what(),
          e.sqlstate());
    }
    c.query("INSERT INTO schema_migrations(version, name) VALUES ($1, $2)",
            {pg::param(int64_t{m.version}), pg::param(std::string(m.name))});
    tx.commit();
    log::info("migration applied",
              {{"version", m.version}, {"name", m.name}, {"backend", "postgresql"}});
  }
  return pg_schema_version(c);
}

}  // namespace autonous::db
