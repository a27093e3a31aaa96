// What SQLite itself can do for the queue on this machine, measured through the real Queue:
//  - BM_ClaimCompleteCycle/<synchronous>: one claim transaction + one completion transaction
//    (user/assistant pair, task done, 5 turn events), the raw ceiling the worker is compared to.
//    Arg 1 = synchronous FULL (the default), 0 = NORMAL.
//  - BM_ClaimWithBacklog: claim latency when one chat has 20 000 queued tasks and 1 000 other
//    chats wait (the bad case of a per-chat queue); reports p50/p99 in microseconds.
//  - BM_PgClaimWithBacklog: the same on PostgreSQL (under scripts/with-postgres).

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <benchmark/benchmark.h>
#include <unistd.h>

#include "internal/backend/postgres/connection.h"
#include "internal/backend/postgres/migrator.h"
#include "internal/backend/postgres/queue.h"
#include "internal/backend/sqlite/database.h"
#include "internal/backend/sqlite/migrator.h"
#include "internal/backend/sqlite/queue.h"
#include "internal/events/event_types.h"

namespace {

using namespace autonous;  // NOLINT(google-build-using-namespace): benchmark file

std::unique_ptr<SQLite::Database> fresh_db(const std::string& name, bool full) {
  const std::string path = "/tmp/autonous-queue-bench-" + name + ".db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  auto db = db::open(path, db::OpenOptions{full, std::chrono::milliseconds(5000)});
  db::migrate(*db);
  return db;
}

std::vector<events::Event> turn_events(const queue::Task& t) {
  std::vector<events::Event> out;
  for (auto type : {events::kTurnStarted, events::kContextCompressed, events::kLlmRequest,
                    events::kLlmResponse, events::kTurnCompleted})
    out.push_back({std::string(type), t.id, t.chat_id, t.agent_event_id,
                   R"({"attempt":1,"estimated_tokens":120,"budget_tokens":8000})"});
  return out;
}

void BM_ClaimCompleteCycle(benchmark::State& state) {
  const bool full = state.range(0) == 1;
  auto db = fresh_db(full ? "cycle-full" : "cycle-normal", full);
  queue::Queue q(*db);
  {
    // One transaction for the fill, so plain INSERTs (a front end's), not Queue::enqueue,
    // which opens its own write transaction.
    SQLite::Transaction tx(*db);
    SQLite::Statement ins(*db, "INSERT INTO tasks(chat_id, text) VALUES (?, 'hello')");
    for (int i = 0; i < 200000; ++i) {
      ins.bind(1, "chat" + std::to_string(i % 1000));
      ins.exec();
      ins.reset();
    }
    tx.commit();
  }
  const auto now = std::chrono::system_clock::now();
  for (auto _ : state) {
    auto t = q.claim("bench", now, std::chrono::seconds(300));
    if (!t) {
      state.SkipWithError("queue ran dry");
      break;
    }
    q.complete(*t, "hello", "a reply of ordinary length for a chat message", turn_events(*t));
  }
  state.counters["cycles_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ClaimCompleteCycle)
    ->Arg(1)
    ->Arg(0)
    ->MinTime(3.0)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_ClaimWithBacklog(benchmark::State& state) {
  auto db = fresh_db("backlog", false);
  queue::Queue q(*db);
  {
    SQLite::Transaction tx(*db);
    SQLite::Statement ins(*db, "INSERT INTO tasks(chat_id, text) VALUES (?, 'x')");
    for (int i = 0; i < 20000; ++i) {  // the backed-up chat first, so its tasks are oldest
      ins.bind(1, "busy");
      ins.exec();
      ins.reset();
    }
    for (int c = 0; c < 1000; ++c) {
      ins.bind(1, "chat" + std::to_string(c));
      ins.exec();
      ins.reset();
    }
    tx.commit();
  }
  db->exec("ANALYZE");
  const auto now = std::chrono::system_clock::now();
  std::vector<double> micros;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto t = q.claim("bench", now, std::chrono::seconds(300));
    const auto end = std::chrono::steady_clock::now();
    const double us = std::chrono::duration<double, std::micro>(end - start).count();
    state.SetIterationTime(us / 1e6);
    micros.push_back(us);
    // Give it back so every claim sees the same backlog (not timed).
    if (t) q.release(*t, {});
  }
  std::sort(micros.begin(), micros.end());
  state.counters["p50_us"] = micros[micros.size() / 2];
  state.counters["p99_us"] = micros[micros.size() * 99 / 100];
}
BENCHMARK(BM_ClaimWithBacklog)->UseManualTime()->Iterations(5000)->Unit(benchmark::kMicrosecond);

// The same on PostgreSQL (PgQueue), in a fresh database of the server AUTONOUS_TEST_PG_URL names
// (scripts/with-postgres): 20 000 queued tasks in one chat, 1 000 other chats waiting.
void BM_PgClaimWithBacklog(benchmark::State& state) {
  const char* url = std::getenv("AUTONOUS_TEST_PG_URL");
  if (url == nullptr) {
    state.SkipWithError("AUTONOUS_TEST_PG_URL not set: run under scripts/with-postgres");
    return;
  }
  const std::string server(url);
  const std::string name = "autonous_queue_bench_" + std::to_string(::getpid());
  auto admin = db::pg::Connection::open(server);
  admin->exec("CREATE DATABASE " + name);
  {
    auto c = db::pg::Connection::open(server.substr(0, server.rfind('/') + 1) + name);
    db::pg_migrate(*c);
    c->exec(
        "INSERT INTO tasks(chat_id, text) SELECT 'busy', 'x' FROM generate_series(1, 20000); "
        "INSERT INTO tasks(chat_id, text) SELECT 'chat' || i, 'x' FROM generate_series(1, 1000) "
        "AS g(i); ANALYZE");
    queue::PgQueue q(*c);
    const auto now = std::chrono::system_clock::now();
    std::vector<double> micros;
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      auto t = q.claim("bench", now, std::chrono::seconds(300));
      const auto end = std::chrono::steady_clock::now();
      const double us = std::chrono::duration<double, std::micro>(end - start).count();
      state.SetIterationTime(us / 1e6);
      micros.push_back(us);
      if (t) q.release(*t, {});  // every claim sees the same backlog (not timed)
    }
    std::sort(micros.begin(), micros.end());
    state.counters["p50_us"] = micros[micros.size() / 2];
    state.counters["p99_us"] = micros[micros.size() * 99 / 100];
  }
  admin->exec("DROP DATABASE " + name + " WITH (FORCE)");
}
BENCHMARK(BM_PgClaimWithBacklog)->UseManualTime()->Iterations(5000)->Unit(benchmark::kMicrosecond);

}  // namespace

// main(): bench/bench_main.cpp
