// The process's connection pool (backend/postgres/pool.h) under pooled db::pg::Connections:
// connections opened as needed and reused, a transaction and a held setting on one server
// session, a connection the server ended while idle replaced unseen, one ended inside a
// transaction reported until reconnect(), a read-only session closed, a full pool waited for.
#include "internal/backend/postgres/pool.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

#include "internal/backend/postgres/connection.h"
#include "tests/support/pg_test_db.h"

namespace autonous::db::pg {
namespace {

using std::chrono::milliseconds;

int64_t pid(Connection& c) { return c.query("SELECT pg_backend_pid()").int64(0, 0); }

// As a DBA's pg_terminate_backend (or a restart) would: the session `backend` ends.
void end_session(testing::PgTestDb& t, int64_t backend) {
  t.db().query("SELECT pg_terminate_backend($1, 5000)", {param(backend)});
}

TEST(PgPoolTest, ConnectionsAreOpenedAsNeededReusedAndNeverMoreThanTheSize) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto pool = std::make_shared<Pool>(t.url(), 2);
  EXPECT_EQ(pool->open_now(), 0);
  auto a = Connection::pooled(pool);
  auto b = Connection::pooled(pool);
  EXPECT_EQ(pool->open_now(), 0);  // nothing until a statement
  const int64_t first = pid(*a);
  EXPECT_EQ(pid(*b), first);  // given back after each statement: the same one again
  EXPECT_EQ(pool->open_now(), 1);
  Transaction ta(*a);
  EXPECT_EQ(pid(*a), first);  // held by the transaction
  EXPECT_NE(pid(*b), first);  // so b needs another
  EXPECT_EQ(pool->open_now(), 2);
  ta.commit();
  EXPECT_EQ(pool->open_now(), 2);
}

TEST(PgPoolTest, ATransactionAndAHeldSettingSeeOneServerSession) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto pool = std::make_shared<Pool>(t.url(), 3);
  auto a = Connection::pooled(pool);
  auto b = Connection::pooled(pool);
  a->exec("CREATE TABLE pool_t(x int)");
  {
    Transaction tx(*a);
    a->exec("INSERT INTO pool_t VALUES (1)");
    EXPECT_EQ(b->query("SELECT count(*) FROM pool_t").int64(0, 0), 0);  // not committed
    EXPECT_TRUE(a->in_transaction());
    tx.commit();
  }
  EXPECT_FALSE(a->in_transaction());
  EXPECT_EQ(b->query("SELECT count(*) FROM pool_t").int64(0, 0), 1);
  {
    Transaction tx(*a);
    a->exec("INSERT INTO pool_t VALUES (2)");
  }  // rolled back, and the connection given back clean
  EXPECT_EQ(b->query("SELECT count(*) FROM pool_t").int64(0, 0), 1);
  // A session setting held until it is reset: the others never see it.
  a->hold(true);
  a->exec("SET statement_timeout = 1234");
  EXPECT_EQ(a->query("SHOW statement_timeout").text(0, 0), "1234ms");
  EXPECT_NE(b->query("SHOW statement_timeout").text(0, 0), "1234ms");
  a->exec("RESET statement_timeout");
  a->hold(false);
  EXPECT_EQ(pool->open_now(), 2);
}

TEST(PgPoolTest, AConnectionEndedWhileIdleIsReplacedBeforeItIsLent) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto pool = std::make_shared<Pool>(t.url(), 2);
  auto a = Connection::pooled(pool);
  const int64_t first = pid(*a);
  end_session(t, first);
  EXPECT_NE(pid(*a), first);  // no error: a new session
  EXPECT_FALSE(a->broken());
  EXPECT_EQ(pool->open_now(), 1);
}

TEST(PgPoolTest, AConnectionEndedInATransactionIsReportedUntilReconnect) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto pool = std::make_shared<Pool>(t.url(), 2);
  auto a = Connection::pooled(pool);
  a->exec("CREATE TABLE pool_t(x int)");
  {
    Transaction tx(*a);
    a->exec("INSERT INTO pool_t VALUES (1)");
    end_session(t, pid(*a));
    EXPECT_THROW(a->exec("INSERT INTO pool_t VALUES (2)"), PgError);
    EXPECT_TRUE(a->broken());
    // Nothing runs outside the lost transaction as if it were in it.
    EXPECT_THROW(a->exec("INSERT INTO pool_t VALUES (3)"), PgError);
    a->reconnect();
    EXPECT_FALSE(a->broken());
    EXPECT_THROW(tx.commit(), PgError);  // begun in the lost session
  }
  EXPECT_EQ(a->query("SELECT count(*) FROM pool_t").int64(0, 0), 0);
  EXPECT_EQ(pool->open_now(), 1);  // the broken one closed, its place reused
}

// One connection that broke says the server may be gone (a failover to another host leaves
// the old connections looking idle and sound): every connection opened before it is closed
// rather than lent again.
TEST(PgPoolTest, AConnectionThatBreaksRetiresEveryConnectionOpenedBeforeIt) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto pool = std::make_shared<Pool>(t.url(), 3);
  auto a = Connection::pooled(pool);
  auto b = Connection::pooled(pool);
  Transaction tx(*a);
  const int64_t in_a = pid(*a);
  const int64_t idle = pid(*b);  // another connection, given back idle and sound
  EXPECT_NE(in_a, idle);
  end_session(t, in_a);
  EXPECT_THROW(a->exec("SELECT 1"), PgError);
  EXPECT_TRUE(a->broken());
  EXPECT_NE(pid(*b), idle);  // the old idle one was closed, not lent
  EXPECT_EQ(pool->open_now(), 1);
  a->reconnect();
  EXPECT_FALSE(a->broken());
}

// One lent across the break is closed when it comes back, not kept.
TEST(PgPoolTest, AConnectionLentAcrossABreakIsClosedWhenItComesBack) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto pool = std::make_shared<Pool>(t.url(), 3);
  auto a = Connection::pooled(pool);
  auto b = Connection::pooled(pool);
  Transaction ta(*a);
  Transaction tb(*b);
  const int64_t in_a = pid(*a);
  const int64_t in_b = pid(*b);
  EXPECT_EQ(pool->open_now(), 2);
  end_session(t, in_a);
  EXPECT_THROW(a->exec("SELECT 1"), PgError);  // a breaks: the pool retires what it had
  EXPECT_EQ(pool->open_now(), 1);
  tb.commit();  // b's comes back after the break: closed
  EXPECT_EQ(pool->open_now(), 0);
  EXPECT_NE(pid(*b), in_b);
}

// A pool that stays busy is not a lost server: reconnect() fails transiently and the handle is
// not reported lost.
TEST(PgPoolTest, AReconnectThatFindsThePoolBusyLeavesTheHandleNotLost) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto pool = std::make_shared<Pool>(t.url(), 1, milliseconds(200));
  auto a = Connection::pooled(pool);
  auto b = Connection::pooled(pool);
  Transaction tb(*b);  // holds the only connection
  pid(*b);
  try {
    a->reconnect();
    FAIL() << "a connection was lent from a full pool";
  } catch (const PgError& e) {
    EXPECT_EQ(e.sqlstate(), "53300");
  }
  EXPECT_FALSE(a->broken());
  tb.commit();
  a->reconnect();
  EXPECT_EQ(a->query("SELECT 1").int64(0, 0), 1);
}

TEST(PgPoolTest, AReadOnlySessionIsClosedSoThatTheNextStatementConnectsAfresh) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto pool = std::make_shared<Pool>(t.url(), 2);
  auto a = Connection::pooled(pool);
  a->exec("CREATE TABLE pool_t(x int)");
  t.db().exec("ALTER DATABASE " + t.db().query("SELECT current_database()").text(0, 0) +
              " SET default_transaction_read_only = on");
  end_session(t, pid(*a));
  try {
    a->exec("INSERT INTO pool_t VALUES (1)");  // a new session, read-only as the server says
    FAIL() << "a read-only session wrote";
  } catch (const PgError& e) {
    EXPECT_EQ(e.sqlstate(), "25006");
  }
  EXPECT_FALSE(a->broken());       // not in a transaction: nothing lost
  EXPECT_EQ(pool->open_now(), 0);  // closed
  {
    // In a transaction: the session stays with it until it ends, then is closed.
    Transaction tx(*a);
    EXPECT_THROW(a->exec("INSERT INTO pool_t VALUES (1)"), PgError);
    EXPECT_THROW(a->exec("SELECT 1"), PgError);  // the same (aborted) transaction
    EXPECT_FALSE(a->broken());
    EXPECT_EQ(pool->open_now(), 1);
  }
  EXPECT_EQ(pool->open_now(), 0);
  t.db().exec("ALTER DATABASE " + t.db().query("SELECT current_database()").text(0, 0) +
              " RESET default_transaction_read_only");
  a->exec("INSERT INTO pool_t VALUES (1)");  // a session opened after the change
  EXPECT_EQ(a->query("SELECT count(*) FROM pool_t").int64(0, 0), 1);
}

// A read-only session says the server is (or was) a standby: the pool's other sessions, opened
// there too, are closed as well, not lent to refuse once each.
TEST(PgPoolTest, AReadOnlySessionRetiresThePoolsOtherSessions) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  const std::string name = t.db().query("SELECT current_database()").text(0, 0);
  t.db().exec("CREATE TABLE pool_t(x int)");
  t.db().exec("ALTER DATABASE " + name + " SET default_transaction_read_only = on");
  auto pool = std::make_shared<Pool>(t.url(), 3);
  auto a = Connection::pooled(pool);
  auto b = Connection::pooled(pool);
  {
    Transaction ta(*a);  // two sessions opened read-only, both idle after this block
    pid(*a);
    pid(*b);
  }
  EXPECT_EQ(pool->open_now(), 2);
  t.db().exec("ALTER DATABASE " + name + " RESET default_transaction_read_only");
  EXPECT_THROW(a->exec("INSERT INTO pool_t VALUES (1)"), PgError);  // 25006 on one of them
  b->exec("INSERT INTO pool_t VALUES (2)");                         // not the other: a new session
  EXPECT_EQ(pool->open_now(), 1);
}

// A server that refuses connections: the statement fails, the handle is lost (the slot's
// reconnect loop backs off), and reconnect() fails until the server accepts again.
TEST(PgPoolTest, AServerThatRefusesConnectionsLeavesTheHandleLostUntilReconnect) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  const std::string name = t.db().query("SELECT current_database()").text(0, 0);
  auto admin = Connection::open(std::getenv("AUTONOUS_TEST_PG_URL"));  // another database
  auto pool = std::make_shared<Pool>(t.url(), 2);
  auto a = Connection::pooled(pool);
  const int64_t first = pid(*a);
  admin->exec("ALTER DATABASE " + name + " WITH ALLOW_CONNECTIONS false");
  end_session(t, first);
  EXPECT_THROW(a->query("SELECT 1"), PgError);
  EXPECT_TRUE(a->broken());
  EXPECT_THROW(a->reconnect(), PgError);
  EXPECT_TRUE(a->broken());
  admin->exec("ALTER DATABASE " + name + " WITH ALLOW_CONNECTIONS true");
  a->reconnect();
  EXPECT_FALSE(a->broken());
  EXPECT_NE(pid(*a), first);
}

TEST(PgPoolTest, ABorrowerWaitsForAConnectionAndGivesUpTransientlyWhenNoneComes) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto pool = std::make_shared<Pool>(t.url(), 1, milliseconds(300));
  auto a = Connection::pooled(pool);
  auto b = Connection::pooled(pool);
  auto tx = std::make_unique<Transaction>(*a);
  try {
    b->query("SELECT 1");
    FAIL() << "a second connection was lent from a pool of one";
  } catch (const PgError& e) {
    EXPECT_EQ(e.sqlstate(), "53300");
    EXPECT_TRUE(e.transient());
    EXPECT_NE(std::string(e.what()).find("DATABASE_POOL_SIZE"), std::string::npos) << e.what();
  }
  // Given back while b waits: b goes on.
  std::atomic<bool> answered{false};
  std::thread waiter([&] { answered = b->query("SELECT 1").int64(0, 0) == 1; });
  std::this_thread::sleep_for(milliseconds(100));
  tx->commit();
  waiter.join();
  EXPECT_TRUE(answered);
  // A handle destroyed in a transaction closes its connection (never lent on mid-transaction)
  // and frees its place.
  a->exec("BEGIN");
  const int64_t in_transaction = pid(*a);
  a.reset();
  EXPECT_NE(pid(*b), in_transaction);
  EXPECT_EQ(pool->open_now(), 1);
}

}  // namespace
}  // namespace autonous::db::pg
