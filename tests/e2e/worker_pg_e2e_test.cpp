// `autonous worker` on PostgreSQL only (ctest's label e2e_pg_only): notifications wake idle
// workers, and a worker whose connection or sessions end connects again and goes on.

#include <csignal>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/worker_e2e_fixture.h"

namespace autonous::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST_F(WorkerE2eTest, OnPostgresAnIdleWorkerWakesOnNotifyNotAfterThePollInterval) {
  if (!pg_) GTEST_SKIP() << "LISTEN/NOTIFY is PostgreSQL's; SQLite workers poll";
  StubServer stub(dir_.path().string());
  Process worker({autonous_bin(), "worker"}, env(stub, {{"POLL_INTERVAL_MS", "20000"}}),
                 dir_.path().string());
  // Idle: its first poll found nothing, the next is 20 s away.
  std::this_thread::sleep_for(milliseconds(1500));
  const auto enqueued = std::chrono::steady_clock::now();
  enqueue("n", "wake up");
  while (num("SELECT count(*) FROM tasks WHERE status = 'done'") == 0 &&
         std::chrono::steady_clock::now() - enqueued < seconds(10))
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - enqueued, seconds(5));
  worker.signal(SIGTERM);
  ASSERT_TRUE(worker.wait(seconds(10)));
}

// A session lost during a long call: the lease renewal renews through a new session (the pool
// connects afresh), the lease is kept (no other worker takes the task over) and the reply is
// stored once.
TEST_F(WorkerE2eTest, OnPostgresALeaseRenewalConnectsAgainAfterALostSession) {
  if (!pg_) GTEST_SKIP() << "a PostgreSQL server's sessions";
  StubServer stub(dir_.path().string(), 5000);
  Process worker({autonous_bin(), "worker"},
                 env(stub, {{"TASK_LEASE_SECONDS", "3"}}),  // renewed every second
                 dir_.path().string());
  enqueue("a", "a long call");
  // The call in flight (the stub logs a request as it arrives): a session ended while the turn
  // still read its context would fail the turn instead (seen once in CI).
  const auto calling_by = std::chrono::steady_clock::now() + seconds(10);
  while (stub.log_lines().empty() && std::chrono::steady_clock::now() < calling_by)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_EQ(stub.log_lines().size(), 1u);
  EXPECT_GE(end_worker_sessions(), 2);  // the slot's and the listener's
  wait_done(1, seconds(20));
  worker.signal(SIGTERM);
  const auto r = worker.wait(seconds(20));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0) << r->err;
  // (The slot's pooled connection ended while the call ran: the pool noticed before it lent it
  // to the next renewal and connected afresh; the renewals kept the lease, 3 s, over the 5 s
  // call.)
  EXPECT_EQ(r->err.find("reconnecting failed"), std::string::npos) << r->err;
  EXPECT_EQ(num("SELECT attempts FROM tasks"), 1);
  EXPECT_EQ(num("SELECT lease_expiries FROM tasks"), 0);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'turn.completed'"), 1);
  expect_exactly_once(1);
}

// Slots share the process's pool (DATABASE_POOL_SIZE): 16 slots run their calls at once on 2
// connections (and the listener's), never more, and every task is answered once.
TEST_F(WorkerE2eTest, OnPostgresManySlotsShareAFewPooledConnections) {
  if (!pg_) GTEST_SKIP() << "PostgreSQL's connection pool";
  StubServer stub(dir_.path().string(), 1000);
  for (int i = 0; i < 32; ++i) enqueue("p" + std::to_string(i), "pooled");
  const auto started = std::chrono::steady_clock::now();
  Process worker({autonous_bin(), "worker", "--drain"},
                 env(stub, {{"WORKER_CONCURRENCY", "16"}, {"DATABASE_POOL_SIZE", "2"}}),
                 dir_.path().string());
  const std::string sessions =
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
      "application_name = 'autonous' AND backend_type = 'client backend' AND "
      "pid <> pg_backend_pid()";  // (not this test's own)
  int64_t most = 0;
  std::optional<ProcessResult> r;
  while (!(r = worker.wait(milliseconds(50)))) {
    // (After the migration's own connection at start is closed.)
    if (num("SELECT count(*) FROM tasks WHERE status <> 'queued'") > 0)
      most = std::max(most, num(sessions));
  }
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_GT(most, 0);
  EXPECT_LE(most, 3);  // the pool's 2 and the listener's 1
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(12));  // 32 s one at a time
  EXPECT_EQ(num("SELECT max(attempts) FROM tasks"), 1);
  expect_exactly_once(32);
}

// A connection that breaks while the slot's completion waits inside its transaction (a lock
// the test holds on the task row): the slot connects again and stores the reply through the
// new session, once, without counting an attempt.
TEST_F(WorkerE2eTest, OnPostgresACompletionWhoseConnectionBreaksIsStoredThroughANewOne) {
  if (!pg_) GTEST_SKIP() << "a PostgreSQL server's sessions";
  StubServer stub(dir_.path().string(), 1500);
  Process worker({autonous_bin(), "worker"}, env(stub, {{"WORKER_CONCURRENCY", "1"}}),
                 dir_.path().string());
  const int64_t id = enqueue("a", "stored after a break");
  const auto calling_by = std::chrono::steady_clock::now() + seconds(10);
  while (stub.log_lines().empty() && std::chrono::steady_clock::now() < calling_by)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_EQ(stub.log_lines().size(), 1u);
  auto locker = pg_->open_connection();
  locker->exec("BEGIN");
  locker->query("SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE", {std::to_string(id)});
  const int64_t locker_pid = locker->query("SELECT pg_backend_pid()").int64(0, 0);
  const std::string others =
      "application_name = 'autonous' AND datname = current_database() "
      "AND pid NOT IN (pg_backend_pid(), " +
      std::to_string(locker_pid) + ")";
  const auto waiting_by = std::chrono::steady_clock::now() + seconds(10);
  while (num("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND " +
             others) == 0 &&
         std::chrono::steady_clock::now() < waiting_by)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_EQ(
      num("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND " + others),
      1);  // the completion, inside its transaction
  num("SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE " + others);
  locker->exec("ROLLBACK");
  wait_done(1, seconds(20));
  worker.signal(SIGTERM);
  const auto r = worker.wait(seconds(20));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_NE(r->err.find("connection was lost storing a task's outcome"), std::string::npos)
      << r->err;
  EXPECT_EQ(num("SELECT attempts FROM tasks"), 1);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'turn.completed'"), 1);
  EXPECT_EQ(stub.log_lines().size(), 1u);  // not called again
  expect_exactly_once(1);
}

// PostgreSQL folds identical notifications of a transaction into one: a multi-row insert for
// three chats must still wake three idle slots (one notification per task that became claimable).
TEST_F(WorkerE2eTest, OnPostgresAMultiRowInsertWakesASlotPerChat) {
  if (!pg_) GTEST_SKIP() << "LISTEN/NOTIFY is PostgreSQL's; SQLite workers poll";
  StubServer stub(dir_.path().string(), 2500);  // one slot alone: 7.5 s, three at once: 2.5 s
  Process worker({autonous_bin(), "worker"},
                 env(stub, {{"WORKER_CONCURRENCY", "3"}, {"POLL_INTERVAL_MS", "20000"}}),
                 dir_.path().string());
  // Idle for sure (a slow start would otherwise have its first claims find the rows): a task
  // run through it first, then every slot waits; the next poll is 20 s away.
  enqueue("w", "warm up");
  const auto warm_by = std::chrono::steady_clock::now() + seconds(30);
  while (num("SELECT count(*) FROM tasks WHERE status = 'done'") < 1 &&
         std::chrono::steady_clock::now() < warm_by)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 1);
  std::this_thread::sleep_for(milliseconds(500));
  const auto inserted = std::chrono::steady_clock::now();
  exec_sql("INSERT INTO tasks(chat_id, text) VALUES ('x', 'one'), ('y', 'two'), ('z', 'three')");
  while (num("SELECT count(*) FROM tasks WHERE status = 'done'") < 4 &&
         std::chrono::steady_clock::now() - inserted < seconds(20))
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 4);
  EXPECT_LT(std::chrono::steady_clock::now() - inserted, seconds(6));  // the calls overlapped
  worker.signal(SIGTERM);
  ASSERT_TRUE(worker.wait(seconds(10)));
  expect_exactly_once(4);
}

// A server restart or failover ends every session: the worker connects again (each slot and
// its listener) and goes on, instead of stopping. Twice, the second time during calls.
TEST_F(WorkerE2eTest, OnPostgresAWorkerWhoseSessionsEndConnectsAgainAndGoesOn) {
  if (!pg_) GTEST_SKIP() << "a PostgreSQL server's sessions";
  StubServer stub(dir_.path().string(), 800);
  Process worker({autonous_bin(), "worker"},
                 env(stub, {{"WORKER_CONCURRENCY", "3"}, {"POLL_INTERVAL_MS", "20000"}}),
                 dir_.path().string());
  const auto wait_done = [&](int64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(30);
    while (num("SELECT count(*) FROM tasks WHERE status = 'done'") < n &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(50));
  };
  for (int i = 0; i < 3; ++i) enqueue("a" + std::to_string(i), "before");
  wait_done(3);
  ASSERT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 3);
  EXPECT_GE(end_worker_sessions(), 4);              // three slots and the listener, idle
  std::this_thread::sleep_for(milliseconds(1500));  // past the listener's reconnect
  // Woken by NOTIFY after the listener is back (the poll interval is 20 s).
  for (int i = 0; i < 3; ++i) enqueue("b" + std::to_string(i), "after an idle loss");
  wait_done(6);
  ASSERT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 6);
  const size_t calls_before = stub.log_lines().size();
  for (int i = 0; i < 3; ++i) enqueue("c" + std::to_string(i), "lost during the call");
  // A call in flight (the stub logs a request as it arrives; bounded: a slow build may never
  // show all three at once), so at least one reply is stored through a new session.
  const auto calling_by = std::chrono::steady_clock::now() + seconds(10);
  while (stub.log_lines().size() == calls_before && std::chrono::steady_clock::now() < calling_by)
    std::this_thread::sleep_for(milliseconds(5));
  ASSERT_GT(stub.log_lines().size(), calls_before);
  EXPECT_GE(end_worker_sessions(), 1);
  // Each reply is stored by a new session; a turn whose completion failed is retried.
  wait_done(9);
  EXPECT_FALSE(worker.wait(milliseconds(10))) << "the worker must still run";
  worker.signal(SIGTERM);
  const auto r = worker.wait(seconds(20));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0) << r->err;
  // The replies of the calls in flight were stored through new sessions (the pool connected
  // afresh for them), not retried.
  EXPECT_EQ(num("SELECT max(attempts) FROM tasks"), 1);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'turn.completed'"), 9);
  expect_exactly_once(9);
}

}  // namespace
}  // namespace autonous::testing
