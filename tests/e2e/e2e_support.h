#pragma once
// Shared helpers for the e2e suites: run `autonous` with an environment, query the database.

#include <map>
#include <string>
#include <vector>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <gtest/gtest.h>

#include "tests/support/process.h"
#include "tests/support/stub_server.h"
#include "tests/support/temp_dir.h"

namespace autonous::testing {

using Env = std::map<std::string, std::string>;

inline ProcessResult autonous(const TempDir& dir, const std::vector<std::string>& args,
                              const Env& env, const std::string& stdin_text = "",
                              std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  std::vector<std::string> argv = {autonous_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, env, dir.path().string(), stdin_text, timeout);
}

inline std::string query_string(const std::string& db_path, const std::string& sql) {
  SQLite::Database db(db_path, SQLite::OPEN_READONLY);
  SQLite::Statement q(db, sql);
  if (!q.executeStep() || q.getColumn(0).isNull()) return "";
  return q.getColumn(0).getString();
}

inline int64_t query_int(const std::string& db_path, const std::string& sql) {
  SQLite::Database db(db_path, SQLite::OPEN_READONLY);
  return db.execAndGet(sql).getInt64();
}

}  // namespace autonous::testing
