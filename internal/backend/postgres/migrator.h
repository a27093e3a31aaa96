#pragma once
// The migration runner for PostgreSQL: migrations/postgres/NNNN_name.sql, the same version
// numbers and tables as SQLite's, each applied in its own transaction and recorded in
// schema_migrations. A session advisory lock makes concurrent runs (several workers starting at
// once) wait for each other; a re-run is a no-op.

#include <chrono>
#include <vector>

#include "internal/backend/migrations.h"

namespace autonous::db {
namespace pg {
class Connection;
}

// Defined in the generated embedded_pg_migrations.cpp.
const std::vector<Migration>& embedded_pg_migrations();

// The highest applied version, 0 for an empty database. Throws pg::PgError.
int pg_schema_version(pg::Connection& c);

// Applies every migration newer than the database's version; returns the resulting version.
// A migration waits at most `lock_wait` for a table another transaction holds (meanwhile every
// claim and insert would queue behind its lock request): then it is rolled back and the
// PgError says which migration and why. Throws SchemaTooNewError (backend/migrations.h) when the
// database is newer than the last migration, pg::PgError when one fails (rolled back).
inline constexpr std::chrono::milliseconds kMigrationLockWait{10000};
int pg_migrate(pg::Connection& c,
               const std::vector<Migration>& migrations = embedded_pg_migrations(),
               std::chrono::milliseconds lock_wait = kMigrationLockWait);

}  // namespace autonous::db
