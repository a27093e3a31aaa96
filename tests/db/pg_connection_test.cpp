#include "internal/db/pg_connection.h"

#include <gtest/gtest.h>

#include "internal/db/migrator.h"
#include "internal/db/pg_migrator.h"
#include "internal/events/event_log.h"
#include "tests/support/pg_test_db.h"

namespace autonous::db::pg {
namespace {

TEST(PgConnectionTest, RedactUrlHidesPasswordsInUserInfoAndQuery) {
  EXPECT_EQ(redact_url("postgresql://u:s3cret@h:5432/db"), "postgresql://u:***@h:5432/db");
  EXPECT_EQ(redact_url("postgresql://u@h/db?password=s3cret"), "postgresql://u@h/db?password=***");
  EXPECT_EQ(redact_url("postgresql://h/db?user=u&password=s3cret&sslmode=require"),
            "postgresql://h/db?user=u&password=***&sslmode=require");
  EXPECT_EQ(redact_url("postgresql://h/db?sslpassword=x"), "postgresql://h/db?sslpassword=***");
  EXPECT_EQ(redact_url("postgresql://u@h/db"), "postgresql://u@h/db");
}

TEST(PgConnectionTest, AFailedConnectNamesTheServerButNotThePassword) {
  try {
    Connection::open("postgresql://u:s3cret@127.0.0.1:1/db", std::chrono::seconds(2));
    ADD_FAILURE();
  } catch (const PgError& e) {
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("127.0.0.1"), std::string::npos) << e.what();
  }
}

TEST(PgConnectionTest, NulBytesAndInvalidUtf8AreStoredRepairedNotRefused) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  const std::string nasty = std::string("a\0b", 3) + "\xff" + "c";
  t.db().query("INSERT INTO history(chat_id, role, text) VALUES ('c', 'user', $1)", {nasty});
  EXPECT_EQ(t.db().query("SELECT text FROM history").text(0, 0),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD"
            "c");
  // An event payload with a \u0000 escape (jsonb refuses it) is stored with U+FFFD.
  events::Event e;
  e.type = "x";
  e.payload = R"({"s":"a\u0000b","t":"\\u0000"})";
  const int64_t id = events::append(t.db(), e);
  EXPECT_EQ(t.db()
                .query("SELECT payload ->> 's' FROM events WHERE id = " + std::to_string(id))
                .text(0, 0),
            "a\xEF\xBF\xBD"
            "b");
  // An escaped backslash before "u0000" is text, kept as it is.
  EXPECT_EQ(t.db().query("SELECT payload ->> 't' FROM events").text(0, 0), "\\u0000");
}

TEST(PgConnectionTest, CommitOfATransactionAnErrorAbortedThrows) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  Transaction tx(t.db());
  t.db().query("INSERT INTO tasks(chat_id, text) VALUES ('c', 'x')");
  try {
    t.db().exec("SELECT no_such_column FROM tasks");
  } catch (const PgError& e) {
    EXPECT_EQ(e.sqlstate(), "42703");
  }
  EXPECT_THROW(tx.commit(), PgError);  // the server answered ROLLBACK, not COMMIT
  EXPECT_EQ(t.scalar("SELECT count(*) FROM tasks"), 0);
}

TEST(PgConnectionTest, WaitReturnsOnNotifyAndTimesOutWithout) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto listener = t.open_connection();
  listener->listen("autonous_tasks");
  EXPECT_FALSE(listener->wait(std::chrono::milliseconds(100)));
  t.db().query("INSERT INTO tasks(chat_id, text) VALUES ('c', 'x')");  // the trigger notifies
  EXPECT_TRUE(listener->wait(std::chrono::seconds(5)));
  EXPECT_FALSE(listener->wait(std::chrono::milliseconds(100)));  // consumed
}

// Identical notifications of a transaction fold into one: the payload (the task's id) keeps
// one per task that became claimable. Chat x's second task is behind its head: no notification.
TEST(PgConnectionTest, AMultiRowInsertNotifiesOncePerTaskThatBecameClaimable) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto listener = t.open_connection();
  listener->listen("autonous_tasks");
  t.db().query(
      "INSERT INTO tasks(chat_id, text) VALUES ('x', '1'), ('y', '2'), ('z', '3'), "
      "('x', '4')");
  int got = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got < 3 && std::chrono::steady_clock::now() < deadline)
    got += listener->wait(std::chrono::milliseconds(100));
  got += listener->wait(std::chrono::milliseconds(300));  // nothing more arrives
  EXPECT_EQ(got, 3);
}

TEST(PgConnectionTest, ATerminatedSessionIsBrokenAndReconnectRestoresItsStatementsAndListens) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto c = t.open_connection();
  c->listen("autonous_tasks");
  const std::string count = "SELECT count(*) FROM tasks WHERE chat_id = $1";
  EXPECT_EQ(c->query(count, {param("c")}).int64(0, 0), 0);  // prepared
  EXPECT_FALSE(c->broken());
  const int64_t pid = c->query("SELECT pg_backend_pid()").int64(0, 0);
  t.db().query("SELECT pg_terminate_backend($1::int)", {param(pid)});
  EXPECT_THROW(c->query(count, {param("c")}), PgError);
  EXPECT_TRUE(c->broken());
  c->reconnect();
  EXPECT_FALSE(c->broken());
  EXPECT_NE(c->query("SELECT pg_backend_pid()").int64(0, 0), pid);
  EXPECT_EQ(c->query(count, {param("c")}).int64(0, 0), 0);  // prepared again
  EXPECT_EQ(c->query("SHOW TimeZone").text(0, 0), "UTC");   // the session settings too
  t.db().query("INSERT INTO tasks(chat_id, text) VALUES ('c', 'x')");
  EXPECT_GT(c->wait(std::chrono::seconds(5)), 0);  // still LISTENing
}

TEST(PgConnectionTest, MigrateTwiceIsANoOpAndANewerSchemaIsRefused) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;  // migrated once
  const int version = pg_schema_version(t.db());
  EXPECT_EQ(version, embedded_pg_migrations().back().version);
  EXPECT_EQ(pg_migrate(t.db()), version);
  t.db().exec("INSERT INTO schema_migrations(version, name) VALUES (9999, 'future')");
  EXPECT_THROW(pg_migrate(t.db()), SchemaTooNewError);
}

}  // namespace
}  // namespace autonous::db::pg
