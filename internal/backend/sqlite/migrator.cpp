#include "internal/backend/sqlite/migrator.h"

#include <map>
#include <stdexcept>
#include <string>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <spdlog/spdlog.h>

#include "internal/backend/sqlite/write_transaction.h"
#include "internal/common/log.h"

namespace autonous::db {
namespace {

// A migration whose text holds this runs with foreign keys off (see migrate()).
constexpr std::string_view kForeignKeysOff = "-- autonous:foreign-keys-off";

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

// Turns foreign keys back on when a migration turned them off, also when it throws.
struct ForeignKeysOn {
  ForeignKeysOn(SQLite::Database& d, bool a) : db(d), active(a) {}
  SQLite::Database& db;
  bool active;
  ForeignKeysOn(const ForeignKeysOn&) = delete;
  ForeignKeysOn& operator=(const ForeignKeysOn&) = delete;
  ~ForeignKeysOn() {
    try {
      if (active) db.exec("PRAGMA foreign_keys = ON");
    } catch (...) {  // a destructor must not throw; the connection is closed soon after
    }
  }
};

// Rows that break a foreign key now (`PRAGMA foreign_key_check`), by table.
std::map<std::string, int64_t> foreign_key_violations(SQLite::Database& db) {
  std::map<std::string, int64_t> out;
  SQLite::Statement check(db, "PRAGMA foreign_key_check");
  while (check.executeStep()) ++out[check.getColumn(0).getString()];
  return out;
}

// A migration may not add violations; those already there (rows deleted from the sqlite3
// shell, where foreign keys are off) are not its doing and do not block it.
void check_foreign_keys(SQLite::Database& db, const Migration& m,
                        const std::map<std::string, int64_t>& before) {
  for (const auto& [table, n] : foreign_key_violations(db)) {
    const auto it = before.find(table);
    if (n > (it == before.end() ? 0 : it->second))
      throw std::runtime_error("migration " + std::string(m.name) +
                               " would break a foreign key (table " + table + "); nothing applied");
  }
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
    // A migration that rebuilds a table referenced by foreign keys runs with them off (SQLite
    // ignores the pragma inside a transaction) and checks them before it commits.
    const bool keys_off = m.sql.find(kForeignKeysOff) != std::string_view::npos;
    if (keys_off) db.exec("PRAGMA foreign_keys = OFF");
    const ForeignKeysOn restore{db, keys_off};
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
    const auto violations_before =
        keys_off ? foreign_key_violations(db) : std::map<std::string, int64_t>{};
    db.exec(std::string(m.sql));
    if (keys_off) check_foreign_keys(db, m, violations_before);
    SQLite::Statement ins(db, "INSERT INTO schema_migrations(version, name) VALUES (?, ?)");
    ins.bind(1, m.version);
    ins.bind(2, std::string(m.name));
    ins.exec();
    tx.commit();
    log::info("migration applied", {{"version", m.version}, {"name", m.name}});
  }
  return schema_version(db);
}

}  // namespace autonous::db
