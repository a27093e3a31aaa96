#pragma once
// TestDb: a fresh, migrated SQLite file in a temp directory, opened the production way.

#include <memory>
#include <string>

#include <SQLiteCpp/Database.h>

#include "internal/backend/sqlite/database.h"
#include "internal/backend/sqlite/migrator.h"
#include "tests/support/temp_dir.h"

namespace autonous::testing {

class TestDb {
 public:
  TestDb() : path_(dir_.file("test.db")), db_(open_connection()) { db::migrate(*db_); }
  SQLite::Database& db() { return *db_; }
  const std::string& path() const { return path_; }
  const TempDir& dir() const { return dir_; }
  // Another connection to the same file (as another thread or process would have).
  std::unique_ptr<SQLite::Database> open_connection() const {
    return db::open(path_, db::OpenOptions{false, std::chrono::milliseconds(5000)});
  }

 private:
  TempDir dir_;
  std::string path_;
  std::unique_ptr<SQLite::Database> db_;
};

}  // namespace autonous::testing
