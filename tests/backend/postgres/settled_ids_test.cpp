#include "internal/backend/postgres/settled_ids.h"

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "internal/backend/postgres/connection.h"
#include "tests/support/pg_test_db.h"

namespace autonous::events {
namespace {

constexpr const char* kInsert = "INSERT INTO events(type, payload) VALUES ('x', '{}')";

// A poll settles the checkpoint the previous poll took, once its transactions have ended.
int64_t settle(SettledIds& ids) {
  ids.poll();
  return ids.poll();
}

// Polls until `want` is settled (10 s at most): the snapshot's xmin is the server's, so a
// transaction of a test running beside this one, in another database, may hold it back a while.
int64_t settled_within(SettledIds& ids, int64_t want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ids.poll() < want && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return ids.settled();
}

TEST(SettledIdsTest, AnEmptyTableSettlesNothing) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  SettledIds ids(t.db());
  EXPECT_EQ(settle(ids), 0);
  EXPECT_EQ(ids.pending(), 0);
}

TEST(SettledIdsTest, AnOpenInsertHoldsItsIdBackUntilItCommits) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  t.db().exec(kInsert);  // id 1
  auto open = t.open_connection();
  open->exec("BEGIN");
  open->exec(kInsert);   // id 2, not committed
  t.db().exec(kInsert);  // id 3
  SettledIds ids(t.db());
  EXPECT_EQ(settle(ids), 0);  // 2 may still appear
  EXPECT_EQ(ids.pending(), 3);
  EXPECT_EQ(ids.poll(), 0);
  open->exec("COMMIT");
  EXPECT_EQ(settled_within(ids, 3), 3);
}

// A transaction that began writing after another one completed, holding the lower event id:
// it is not in the snapshot's list of running transactions (its id is at or above the xmax),
// so a checkpoint on the snapshot's xmax settled id 2 at once and lost id 1. Found in review.
TEST(SettledIdsTest, AnOpenInsertWithANewerTransactionIdThanTheLastCommitIsWaitedFor) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto first = t.open_connection();
  auto second = t.open_connection();
  first->exec("BEGIN");
  first->exec("SELECT pg_current_xact_id()");
  second->exec("BEGIN");
  second->exec("SELECT pg_current_xact_id()");  // a newer transaction id than first's
  second->exec(kInsert);                        // id 1
  first->exec(kInsert);                         // id 2
  first->exec("COMMIT");
  SettledIds ids(t.db());
  EXPECT_EQ(settle(ids), 0);
  EXPECT_EQ(ids.poll(), 0);
  second->exec("COMMIT");
  EXPECT_EQ(settled_within(ids, 2), 2);
}

TEST(SettledIdsTest, ARolledBackInsertsGapSettlesOnceItEnds) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto open = t.open_connection();
  open->exec("BEGIN");
  open->exec(kInsert);   // id 1
  t.db().exec(kInsert);  // id 2
  SettledIds ids(t.db());
  EXPECT_EQ(settle(ids), 0);
  open->exec("ROLLBACK");
  EXPECT_EQ(settled_within(ids, 2), 2);  // the gap at 1 is for good
}

TEST(SettledIdsTest, GivingUpSettlesThePendingCheckpointDespiteAnOpenTransaction) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb t;
  auto open = t.open_connection();
  open->exec("BEGIN");
  open->exec("SELECT txid_current()");  // an unrelated transaction left open
  t.db().exec(kInsert);
  SettledIds ids(t.db());
  EXPECT_EQ(settle(ids), 0);
  ids.give_up();
  EXPECT_EQ(ids.settled(), 1);
  open->exec("ROLLBACK");
}

}  // namespace
}  // namespace autonous::events
