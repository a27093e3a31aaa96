// The backend seam as the worker uses it (backend/session.h), the same assertions on both
// backends: a session's queue and engine storage share one connection, a lost PostgreSQL
// connection is reported and connected again, a SQLite file deleted or replaced is refused, and a
// listener wakes slots where the backend can notify.
#include "internal/backend/session.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

#include "internal/backend/postgres/stores.h"
#include "internal/common/clock.h"
#include "internal/config/config.h"
#include "internal/queue/task_queue.h"
#include "internal/store/engine_storage.h"
#include "tests/support/pg_test_db.h"
#include "tests/support/test_db.h"

namespace autonous::backend {
namespace {

using std::chrono::seconds;

struct SqliteBackend {
  static constexpr bool kPostgres = false;
  testing::TestDb db;  // migrated
  config::Config config() const {
    config::Config c;
    c.db_path = db.path();
    return c;
  }
};

struct PgBackend {
  static constexpr bool kPostgres = true;
  testing::PgTestDb db;  // migrated
  config::Config config() const {
    config::Config c;
    c.database_url = db.url();
    return c;
  }
};

template <typename B>
class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (B::kPostgres) PG_TEST_OR_SKIP();
    b_ = std::make_unique<B>();
  }
  std::unique_ptr<B> b_;
};

using Backends = ::testing::Types<SqliteBackend, PgBackend>;
TYPED_TEST_SUITE(SessionTest, Backends, testing::BackendNames);

TYPED_TEST(SessionTest, TheQueueAndTheEngineStorageShareTheSessionsDatabase) {
  const auto session = open_session(this->b_->config());
  EXPECT_FALSE(session->lost());
  const int64_t id = session->queue().enqueue("chat-1", "hello");
  const auto task = session->queue().claim("w1", common::SystemClock().now(), seconds(60));
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(task->id, id);
  EXPECT_EQ(task->text, "hello");
  const auto storage = session->engine_storage();
  ASSERT_NE(storage, nullptr);
  EXPECT_TRUE(session->queue().complete(*task, "hello", "hi there", {}));
  // The pair the completion stored is what the engine reads for the chat.
  const auto history = storage->provider().get_history("chat-1", 10, 0);
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[1].content, "hi there");
  session->check_still_there();  // nothing moved
}

TYPED_TEST(SessionTest, TheEngineStorageWritesInsideTheQueuesCompletionTransaction) {
  const auto session = open_session(this->b_->config());
  const auto storage = session->engine_storage();
  session->queue().enqueue("chat-4", "hello");
  const auto task = session->queue().claim("w1", common::SystemClock().now(), seconds(60));
  ASSERT_TRUE(task.has_value());
  // Inside the completion, the storage sees the pair the queue wrote and has not committed: one
  // connection, one transaction. A throw there rolls back the reply and the task's state too.
  size_t seen = 0;
  EXPECT_ANY_THROW(session->queue().complete(*task, "hello", "hi there", {}, [&] {
    seen = storage->provider().get_history("chat-4", 10, 0).size();
    throw std::runtime_error("the turn's other write failed");
  }));
  EXPECT_EQ(seen, 2u);
  EXPECT_TRUE(storage->provider().get_history("chat-4", 10, 0).empty());
  const auto other = open_session(this->b_->config());
  EXPECT_TRUE(other->queue().has_pending());  // still running, not done: its chat still waits
  EXPECT_TRUE(session->queue().complete(*task, "hello", "hi there", {}));
  EXPECT_EQ(other->engine_storage()->provider().get_history("chat-4", 10, 0).size(), 2u);
}

TYPED_TEST(SessionTest, ASecondSessionSeesTheFirstOnesWrites) {
  const auto a = open_session(this->b_->config());
  const auto b = open_session(this->b_->config());
  a->queue().enqueue("chat-2", "queued by a");
  EXPECT_TRUE(b->queue().has_pending());
}

TEST(SqliteSessionTest, IsNeverLostAndRefusesToReconnect) {
  testing::TestDb db;
  config::Config c;
  c.db_path = db.path();
  const auto session = open_session(c);
  EXPECT_FALSE(session->lost());
  EXPECT_THROW(session->reconnect(), std::logic_error);
}

TEST(SqliteSessionTest, AFileDeletedOrReplacedUnderTheSessionIsRefusedNamingIt) {
  testing::TestDb db;
  config::Config c;
  c.db_path = db.path();
  const auto session = open_session(c);
  session->check_still_there();  // remembers the file
  std::filesystem::rename(db.path(), db.path() + ".moved");
  // Checked at most once a second.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  try {
    session->check_still_there();
    FAIL() << "a deleted file was not noticed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(db.path() + " was deleted"), std::string::npos)
        << e.what();
  }
  // Another file in its place: replaced.
  std::filesystem::copy_file(db.path() + ".moved", db.path());
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  try {
    session->check_still_there();
    FAIL() << "a replaced file was not noticed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("was replaced"), std::string::npos) << e.what();
  }
}

TEST(SqliteSessionTest, HasNoListenerTheSlotsPoll) {
  testing::TestDb db;
  config::Config c;
  c.db_path = db.path();
  EXPECT_EQ(open_listener(
                c, [](int) {}, 4),
            nullptr);
}

TEST(PgSessionTest, ALostConnectionIsReportedAndConnectedAgain) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb db;
  config::Config c;
  c.database_url = db.url();
  const auto session = open_session(c);
  EXPECT_FALSE(session->lost());
  // A DBA (or a failover) ends every other session of the database.
  db.db().query(
      "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = "
      "current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()");
  EXPECT_ANY_THROW(session->queue().has_pending());
  EXPECT_TRUE(session->lost());
  EXPECT_EQ(session->reconnect(), 0);  // no claim was in flight
  EXPECT_FALSE(session->lost());
  session->queue().enqueue("chat-3", "after the reconnect");
  EXPECT_TRUE(session->queue().has_pending());
  session->check_still_there();  // a server's database cannot be unlinked
}

TEST(PgSessionTest, TheListenerWakesSlotsWhenATaskBecomesClaimable) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb db;
  config::Config c;
  c.database_url = db.url();
  std::atomic<int> woken{0};
  const auto listener = open_listener(
      c, [&woken](int n) { woken += n; }, 4);
  ASSERT_NE(listener, nullptr);
  db.db().query("INSERT INTO tasks(chat_id, text) VALUES ('a', 'x'), ('b', 'y')");
  const auto until = std::chrono::steady_clock::now() + seconds(10);
  while (woken.load() < 2 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // no more than that, either
  EXPECT_EQ(woken.load(), 2);  // one per chat whose head became claimable
}

}  // namespace
}  // namespace autonous::backend
