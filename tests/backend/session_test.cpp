// The backend seam (backend/session.h), the same assertions on both backends: a session's queue
// and engine storage share one connection; write() commits or rolls back; the chat
// administration, learned limits, the event log and its feed, migration and the search
// catch-up (what the commands use; a read-only SQLite file is covered end to end in
// hardening_e2e_test.cpp); a lost PostgreSQL connection is reported and connected again, a
// SQLite file deleted or replaced is refused, and a listener wakes slots where the backend can
// notify.
#include "internal/backend/session.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/common/clock.h"
#include "internal/config/config.h"
#include "internal/engine/context_state_store.h"
#include "internal/engine/engine_storage.h"
#include "internal/events/event_log.h"
#include "internal/queue/task_queue.h"
#include "tests/backend/backend_fixture.h"
#include "tests/support/temp_dir.h"

namespace autonous::backend {
namespace {

using std::chrono::seconds;

template <typename B>
class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (B::kPostgres) PG_TEST_OR_SKIP();
    b_ = std::make_unique<B>();
  }
  std::unique_ptr<B> b_;
};

// Each test opens its own sessions on the database.
TYPED_TEST_SUITE(SessionTest, testing::Dbs, testing::BackendNames);

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

TYPED_TEST(SessionTest, TheEngineStorageWritesInsideTheWorkersCompletionTransaction) {
  const auto session = open_session(this->b_->config());
  const auto storage = session->engine_storage();
  session->queue().enqueue("chat-4", "hello");
  const auto task = session->queue().claim("w1", common::SystemClock().now(), seconds(60));
  ASSERT_TRUE(task.has_value());
  // Inside the session's transaction (the worker's completion), the storage sees the pair the
  // queue wrote and has not committed: one connection, one transaction. A throw there rolls back
  // the reply and the task's state too; so does a refused completion (a lost lease).
  size_t seen = 0;
  EXPECT_ANY_THROW(session->write_if([&]() -> bool {
    EXPECT_TRUE(session->queue().complete_within(*task, "hello", {}, "hi there", {}, {}));
    seen = storage->provider().get_history("chat-4", 10, 0).size();
    throw std::runtime_error("the turn's other write failed");
  }));
  EXPECT_EQ(seen, 2u);
  EXPECT_TRUE(storage->provider().get_history("chat-4", 10, 0).empty());
  queue::Task stale = *task;
  stale.lease_token = "not-the-lease";
  EXPECT_FALSE(session->write_if(
      [&] { return session->queue().complete_within(stale, "hello", {}, "hi there", {}, {}); }));
  const auto other = open_session(this->b_->config());
  EXPECT_TRUE(other->queue().has_pending());  // still running, not done: its chat still waits
  // The next task of the chat is claimed in the same transaction as the completion.
  const int64_t second = session->queue().enqueue("chat-4", "and then?");
  std::optional<queue::Task> next;
  EXPECT_TRUE(session->write_if([&] {
    if (!session->queue().complete_within(*task, "hello", {}, "hi there", {}, {})) return false;
    next = session->queue().claim_within("w1", common::SystemClock().now(), seconds(60));
    return true;
  }));
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->id, second);
  EXPECT_EQ(other->engine_storage()->provider().get_history("chat-4", 10, 0).size(), 2u);
}

TYPED_TEST(SessionTest, ASecondSessionSeesTheFirstOnesWrites) {
  const auto a = open_session(this->b_->config());
  const auto b = open_session(this->b_->config());
  a->queue().enqueue("chat-2", "queued by a");
  EXPECT_TRUE(b->queue().has_pending());
}

// --- what the commands use: the same assertions on both backends ---

events::Event chat_event(const std::string& type, const std::string& chat) {
  events::Event e;
  e.type = type;
  e.chat_id = chat;
  e.payload = R"({"n":1})";
  return e;
}

TYPED_TEST(SessionTest, WriteCommitsWhenTheBodyReturnsAndRollsBackWhenItThrows) {
  const auto session = open_session(this->b_->config());
  session->write([&] {
    session->chats().add_pin("chat-1", "kept");
    session->events().append(chat_event("chat.settings", "chat-1"));
  });
  EXPECT_THROW(session->write([&] {
    session->chats().add_pin("chat-1", "dropped");
    session->events().append(chat_event("chat.settings", "chat-1"));
    throw std::runtime_error("the command refused");
  }),
               std::runtime_error);
  const auto pins = session->chats().pins("chat-1");
  ASSERT_EQ(pins.size(), 1u);
  EXPECT_EQ(pins[0].text, "kept");
  EXPECT_EQ(session->events().query({}).size(), 1u);
  // A second connection sees only what was committed.
  EXPECT_EQ(open_session(this->b_->config())->chats().pins("chat-1").size(), 1u);
}

TYPED_TEST(SessionTest, ChatAdministrationStoresSettingsPinsAndTheClearPoint) {
  const auto session = open_session(this->b_->config());
  EXPECT_EQ(nlohmann::json::parse(session->chats().chat_state("chat-1").settings_json),
            nlohmann::json::object());
  session->write([&] { session->chats().save_overrides("chat-1", R"({"keep_recent":4})"); });
  EXPECT_EQ(nlohmann::json::parse(session->chats().chat_state("chat-1").settings_json),
            nlohmann::json::parse(R"({"keep_recent":4})"));
  EXPECT_FALSE(session->chats().reset_overrides("chat-2"));
  EXPECT_TRUE(session->chats().reset_overrides("chat-1"));
  EXPECT_EQ(nlohmann::json::parse(session->chats().chat_state("chat-1").settings_json),
            nlohmann::json::object());

  const int64_t first = session->chats().add_pin("chat-1", "order 1234");
  const int64_t second = session->chats().add_pin("chat-1", "ships to Lyon");
  EXPECT_FALSE(session->chats().remove_pin("chat-2", first));  // another chat's pin
  EXPECT_TRUE(session->chats().remove_pin("chat-1", first));
  EXPECT_FALSE(session->chats().remove_pin("chat-1", first));
  const auto pins = session->chats().pins("chat-1");
  ASSERT_EQ(pins.size(), 1u);
  EXPECT_EQ(pins[0].id, second);

  // The clear point is the chat's newest history row.
  int64_t none = -1;
  session->write([&] { none = session->chats().clear_context("chat-1"); });
  EXPECT_EQ(none, 0);  // no history yet
  const int64_t id = session->queue().enqueue("chat-1", "hello");
  const auto task = session->queue().claim("w1", common::SystemClock().now(), seconds(60));
  ASSERT_TRUE(task.has_value());
  ASSERT_EQ(task->id, id);
  ASSERT_TRUE(session->queue().complete(*task, "hello", "hi", {}));
  int64_t through = 0;
  session->write([&] { through = session->chats().clear_context("chat-1"); });
  EXPECT_GT(through, 0);
  EXPECT_EQ(session->chats().chat_state("chat-1").cleared_through, through);
}

TYPED_TEST(SessionTest, LearnedLimitsAreListedAndForgotten) {
  const auto session = open_session(this->b_->config());
  EXPECT_TRUE(session->chats().learned_limits().empty());
  engine::LearnedLimit limit;
  limit.budget_tokens = 3000;
  limit.stated_limit = 4096;
  limit.message = "context length exceeded";
  EXPECT_EQ(session->engine_storage()->learn_limit("http://llm", "m", limit), 3000);
  const auto rows = session->chats().learned_limits();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].endpoint, "http://llm");
  EXPECT_EQ(rows[0].limit.stated_limit, 4096);
  int64_t forgot = 0;
  session->write([&] { forgot = session->chats().forget_limits(); });  // as the command runs it
  EXPECT_EQ(forgot, 1);
  EXPECT_TRUE(session->chats().learned_limits().empty());
}

TYPED_TEST(SessionTest, TheEventLogQueriesFiltersAndFeedsInIdOrder) {
  const auto session = open_session(this->b_->config());
  EXPECT_THROW(session->events().append([] {
    events::Event e;
    e.type = "bad";
    e.payload = "[1]";  // not an object
    return e;
  }()),
               std::invalid_argument);
  std::vector<int64_t> ids;
  for (int i = 0; i < 5; ++i)
    ids.push_back(session->events().append(
        chat_event(i % 2 == 0 ? "chat.settings" : "chat.cleared", "chat-1")));
  events::EventFilter only;
  only.type = "chat.cleared";
  const auto cleared = session->events().query(only);
  ASSERT_EQ(cleared.size(), 2u);
  EXPECT_EQ(cleared[0].id, ids[1]);
  EXPECT_EQ(cleared[1].id, ids[3]);
  // A feed starts after the filter's after_id, following or not, on both backends.
  events::EventFilter after = only;
  after.after_id = ids[1];
  events::EventFilter tail;  // no type or task: every event after ids[3]
  tail.after_id = ids[3];
  for (const bool follow : {false, true}) {
    for (const auto& [filter, want] : {std::pair{after, ids[3]}, std::pair{tail, ids[4]}}) {
      const auto feed = session->events().feed(filter, follow);
      std::vector<int64_t> seen;
      for (int round = 0; round < 20 && seen.empty(); ++round) {
        bool more = false;
        for (const auto& e : feed->next(more)) seen.push_back(e.id);
      }
      EXPECT_EQ(seen, std::vector<int64_t>{want}) << "follow=" << follow;
    }
  }

  for (const bool follow : {false, true}) {
    const auto feed = session->events().feed(only, follow);
    std::vector<int64_t> seen;
    for (int round = 0; round < 20 && seen.size() < 2; ++round) {
      bool more = false;
      for (const auto& e : feed->next(more)) seen.push_back(e.id);
    }
    EXPECT_EQ(seen, (std::vector<int64_t>{ids[1], ids[3]})) << "follow=" << follow;
    if (follow) {  // a newer matching event comes next; a newer other one does not
      session->events().append(chat_event("chat.settings", "chat-1"));
      const int64_t later = session->events().append(chat_event("chat.cleared", "chat-1"));
      std::vector<int64_t> next;
      for (int round = 0; round < 50 && next.empty(); ++round) {
        bool more = false;
        for (const auto& e : feed->next(more)) next.push_back(e.id);
        if (next.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      EXPECT_EQ(next, std::vector<int64_t>{later});
    }
  }
}

TYPED_TEST(SessionTest, OpeningMigratesAndTellsTheSchemaVersion) {
  const auto session = open_session(this->b_->config(), OpenOptions{true, false});
  EXPECT_GT(session->schema_version(), 0);
  EXPECT_EQ(open_session(this->b_->config())->schema_version(), session->schema_version());
  // Rows the engine has not indexed yet are indexed by the catch-up, once: a completion's
  // (on PostgreSQL a completion indexes its own rows: migrations/postgres/0024) and a front
  // end's.
  const int64_t id = session->queue().enqueue("chat-1", "the parcel to Lyon");
  const auto task = session->queue().claim("w1", common::SystemClock().now(), seconds(60));
  ASSERT_TRUE(task.has_value());
  ASSERT_EQ(task->id, id);
  ASSERT_TRUE(session->queue().complete(*task, "the parcel to Lyon", "on its way", {}));
  this->b_->exec("INSERT INTO history(chat_id, role, text) VALUES ('chat-1', 'user', 'a note')");
  EXPECT_EQ(session->index_search(), TypeParam::kPostgres ? 1 : 3);
  EXPECT_EQ(session->index_search(), 0);
  EXPECT_EQ(this->b_->scalar("SELECT count(*) FROM history_terms"), 3);
}

TEST(SqliteSessionTest, AFreshFileIsCreatedAndMigratedWhenAsked) {
  testing::TempDir dir;
  config::Config c;
  c.db_path = (dir.path() / "fresh.db").string();
  const auto session = open_session(c, OpenOptions{true, false});
  EXPECT_GT(session->schema_version(), 0);
  EXPECT_EQ(session->queue().enqueue("chat-1", "hello"), 1);
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
  const std::string terminate_others =
      "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = "
      "current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()";
  // A DBA (or a failover) ends every other session of the database while the session's pooled
  // connection sits idle: the pool notices before it lends it, and opens another.
  EXPECT_FALSE(session->queue().has_pending());
  db.db().query(terminate_others);
  EXPECT_FALSE(session->queue().has_pending());
  EXPECT_FALSE(session->lost());
  // Ended inside a transaction: the transaction is gone, which the session reports.
  EXPECT_ANY_THROW(session->write([&] {
    session->queue().enqueue("chat-2", "lost with its transaction");
    db.db().query(terminate_others);
    session->queue().has_pending();
  }));
  EXPECT_TRUE(session->lost());
  EXPECT_ANY_THROW(session->queue().has_pending());  // nothing runs until it connects again
  EXPECT_EQ(session->reconnect(), 0);                // no claim was in flight
  EXPECT_FALSE(session->lost());
  session->queue().enqueue("chat-3", "after the reconnect");
  EXPECT_TRUE(session->queue().has_pending());
  session->check_still_there();  // a server's database cannot be unlinked
}

TEST(PgSessionTest, AClaimCommittedInTheWorkersTransactionIsNotGivenBackOnReconnect) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb db;
  config::Config c;
  c.database_url = db.url();
  const auto session = open_session(c);
  const int64_t id = session->queue().enqueue("chat-5", "hello");
  std::optional<queue::Task> task;
  ASSERT_TRUE(session->write_if([&] {
    task = session->queue().claim_within("w1", common::SystemClock().now(), seconds(60));
    return task.has_value();
  }));
  ASSERT_EQ(task->id, id);
  db.db().query(
      "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = "
      "current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()");
  // The pooled connection ended while idle: the next statement runs on a new one.
  EXPECT_TRUE(session->queue().has_pending());
  EXPECT_FALSE(session->lost());
  // The commit was seen: the claim is this worker's, not one whose outcome was lost.
  EXPECT_EQ(session->reconnect(), 0);
  EXPECT_EQ(
      db.db().query("SELECT status FROM tasks WHERE id = $1", {std::to_string(id)}).text(0, 0),
      "running");
}

// The pooled connection breaks inside the worker's transaction, after its claim: nothing of it
// committed, the session is lost until reconnect(), which finds nothing to give back, and the
// task is claimable again (its head not left running).
TEST(PgSessionTest, AConnectionLostInsideTheWorkersTransactionLeavesItsClaimUndone) {
  PG_TEST_OR_SKIP();
  testing::PgTestDb db;
  config::Config c;
  c.database_url = db.url();
  const auto session = open_session(c);
  const int64_t id = session->queue().enqueue("chat-6", "hello");
  EXPECT_ANY_THROW(session->write_if([&] {
    EXPECT_TRUE(session->queue().claim_within("w1", common::SystemClock().now(), seconds(60)));
    db.db().query(
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE datname = "
        "current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()");
    return session->queue().has_pending();  // on the ended connection: throws
  }));
  EXPECT_TRUE(session->lost());
  EXPECT_EQ(session->reconnect(), 0);  // the claim never committed: nothing to give back
  EXPECT_FALSE(session->lost());
  EXPECT_EQ(
      db.db().query("SELECT status FROM tasks WHERE id = $1", {std::to_string(id)}).text(0, 0),
      "queued");
  EXPECT_EQ(db.db().query("SELECT count(*) FROM chat_heads WHERE running").int64(0, 0), 0);
  const auto again = session->queue().claim("w1", common::SystemClock().now(), seconds(60));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, id);
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
