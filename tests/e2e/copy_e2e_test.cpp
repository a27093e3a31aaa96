// `autonous copy` end to end: a SQLite deployment moved to PostgreSQL, where its chats go on;
// fifty thousand chats with queued tasks within the server's lock table. Runs as a SQLite
// deployment's test (label e2e) against the throwaway PostgreSQL server.

#include <map>
#include <set>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/recall_e2e_fixture.h"

namespace autonous::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

TEST_F(RecallE2eTest, CopyMovesASqliteDeploymentToPostgresWhereItsChatsGoOn) {
  if (pg_) GTEST_SKIP() << "copy starts from a SQLite file";
  PG_TEST_OR_SKIP();
  StubServer stub(dir_.path().string());
  const int64_t fact = import_chat("c");
  enqueue("c", "hello there");
  // A cancelled task and its webhook delivery still to make (#32) move too.
  exec_sql("UPDATE reply_delivery SET webhook_until = 9999999999999");
  const int64_t withdrawn = enqueue("w", "never mind");
  ASSERT_EQ(autonous(dir_, {"cancel", "--task", std::to_string(withdrawn)}, db_env()).exit_code, 0);
  enqueue("e", "a second chat");
  drain(defaults(stub));
  exec_sql("INSERT INTO custom_blocks(chat_id, name, text) VALUES (NULL, 'Hours', 'Open 9-17.')");
  exec_sql("INSERT INTO chat_settings(chat_id, settings) VALUES ('e', '{\"recent_messages\": 7}')");
  // A task deleted from the sqlite3 shell (foreign keys off there) leaves its history pointing
  // at nothing: copied as NULL, which PostgreSQL's foreign key accepts.
  exec_sql("DELETE FROM tasks WHERE chat_id = 'e'");
  ASSERT_EQ(num("SELECT count(*) FROM history WHERE chat_id = 'e' AND task_id IS NOT NULL"), 2);
  PgTestDb target;
  const auto r = autonous(dir_, {"copy", "--from", db_, "--to", target.url()}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("verified"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(target.url()), std::string::npos);  // the password is not printed
  for (const std::string table :
       {"tasks", "history", "events", "history_terms", "search_term_rows", "search_queue",
        "custom_blocks", "chat_settings", "context_state", "context_blocks", "reply_outbox"})
    EXPECT_EQ(target.scalar("SELECT count(*) FROM " + table), num("SELECT count(*) FROM " + table))
        << table;
  EXPECT_EQ(
      target.db().query("SELECT settings ->> 'recent_messages' FROM chat_settings").text(0, 0),
      "7");
  EXPECT_EQ(target.scalar("SELECT count(*) FROM reply_outbox WHERE task_id = " +
                          std::to_string(withdrawn)),
            1);
  EXPECT_EQ(target.db()
                .query("SELECT status FROM tasks WHERE id = " + std::to_string(withdrawn))
                .text(0, 0),
            "cancelled");
  EXPECT_EQ(target.scalar("SELECT count(*) FROM history WHERE chat_id = 'e' AND task_id IS NULL"),
            2);
  // Re-runnable: a second run writes nothing (nothing changed) and still verifies.
  const int64_t events = target.scalar("SELECT count(*) FROM events");
  const auto again = autonous(dir_, {"copy", "--from", db_, "--to", target.url()}, {});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(target.scalar("SELECT count(*) FROM events"), events);
  // The chat goes on on PostgreSQL: new ids follow the copied ones, and the copied history and
  // search index recall the early fact without indexing anything again.
  const Env pg_env = {{"DATABASE_URL", target.url()}};
  const auto q =
      autonous(dir_, {"enqueue", "--chat", "c", "What is my locker code at the gym?"}, pg_env);
  ASSERT_EQ(q.exit_code, 0) << q.err;
  // (After every id the source gave out: task 2, deleted above, is not given out again.)
  EXPECT_EQ(std::stoll(q.out), num("SELECT seq FROM sqlite_sequence WHERE name = 'tasks'") + 1);
  EXPECT_GT(std::stoll(q.out), num("SELECT max(id) FROM tasks") + 1);
  Env e = defaults(stub);
  e.erase("DB_PATH");
  e["DATABASE_URL"] = target.url();
  drain(e);
  const std::string user = last_request(stub).back()["content"];
  EXPECT_NE(user.find("my locker code at the gym is 4471"), std::string::npos) << user;
  EXPECT_GT(target.scalar("SELECT count(*) FROM events WHERE type = 'context.compressed' AND "
                          "payload -> 'recall' -> 'items' @> '[{\"id\": " +
                          std::to_string(fact) + "}]'"),
            0);
  // The target is in use now (the worker gave out new ids there; the source has a new task of
  // the same id): a copy would overwrite them and is refused whole.
  const int64_t tasks_now = target.scalar("SELECT count(*) FROM tasks");
  exec_sql("INSERT INTO tasks(chat_id, text) VALUES ('late', 'written to SQLite after the move')");
  const auto diverged = autonous(dir_, {"copy", "--from", db_, "--to", target.url()}, {});
  EXPECT_EQ(diverged.exit_code, 1) << diverged.out;
  EXPECT_NE(diverged.err.find("written to since the last copy"), std::string::npos) << diverged.err;
  EXPECT_EQ(target.scalar("SELECT count(*) FROM tasks"), tasks_now);
  // Bad input: exit 2 naming the flag.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"copy", "--from", dir_.file("none.db"), "--to", target.url()},
        {"copy", "--from", db_, "--to", "mysql://h/db"},
        {"copy", "--from", db_}}) {
    const auto bad = autonous(dir_, args, {});
    EXPECT_EQ(bad.exit_code, 2) << args.back() << bad.err;
    EXPECT_NE(bad.err.find("--"), std::string::npos) << bad.err;
  }
}

// Each queued task's chat head took an advisory lock held to the copy's commit: 50 000 chats
// with queued tasks exhausted the server's lock table ("out of shared memory"). The copy holds
// the tasks table's lock and queues them in bulk mode (migrations/postgres/0011).
TEST_F(RecallE2eTest, CopyOfFiftyThousandChatsWithQueuedTasksFitsTheServersLockTable) {
  if (pg_) GTEST_SKIP() << "copy starts from a SQLite file";
  PG_TEST_OR_SKIP();
  autonous(dir_, {"migrate"}, db_env());
  std::vector<std::vector<std::string>> rows;
  for (int c = 0; c < 50000; ++c) rows.push_back({"chat" + std::to_string(c), "waiting"});
  insert_many("INSERT INTO tasks(chat_id, text) VALUES ($1, $2)", rows);
  PgTestDb target;
  // 10 s here in a release build; more under the sanitizers on two busy cores.
  const auto r = autonous(dir_, {"copy", "--from", db_, "--to", target.url()}, {}, "",
                          std::chrono::minutes(4));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(target.scalar("SELECT count(*) FROM chat_heads"), 50000);
  EXPECT_EQ(target.scalar("SELECT count(*) FROM tasks WHERE status = 'queued'"), 50000);
}

TEST_F(RecallE2eTest, CopyTakesTaskNumbersAsTheSqliteWorkerReadsThemAndSaysSo) {
  // SQLite keeps whatever a front end wrote: a text run_after, a priority past 32 bits. The
  // worker reads them (CAST AS INTEGER); the copy used to stop at the first such row.
  if (pg_) GTEST_SKIP() << "copy starts from a SQLite file";
  PG_TEST_OR_SKIP();
  autonous(dir_, {"migrate"}, db_env());
  // A numeric text becomes an integer as SQLite stores it (INTEGER affinity); "soon" stays text.
  exec_sql(
      "INSERT INTO tasks(chat_id, text, run_after) VALUES ('a', 'text time', '1700000000000')");
  exec_sql("INSERT INTO tasks(chat_id, text, run_after) VALUES ('b', 'junk time', 'soon')");
  exec_sql("INSERT INTO tasks(chat_id, text, priority) VALUES ('c', 'high', 5000000000)");
  exec_sql("INSERT INTO tasks(chat_id, text, priority) VALUES ('d', 'low', -5000000000)");
  exec_sql("INSERT INTO tasks(chat_id, text, priority) VALUES ('e', 'plain', 3)");
  PgTestDb target;
  const auto r = autonous(dir_, {"copy", "--from", db_, "--to", target.url()}, {});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("3 row(s) normalised"), std::string::npos) << r.out;
  const auto at = [&](const std::string& chat, const std::string& col) {
    return target.scalar("SELECT " + col + " FROM tasks WHERE chat_id = '" + chat + "'");
  };
  EXPECT_EQ(at("a", "run_after"), 1700000000000);
  EXPECT_EQ(at("b", "run_after"), 0);
  EXPECT_EQ(at("c", "priority"), 2147483647);
  EXPECT_EQ(at("d", "priority"), -2147483648LL);
  EXPECT_EQ(at("e", "priority"), 3);
  EXPECT_EQ(target.scalar("SELECT count(*) FROM chat_heads"), 5);
}

}  // namespace
}  // namespace autonous::testing
