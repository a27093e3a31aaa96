#include "internal/db/migrator.h"

#include <string>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <spdlog/spdlog.h>

#include "internal/db/write_transaction.h"

namespace autonous::db {
namespace {

void ensure_table(SQLite::Database& db) {
  db.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations ("
      " version INTEGER PRIMARY KEY,"
      " name TEXT NOT NULL,"
      " applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))");
}

int read_version(SQLite::Database& db) {
  SQLite::Statement q(db, "SELECT coalesce(max(version), 0) FROM schema_migrations");
  q.executeStep();
  return q.getColumn(0).getInt();
}

}  // namespace

int schema_version(SQLite::Database& db) {
  if (!db.tableExists("schema_migrations")) return 0;
  return read_version(db);
}

int migrate(SQLite::Database& db, const std::vector<Migration>& migrations) {
  const int known = migrations.empty() ? 0 : migrations.back().version;
  // Fast path without a write lock: most commands find the schema current.
  if (db.tableExists("schema_migrations")) {
    const int current = read_version(db);
    if (current > known)
      throw SchemaTooNewError("database schema version " + std::to_string(current) +
                              " is newer than this binary knows (" + std::to_string(known) +
                              "); upgrade autonous");
    if (current == known) return current;
  }
  for (const Migration& m : migrations) {
    // The version is read again inside the write transaction: another process may have
    // applied this migration since we looked.
    WriteTransaction tx(db);
    ensure_table(db);
    const int current = read_version(db);
    if (current > known)
      throw SchemaTooNewError("database schema version " + std::to_string(current) +
                              " is newer than this binary knows (" + std::to_string(known) +
                              "); upgrade autonous");
    if (m.version <= current) continue;
    db.exec(std::string(m.sql));
    SQLite::Statement ins(db, "INSERT INTO schema_migrations(version, name) VALUES (?, ?)");
    ins.bind(1, m.version);
    ins.bind(2, std::string(m.name));
    ins.exec();
    tx.commit();
    spdlog::info("migration applied version={} name={}", m.version, m.name);
  }
  return schema_version(db);
}

}  // namespace autonous::db
