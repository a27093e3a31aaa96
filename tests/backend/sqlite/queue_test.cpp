// The SQLite queue's own behaviour (backend/sqlite/queue.h): the contract itself is checked on
// both backends by tests/backend/queue_conformance_test.cpp.
#include "internal/backend/sqlite/queue.h"

#include <chrono>
#include <thread>

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

}  // namespace
}  // namespace autonous::queue
