#pragma once
// Applies migrations in order, each in its own IMMEDIATE transaction, and records them in
// schema_migrations. Safe to run from several processes at once; a re-run is a no-op.

#include <vector>

#include "internal/backend/migrations.h"

namespace SQLite {
class Database;
}

namespace autonous::db {

// The highest applied migration version, 0 for an empty database.
int schema_version(SQLite::Database& db);

// migrations/sqlite, defined in the generated embedded_sqlite_migrations.cpp.
const std::vector<Migration>& embedded_migrations();

// Applies every migration of `migrations` newer than the database's version and returns the
// resulting version. Throws SchemaTooNewError when the database is newer than the last of
// `migrations`, SQLite::Exception when a migration fails (that migration is rolled back).
int migrate(SQLite::Database& db, const std::vector<Migration>& migrations = embedded_migrations());

}  // namespace autonous::db
