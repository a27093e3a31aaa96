#include "internal/backend/sqlite/migrator.h"

#include <atomic>
#include <thread>
#include <vector>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>

#include "internal/backend/sqlite/database.h"
#include "tests/support/temp_dir.h"

namespace autonous::db {
namespace {

class MigratorTest : public ::testing::Test {
 protected:
  std::unique_ptr<SQLite::Database> open_db() {
    return open(dir_.file("m.db"), OpenOptions{true, std::chrono::milliseconds(2000)});
  }
  testing::TempDir dir_;
};

TEST_F(MigratorTest, MigratesAnEmptyDatabaseToTheLatestVersion) {
  auto db = open_db();
  EXPECT_EQ(schema_version(*db), 0);
  const int v = migrate(*db);
  EXPECT_EQ(v, embedded_migrations().back().version);
  EXPECT_TRUE(db->tableExists("tasks"));
  EXPECT_TRUE(db->tableExists("history"));
  EXPECT_TRUE(db->tableExists("events"));
  EXPECT_TRUE(db->tableExists("chat_heads"));
}

TEST_F(MigratorTest, ReRunIsANoOp) {
  auto db = open_db();
  const int v = migrate(*db);
  EXPECT_EQ(migrate(*db), v);
  SQLite::Statement q(*db, "SELECT count(*) FROM schema_migrations");
  q.executeStep();
  EXPECT_EQ(q.getColumn(0).getInt(), static_cast<int>(embedded_migrations().size()));
}

TEST_F(MigratorTest, OpensWithWalAndForeignKeys) {
  auto db = open_db();
  EXPECT_EQ(db->execAndGet("PRAGMA journal_mode").getString(), "wal");
  EXPECT_EQ(db->execAndGet("PRAGMA foreign_keys").getInt(), 1);
  EXPECT_EQ(db->execAndGet("PRAGMA synchronous").getInt(), 2);  // FULL
  auto normal = open(dir_.file("m.db"), OpenOptions{false, std::chrono::milliseconds(100)});
  EXPECT_EQ(normal->execAndGet("PRAGMA synchronous").getInt(), 1);  // NORMAL
}

TEST_F(MigratorTest, RefusesADatabaseFromTheFuture) {
  auto db = open_db();
  migrate(*db);
  db->exec("INSERT INTO schema_migrations(version, name) VALUES (9999, '9999_future')");
  EXPECT_THROW(migrate(*db), SchemaTooNewError);
}

TEST_F(MigratorTest, AFailingMigrationIsRolledBackWhole) {
  auto db = open_db();
  const std::vector<Migration> broken = {
      {1, "0001_ok", "CREATE TABLE a(x)"},
      {2, "0002_broken", "CREATE TABLE b(x); INSERT INTO nowhere VALUES (1)"}};
  EXPECT_THROW(migrate(*db, broken), SQLite::Exception);
  EXPECT_EQ(schema_version(*db), 1);
  EXPECT_TRUE(db->tableExists("a"));
  EXPECT_FALSE(db->tableExists("b"));
}

TEST_F(MigratorTest, FrontEndBareInsertWorksAndDefaultsEveryOtherColumn) {
  auto db = open_db();
  migrate(*db);
  db->exec("INSERT INTO tasks(chat_id, text) VALUES ('42', 'hi')");
  SQLite::Statement q(*db,
                      "SELECT status, priority, attempts, reply IS NULL, created_at, run_after "
                      "FROM tasks");
  ASSERT_TRUE(q.executeStep());
  EXPECT_EQ(q.getColumn(0).getString(), "queued");
  EXPECT_EQ(q.getColumn(1).getInt(), 0);
  EXPECT_EQ(q.getColumn(2).getInt(), 0);
  EXPECT_EQ(q.getColumn(3).getInt(), 1);
  EXPECT_EQ(q.getColumn(4).getString().size(), 24u);  // 2026-01-01T00:00:00.000Z
  EXPECT_EQ(q.getColumn(5).getInt64(), 0);
  // The trigger made it the chat's head.
  EXPECT_EQ(db->execAndGet("SELECT task_id FROM chat_heads WHERE chat_id = '42'").getInt(), 1);
}

TEST_F(MigratorTest, ConstraintsRefuseBadRows) {
  auto db = open_db();
  migrate(*db);
  EXPECT_THROW(db->exec("INSERT INTO tasks(chat_id, text) VALUES ('c', '')"), SQLite::Exception);
  EXPECT_THROW(db->exec("INSERT INTO tasks(chat_id, text) VALUES ('', 'x')"), SQLite::Exception);
  EXPECT_THROW(db->exec("INSERT INTO tasks(chat_id, text, status) VALUES ('c', 'x', 'weird')"),
               SQLite::Exception);
  EXPECT_THROW(db->exec("INSERT INTO tasks(chat_id, text, status) VALUES ('c', 'x', 'done')"),
               SQLite::Exception);  // done needs a reply
  EXPECT_THROW(db->exec("INSERT INTO history(chat_id, role, text) VALUES ('c', 'robot', 'x')"),
               SQLite::Exception);
  EXPECT_THROW(db->exec("INSERT INTO events(type, payload) VALUES ('t', 'not json')"),
               SQLite::Exception);
}

TEST_F(MigratorTest, TheTaskTableRebuildKeepsEveryRowAndItsHistoryLinks) {
  // A database at version 4 with data, then 0005 (tasks rebuilt with foreign keys off).
  auto db = open_db();
  const std::vector<Migration> up_to_4(embedded_migrations().begin(),
                                       embedded_migrations().begin() + 4);
  ASSERT_EQ(migrate(*db, up_to_4), 4);
  db->exec("INSERT INTO tasks(chat_id, text) VALUES ('a', 'x'), ('a', 'y'), ('b', 'z')");
  db->exec("INSERT INTO history(chat_id, role, text, task_id) VALUES ('a', 'user', 'x', 1)");
  db->exec("DELETE FROM tasks WHERE id = 3");
  ASSERT_EQ(migrate(*db), embedded_migrations().back().version);
  EXPECT_EQ(db->execAndGet("SELECT count(*) FROM tasks").getInt(), 2);
  EXPECT_EQ(db->execAndGet("SELECT task_id FROM history").getInt(), 1);
  EXPECT_EQ(db->execAndGet("SELECT task_id FROM chat_heads WHERE chat_id = 'a'").getInt(), 1);
  EXPECT_EQ(db->execAndGet("PRAGMA foreign_keys").getInt(), 1);  // back on
  db->exec("INSERT INTO tasks(chat_id, text) VALUES ('c', 'w')");
  EXPECT_EQ(db->getLastInsertRowid(), 3);  // after the highest id present, then never reused
  // The history link still cascades as declared.
  db->exec("DELETE FROM tasks WHERE id = 1");
  EXPECT_TRUE(db->execAndGet("SELECT task_id FROM history").isNull());
}

TEST_F(MigratorTest, TheRebuildAcceptsLinksLeftByShellDeletesAndNeverReusesTheirIds) {
  auto db = open_db();
  const std::vector<Migration> up_to_4(embedded_migrations().begin(),
                                       embedded_migrations().begin() + 4);
  ASSERT_EQ(migrate(*db, up_to_4), 4);
  db->exec("INSERT INTO tasks(chat_id, text) VALUES ('a', 'x'), ('a', 'y'), ('a', 'z')");
  db->exec("INSERT INTO history(chat_id, role, text, task_id) VALUES ('a', 'user', 'z', 2)");
  // Only an event still names task 3; and an event whose parent was deleted from the shell.
  db->exec("INSERT INTO events(type, task_id) VALUES ('agent.started', 3)");
  db->exec("INSERT INTO events(type, task_id, parent_id) VALUES ('turn.started', 3, 1)");
  // The sqlite3 shell has foreign keys off: the history row keeps pointing at task 3.
  db->exec("PRAGMA foreign_keys = OFF");
  db->exec("DELETE FROM tasks WHERE id >= 2");
  db->exec("DELETE FROM events WHERE type = 'agent.started'");  // its child keeps parent_id 1
  db->exec("PRAGMA foreign_keys = ON");
  ASSERT_EQ(migrate(*db), embedded_migrations().back().version);  // before: refused
  EXPECT_TRUE(db->execAndGet("SELECT task_id FROM history").isNull());
  db->exec("INSERT INTO tasks(chat_id, text) VALUES ('a', 'w')");
  EXPECT_EQ(db->getLastInsertRowid(), 4);  // not 2 or 3: an event still names task 3
}

TEST_F(MigratorTest, ManyConnectionsOpeningOneFreshFileTogetherAllSucceed) {
  // Switching a new file to WAL answers SQLITE_BUSY without the busy handler: about 1-2 % of
  // such opens failed with "database is locked" before open() retried that step.
  for (int round = 0; round < 20; ++round) {
    const std::string path = dir_.file("fresh" + std::to_string(round) + ".db");
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
      threads.emplace_back([&] {
        try {
          auto db = open(path, OpenOptions{true, std::chrono::milliseconds(5000)});
          (void)migrate(*db);
        } catch (const std::exception&) {
          ++failures;
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(failures.load(), 0) << "round " << round;
  }
}

TEST_F(MigratorTest, ConcurrentMigrationsFromTwoConnectionsAgree) {
  auto a = open_db();
  auto b = open_db();
  EXPECT_EQ(migrate(*a), migrate(*b));
  EXPECT_EQ(b->execAndGet("SELECT count(*) FROM schema_migrations").getInt(),
            static_cast<int>(embedded_migrations().size()));
}

}  // namespace
}  // namespace autonous::db
