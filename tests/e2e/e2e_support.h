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

// Readers wait out a writer's moment (a worker's WAL recovery, journal-mode switch or
// checkpoint can make a fresh reader busy for an instant) instead of failing the test.
inline constexpr int kReaderBusyMs = 5000;

inline std::string query_string(const std::string& db_path, const std::string& sql) {
  SQLite::Database db(db_path, SQLite::OPEN_READONLY);
  db.setBusyTimeout(kReaderBusyMs);
  SQLite::Statement q(db, sql);
  if (!q.executeStep() || q.getColumn(0).isNull()) return "";
  return q.getColumn(0).getString();
}

inline int64_t query_int(const std::string& db_path, const std::string& sql) {
  SQLite::Database db(db_path, SQLite::OPEN_READONLY);
  db.setBusyTimeout(kReaderBusyMs);
  return db.execAndGet(sql).getInt64();
}

inline const std::string kKey = "sk-e2e-SECRET-7f3a9c";

// A temp dir with a database path, the worker's environment against a stub, and queries.
class E2eTest : public ::testing::Test {
 protected:
  Env env(const StubServer& stub, Env extra = {}) {
    Env e = {{"DB_PATH", db_},
             {"OPENAI_BASE_URL", stub.base_url()},
             {"OPENAI_API_KEY", kKey},
             {"POLL_INTERVAL_MS", "20"},
             {"RETRY_BASE_MS", "50"},
             {"RETRY_MAX_SECONDS", "1"},
             {"RETRY_BUDGET_SECONDS", "0"},  // the attempt cap alone, unless a test says so
             {"SQLITE_SYNCHRONOUS", "NORMAL"}};
    for (auto& [k, v] : extra) e[k] = v;
    return e;
  }
  int64_t enqueue(const std::string& chat, const std::string& text) {
    const auto r = autonous(dir_, {"enqueue", "--chat", chat, text}, {{"DB_PATH", db_}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::stoll(r.out);
  }
  // Migrates and imports a 400-turn chat by plain SQL (as a front end would): user and
  // assistant in turn, filler text except the rows `special` names (by index). Returns the ids.
  std::vector<int64_t> import_chat(const std::string& chat,
                                   const std::map<int, std::string>& special) {
    EXPECT_EQ(autonous(dir_, {"migrate"}, {{"DB_PATH", db_}}).exit_code, 0);
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    SQLite::Transaction tx(db);
    SQLite::Statement ins(db, "INSERT INTO history(chat_id, role, text) VALUES (?, ?, ?)");
    std::vector<int64_t> ids;
    for (int i = 0; i < 800; ++i) {
      const auto it = special.find(i);
      ins.bind(1, chat);
      ins.bind(2, i % 2 ? "assistant" : "user");
      ins.bind(3, it != special.end() ? it->second
                                      : "filler about the weather and lunch number " +
                                            std::to_string(i) + " " + std::string(200, 'w'));
      ins.exec();
      ins.reset();
      ids.push_back(db.getLastInsertRowid());
    }
    tx.commit();
    return ids;
  }
  std::string str(const std::string& sql) { return query_string(db_, sql); }
  int64_t num(const std::string& sql) { return query_int(db_, sql); }

  TempDir dir_;
  std::string db_ = dir_.file("e2e.db");
};

}  // namespace autonous::testing
