// The SQLite queue's own behaviour (backend/sqlite/queue.h): the contract itself is checked on
// both backends by tests/backend/queue_conformance_test.cpp.
#include "internal/backend/sqlite/queue.h"

#include <chrono>
#include <string>
#include <thread>

#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <gtest/gtest.h>

#include "tests/support/test_db.h"

namespace autonous::queue {
namespace {

using std::chrono::seconds;

const common::TimePoint kT0 = common::from_unix_ms(1'800'000'000'000);

TEST(SqliteQueueTest, AWriterHoldingTheLockDelaysButDoesNotFailAClaim) {
  testing::TestDb t_;
  Queue q_{t_.db()};
  q_.enqueue("a", "x");
  auto other = t_.open_connection();
  std::thread holder([&] {
    SQLite::Transaction tx(*other, SQLite::TransactionBehavior::IMMEDIATE);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    tx.commit();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto started = std::chrono::steady_clock::now();
  const auto t = q_.claim("w", kT0, seconds(30));
  const auto waited = std::chrono::steady_clock::now() - started;
  holder.join();
  ASSERT_TRUE(t);
  EXPECT_GE(waited, std::chrono::milliseconds(100));
}

TEST(SqliteQueueTest, APriorityBeyond32BitsIsClaimedAndReportedAsWritten) {
  // SQLite's integers are 64-bit: a front end may write one past INT32_MAX (PostgreSQL's column
  // is a 32-bit integer and refuses it). It used to read back as -1 in agent.started.
  testing::TestDb t_;
  Queue q_{t_.db()};
  const int64_t big = int64_t{1} << 40;
  t_.db().exec("INSERT INTO tasks(chat_id, text, priority) VALUES ('low', 'x', 5)");
  t_.db().exec("INSERT INTO tasks(chat_id, text, priority) VALUES ('high', 'y', " +
               std::to_string(big) + ")");
  const auto t = q_.claim("w", kT0, seconds(30));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->chat_id, "high");  // ordered as written, not as a truncated int
  EXPECT_EQ(t->priority, big);
  SQLite::Statement ev(t_.db(),
                       "SELECT json_extract(payload, '$.priority') FROM events "
                       "WHERE type = 'agent.started'");
  ASSERT_TRUE(ev.executeStep());
  EXPECT_EQ(ev.getColumn(0).getInt64(), big);
}

}  // namespace
}  // namespace autonous::queue
