#pragma once
// Shared helpers for the e2e suites: run `autonous` with an environment, read what it did.
// Every suite runs twice: on a SQLite file, and (ctest's `pg.` tests, AUTONOUS_E2E_BACKEND=
// postgres) on a fresh PostgreSQL database of the throwaway server (pg_test_db.h), where the
// fixture hands the binary DATABASE_URL instead of DB_PATH. Events are read through the
// product's own reader (`autonous events`, JSON lines); task rows, history and the other tables
// with plain SQL that both backends speak as written (the front-end contract: no JSON functions,
// `$n` parameters), so nothing is translated.

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/pg_test_db.h"
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

inline bool e2e_on_postgres() {
  const char* b = std::getenv("AUTONOUS_E2E_BACKEND");
  return b != nullptr && std::string(b) == "postgres";
}

// A temp dir with a database path, the worker's environment against a stub, and queries.
class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!e2e_on_postgres()) return;
    PG_TEST_OR_SKIP();
    pg_ = std::make_unique<PgTestDb>();
  }
  // The variable that selects this run's database.
  Env db_env(Env extra = {}) const {
    extra.emplace(pg_ ? "DATABASE_URL" : "DB_PATH", pg_ ? pg_->url() : db_);
    return extra;
  }
  Env env(const StubServer& stub, Env extra = {}) {
    Env e = {{pg_ ? "DATABASE_URL" : "DB_PATH", pg_ ? pg_->url() : db_},
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
  // Runs `autonous worker --drain` with `e` until it exits (at most `timeout`) and expects exit 0,
  // showing the start of its stderr otherwise. Returns its result.
  ProcessResult drain(const Env& e, std::chrono::seconds timeout = std::chrono::seconds(120)) {
    ProcessResult r = autonous(dir_, {"worker", "--drain"}, e, "", timeout);
    EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
    return r;
  }
  // The same against `stub`, with the worker's test environment (env()) and `extra`.
  ProcessResult drain(const StubServer& stub, Env extra = {}) {
    return drain(env(stub, std::move(extra)));
  }
  int64_t enqueue(const std::string& chat, const std::string& text) {
    const auto r = autonous(dir_, {"enqueue", "--chat", chat, text}, db_env());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::stoll(r.out);
  }
  // Migrates and imports a 400-turn chat by plain SQL (as a front end would): user and
  // assistant in turn, filler text except the rows `special` names (by index). Returns the ids.
  std::vector<int64_t> import_chat(const std::string& chat,
                                   const std::map<int, std::string>& special) {
    EXPECT_EQ(autonous(dir_, {"migrate"}, db_env()).exit_code, 0);
    std::vector<std::vector<std::string>> rows;
    for (int i = 0; i < 800; ++i) {
      const auto it = special.find(i);
      rows.push_back({chat, i % 2 ? "assistant" : "user",
                      it != special.end() ? it->second
                                          : "filler about the weather and lunch number " +
                                                std::to_string(i) + " " + std::string(200, 'w')});
    }
    return insert_many("INSERT INTO history(chat_id, role, text) VALUES ($1, $2, $3) RETURNING id",
                       rows);
  }
  std::string str(const std::string& sql) {
    if (!pg_) return query_string(db_, sql);
    const db::pg::Result r = pg_->db().query(sql);
    return r.rows() == 0 || r.is_null(0, 0) ? "" : r.text(0, 0);
  }
  int64_t num(const std::string& sql) {
    if (!pg_) return query_int(db_, sql);
    const std::string v = str(sql);
    if (v == "t" || v == "true") return 1;
    if (v == "f" || v == "false") return 0;
    return v.empty() ? 0 : static_cast<int64_t>(std::stod(v));
  }
  // Inserts `rows` with `sql` (a statement with $1, $2, … placeholders, which both backends
  // take) in one transaction on this run's database, as a front end would. With `RETURNING id`,
  // returns the ids.
  std::vector<int64_t> insert_many(const std::string& sql,
                                   const std::vector<std::vector<std::string>>& rows) {
    std::vector<int64_t> ids;
    if (pg_) {
      db::pg::Transaction tx(pg_->db());
      for (const auto& r : rows) {
        const db::pg::Result out =
            pg_->db().query(sql, std::vector<db::pg::Param>(r.begin(), r.end()));
        if (out.rows() > 0) ids.push_back(out.int64(0, 0));
      }
      tx.commit();
      return ids;
    }
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.setBusyTimeout(kReaderBusyMs);
    SQLite::Transaction tx(db);
    SQLite::Statement ins(db, sql);
    for (const auto& r : rows) {
      for (size_t i = 0; i < r.size(); ++i) ins.bind(static_cast<int>(i + 1), r[i]);
      // SQLite makes every change at the first step; RETURNING's row is read there.
      if (ins.executeStep()) ids.push_back(ins.getColumn(0).getInt64());
      ins.reset();
    }
    tx.commit();
    return ids;
  }
  // The events as an operator reads them (`autonous events`, the product's own reader), oldest
  // first, one JSON object each; `args` filter them, e.g. {"--type", "llm.retry", "--task", "3"}.
  std::vector<nlohmann::json> events(const std::vector<std::string>& args = {}) {
    std::vector<std::string> argv = {"events"};
    argv.insert(argv.end(), args.begin(), args.end());
    const ProcessResult r = autonous(dir_, argv, db_env());
    EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
    std::vector<nlohmann::json> out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      EXPECT_TRUE(j.is_object() && j["payload"].is_object()) << line;
      out.push_back(std::move(j));
    }
    return out;
  }
  // The payloads of the events of `type` (of task `task` when not 0), oldest first.
  std::vector<nlohmann::json> payloads(const std::string& type, int64_t task = 0) {
    std::vector<std::string> args = {"--type", type};
    if (task != 0) args.insert(args.end(), {"--task", std::to_string(task)});
    std::vector<nlohmann::json> out;
    for (nlohmann::json& e : events(args)) out.push_back(std::move(e["payload"]));
    return out;
  }
  // `key` of the first such payload as an operator reads it: a string as it is, anything else as
  // JSON text ("" when there is no such event or key).
  std::string field(const std::string& type, int64_t task, const std::string& key) {
    const std::vector<nlohmann::json> p = payloads(type, task);
    if (p.empty() || !p.front().contains(key)) return "";
    const nlohmann::json& v = p.front()[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
  }
  // How many payloads of `type` hold `key` with a true flag (true, or a number not 0).
  int64_t count_flagged(const std::string& type, const std::string& key) {
    int64_t n = 0;
    for (const nlohmann::json& p : payloads(type))
      n += p.contains(key) && ((p[key].is_boolean() && p[key].get<bool>()) ||
                               (p[key].is_number() && p[key].get<double>() != 0));
    return n;
  }

  // Runs `sql` (a front end's or an operator's write) on this run's database.
  void exec_sql(const std::string& sql) {
    if (pg_) {
      pg_->db().exec(sql);
      return;
    }
    SQLite::Database db(db_, SQLite::OPEN_READWRITE);
    db.setBusyTimeout(kReaderBusyMs);
    db.exec(sql);
  }

  TempDir dir_;
  std::string db_ = dir_.file("e2e.db");
  std::unique_ptr<PgTestDb> pg_;  // the PostgreSQL run's database
};

}  // namespace autonous::testing
