#pragma once
// Opening SQLite the one right way: WAL, foreign keys, synchronous mode and a busy handler.
// Every connection of autonous comes from open(); a connection belongs to one thread.

#include <chrono>
#include <memory>
#include <string>

namespace SQLite {
class Database;
}

namespace autonous::db {

struct OpenOptions {
  bool synchronous_full = true;                   // FULL survives power loss; NORMAL is faster
  std::chrono::milliseconds busy_timeout{30000};  // how long a writer waits for the lock
};

// Opens (creating if needed) the database at `path` with journal_mode=WAL, foreign_keys=ON and
// the synchronous mode and busy handler of `options`. Throws SQLite::Exception when the file
// cannot be opened or is not a database. The directory must exist.
std::unique_ptr<SQLite::Database> open(const std::string& path, const OpenOptions& options);

// Opens the existing database at `path` for reading only: no pragma that writes, no migration.
// For commands that only read (status, events) when the file or its folder is read-only.
// Throws SQLite::Exception when it cannot be opened.
std::unique_ptr<SQLite::Database> open_read_only(const std::string& path,
                                                 std::chrono::milliseconds busy_timeout);

}  // namespace autonous::db
