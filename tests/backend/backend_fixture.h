#pragma once
// The conformance suites' backends (tests/backend/*_conformance_test.cpp): a fresh, migrated
// database of the test's own, SQLite or PostgreSQL (on the throwaway server of
// scripts/with-postgres), opened through the seam (backend::open_session) the way the worker and
// the commands open it. Plain SQL on the test's own connection sets up and reads back rows the
// seam has no reader for. TYPED_TEST_SUITE(Suite, Backends, testing::BackendNames) runs a suite
// as Suite/Sqlite and Suite/Postgres; a PostgreSQL case calls PG_TEST_OR_SKIP() first.

#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "internal/backend/session.h"
#include "internal/config/config.h"
#include "internal/events/event_log.h"
#include "internal/queue/task_queue.h"
#include "tests/support/pg_test_db.h"
#include "tests/support/test_db.h"

namespace autonous::testing {

// A queue on its own session (another thread's or process's).
struct OwnedQueue {
  std::unique_ptr<backend::Session> session;
  queue::TaskQueue* q = nullptr;
};

// A database of the test's own (migrated) with plain SQL on its connection.
struct SqliteDb {
  static constexpr bool kPostgres = false;
  TestDb t;
  config::Config config() const {
    config::Config c;
    c.db_path = t.path();
    return c;
  }
  int64_t scalar(const std::string& sql) { return t.db().execAndGet(sql).getInt64(); }
  std::string text(const std::string& sql) { return t.db().execAndGet(sql).getString(); }
  void exec(const std::string& sql) { t.db().exec(sql); }
};

struct PgDb {
  static constexpr bool kPostgres = true;
  PgTestDb t;
  config::Config config() const {
    config::Config c;
    c.database_url = t.url();
    return c;
  }
  int64_t scalar(const std::string& sql) { return t.scalar(sql); }
  std::string text(const std::string& sql) { return t.db().query(sql).text(0, 0); }
  void exec(const std::string& sql) { t.db().exec(sql); }
};

// `s` as an SQL string literal (quotes doubled; both backends read it the same).
inline std::string sql_text(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// The backend under test: a session on that database, through the seam.
template <typename Db>
struct Backend : Db {
  // A history row written by plain SQL, as a front end writes one; returns its id.
  int64_t add_history(const std::string& chat, const std::string& role, const std::string& text) {
    return this->scalar("INSERT INTO history(chat_id, role, text) VALUES (" + sql_text(chat) +
                        ", " + sql_text(role) + ", " + sql_text(text) + ") RETURNING id");
  }
  std::unique_ptr<backend::Session> s = backend::open_session(this->config());
  queue::TaskQueue& q() { return s->queue(); }
  std::vector<events::StoredEvent> all_events() { return s->events().query({}); }
  OwnedQueue open_queue() {
    OwnedQueue o;
    o.session = backend::open_session(this->config());
    o.q = &o.session->queue();
    return o;
  }
};
using SqliteBackend = Backend<SqliteDb>;
using PgBackend = Backend<PgDb>;
using Backends = ::testing::Types<SqliteBackend, PgBackend>;
// The databases alone, for suites that open their own sessions.
using Dbs = ::testing::Types<SqliteDb, PgDb>;

}  // namespace autonous::testing
