#include "internal/backend/sqlite/write_transaction.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include "tests/support/test_db.h"

namespace autonous::db {
namespace {

int64_t tasks(SQLite::Database& db) {
  return db.execAndGet("SELECT count(*) FROM tasks").getInt64();
}

TEST(WriteTransactionTest, CommitMakesWritesVisibleAndDestructionRollsBack) {
  testing::TestDb t;
  {
    WriteTransaction tx(t.db());
    t.db().exec("INSERT INTO tasks(chat_id, text) VALUES ('a', 'kept')");
    tx.commit();
  }
  {
    WriteTransaction tx(t.db());
    t.db().exec("INSERT INTO tasks(chat_id, text) VALUES ('a', 'dropped')");
  }  // no commit: rolled back
  EXPECT_EQ(tasks(t.db()), 1);
}

TEST(WriteTransactionTest, ThreadsOfOneProcessQueueOnTheGateInsteadOfFailingBusy) {
  // A busy timeout of 0: without the gate the second BEGIN IMMEDIATE would fail at once.
  testing::TestDb t;
  auto a = db::open(t.path(), db::OpenOptions{false, std::chrono::milliseconds(0)});
  auto b = db::open(t.path(), db::OpenOptions{false, std::chrono::milliseconds(0)});
  std::atomic<bool> inside{false};
  std::thread first([&] {
    WriteTransaction tx(*a);
    inside = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    a->exec("INSERT INTO tasks(chat_id, text) VALUES ('a', 'one')");
    tx.commit();
  });
  while (!inside) std::this_thread::yield();
  {
    WriteTransaction tx(*b);  // waits on the gate, then gets the lock
    b->exec("INSERT INTO tasks(chat_id, text) VALUES ('b', 'two')");
    tx.commit();
  }
  first.join();
  EXPECT_EQ(tasks(t.db()), 2);
}

}  // namespace
}  // namespace autonous::db
