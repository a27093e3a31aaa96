#include "internal/worker/worker.h"

#include <mutex>
#include <thread>

#include <SQLiteCpp/Statement.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/backend/sqlite/queue.h"
#include "internal/common/clock.h"
#include "internal/tokens/token_counter.h"
#include "tests/support/fake_clock.h"
#include "tests/support/scripted_transport.h"
#include "tests/support/test_db.h"

namespace autonous::worker {
namespace {

const std::string kOk =
    R"({"choices":[{"message":{"content":"pong"},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":1,"total_tokens":21}})";

// Slots each get a transport; they all forward to one script, in call order.
class SharedScript {
 public:
  class Forwarder final : public openai::HttpTransport {
   public:
    explicit Forwarder(SharedScript& s) : s_(s) {}
    openai::HttpResponse post(const openai::HttpRequest& r) override {
      const std::lock_guard lock(s_.mu_);
      return s_.script_.post(r);
    }

   private:
    SharedScript& s_;
  };
  testing::ScriptedTransport& script() { return script_; }

 private:
  std::mutex mu_;
  testing::ScriptedTransport script_;
};

class WorkerTest : public ::testing::Test {
 protected:
  config::Config config() {
    config::Config c;
    c.db_path = t_.path();
    c.openai_base_url = "http://127.0.0.1:1/v1";
    c.openai_api_key = "sk-unit";
    c.worker_concurrency = 1;
    c.poll_interval = std::chrono::milliseconds(5);
    // Realistic backoffs: the fake clock lets them pass without a real sleep.
    c.retry_base = std::chrono::milliseconds(2000);
    c.retry_max = std::chrono::milliseconds(60'000);
    c.task_max_attempts = 3;
    // The fake clock moves a second per now(): a day's lease never lapses during a test.
    c.task_lease = std::chrono::hours(24);
    c.retry_budget = std::chrono::seconds(0);  // the attempt cap alone, unless a test says so
    c.sqlite_synchronous = config::Synchronous::kNormal;
    c.worker_id = "unit";
    return c;
  }
  void run(const config::Config& c) {
    WorkerDeps deps;
    deps.make_transport = [this] { return std::make_unique<SharedScript::Forwarder>(shared_); };
    deps.counter = &counter_;
    deps.clock = &clock_;
    Worker w(c, deps, /*drain=*/true);
    w.run(std::stop_token{});
  }
  std::string col(const std::string& sql) { return t_.db().execAndGet(sql).getString(); }
  int64_t num(const std::string& sql) { return t_.db().execAndGet(sql).getInt64(); }

  testing::TestDb t_;
  queue::Queue q_{t_.db()};
  SharedScript shared_;
  tokens::CharsOver4Counter counter_;
  // Every now() moves one second on, so retry backoffs and expired leases pass at once.
  testing::FakeClock clock_{common::from_unix_ms(1'700'000'000'000), std::chrono::seconds(1)};
};

TEST_F(WorkerTest, CompletesATaskWithThePairAndTheFullEventTrail) {
  q_.enqueue("c", "ping");
  shared_.script().push({200, {}, kOk});
  run(config());
  EXPECT_EQ(col("SELECT status || ':' || reply FROM tasks"), "done:pong");
  EXPECT_EQ(col("SELECT group_concat(role, ',') FROM (SELECT role FROM history ORDER BY id)"),
            "user,assistant");
  EXPECT_EQ(
      col("SELECT group_concat(type, ',') FROM (SELECT type FROM events ORDER BY id)"),
      "agent.started,turn.started,context.compressed,llm.request,llm.response,turn.completed");
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE parent_id = (SELECT id FROM events WHERE "
                "type = 'agent.started')"),
            5);
  const auto response =
      nlohmann::json::parse(col("SELECT payload FROM events WHERE type = 'llm.response'"));
  EXPECT_EQ(response["usage"]["prompt_tokens"], 20);
  EXPECT_EQ(response["status"], 200);
  EXPECT_TRUE(response.contains("latency_ms"));
  EXPECT_TRUE(response.contains("estimated_tokens"));
}

TEST_F(WorkerTest, RetriesTransientErrorsThenSucceeds) {
  q_.enqueue("c", "ping");
  shared_.script().push({500, {}, "{}"});
  shared_.script().push_error(CURLE_OPERATION_TIMEDOUT, "timeout");
  shared_.script().push({200, {}, kOk});
  run(config());
  EXPECT_EQ(col("SELECT status || ':' || attempts FROM tasks"), "done:3");
  EXPECT_EQ(col("SELECT group_concat(json_extract(payload, '$.reason'), ',') FROM events WHERE "
                "type = 'llm.retry'"),
            "http_500,timeout");
  // The backoff grew from RETRY_BASE_MS (with jitter), in the fake clock's time.
  EXPECT_GE(num("SELECT min(json_extract(payload, '$.delay_ms')) FROM events WHERE "
                "type = 'llm.retry'"),
            1000);
}

TEST_F(WorkerTest, PermanentErrorFailsAtOnceWithTheServersMessage) {
  q_.enqueue("c", "ping");
  shared_.script().push({401, {}, R"({"error":{"message":"Incorrect API key"}})"});
  run(config());
  EXPECT_EQ(col("SELECT status FROM tasks"), "failed");
  EXPECT_NE(col("SELECT error FROM tasks").find("Incorrect API key"), std::string::npos);
  EXPECT_EQ(num("SELECT attempts FROM tasks"), 1);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'turn.failed'"), 1);
  EXPECT_EQ(num("SELECT count(*) FROM history"), 0);
}

TEST_F(WorkerTest, GivesUpAfterMaxAttempts) {
  q_.enqueue("c", "ping");
  for (int i = 0; i < 3; ++i) shared_.script().push({503, {}, "{}"});
  run(config());
  EXPECT_EQ(col("SELECT status FROM tasks"), "failed");
  EXPECT_NE(col("SELECT error FROM tasks").find("gave up after 3 attempts"), std::string::npos);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'llm.retry'"), 2);
}

TEST_F(WorkerTest, AnOutageWithinTheRetryBudgetOutlastsTheAttemptCap) {
  q_.enqueue("c", "ping");
  for (int i = 0; i < 6; ++i) shared_.script().push({503, {}, "{}"});
  shared_.script().push({200, {}, kOk});
  auto c = config();
  c.retry_budget = std::chrono::seconds(600);  // the default: ten minutes
  run(c);
  EXPECT_EQ(col("SELECT status FROM tasks"), "done");
  EXPECT_EQ(num("SELECT attempts FROM tasks"), 7);  // past TASK_MAX_ATTEMPTS (3)
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'llm.retry'"), 6);
}

TEST_F(WorkerTest, PastTheAttemptCapAZeroRetryAfterNeverBecomesAHotLoop) {
  q_.enqueue("c", "ping");
  // "Retry now", again and again: within the cap the server's word holds; past it, our own
  // backoff is the floor (before: 1 535 requests in 10 s under the defaults).
  for (int i = 0; i < 6; ++i) shared_.script().push({429, {{"retry-after-ms", "0"}}, "{}"});
  shared_.script().push({200, {}, kOk});
  auto c = config();
  c.retry_budget = std::chrono::seconds(600);
  run(c);
  EXPECT_EQ(col("SELECT status FROM tasks"), "done");
  EXPECT_EQ(
      num("SELECT count(*) FROM events WHERE type = 'llm.retry' AND "
          "json_extract(payload, '$.attempt') < 3 AND json_extract(payload, '$.delay_ms') = 0"),
      2);
  // Past the cap: at least the backoff (2 s x 2^(attempt-1), minus up to 25 % jitter).
  EXPECT_GE(num("SELECT min(json_extract(payload, '$.delay_ms')) FROM events WHERE "
                "type = 'llm.retry' AND json_extract(payload, '$.attempt') >= 3"),
            6000);
}

TEST_F(WorkerTest, TheRetryBudgetIsForOutagesNotForRepliesThatWouldRepeat) {
  q_.enqueue("c", "ping");
  const std::string empty =
      R"({"choices":[{"message":{"content":null},"finish_reason":"tool_calls"}]})";
  for (int i = 0; i < 10; ++i) shared_.script().push({200, {}, empty});
  auto c = config();
  c.retry_budget = std::chrono::seconds(600);
  run(c);
  EXPECT_EQ(col("SELECT status FROM tasks"), "failed");
  EXPECT_EQ(num("SELECT attempts FROM tasks"), 3);  // TASK_MAX_ATTEMPTS, budget or not
  EXPECT_NE(col("SELECT error FROM tasks").find("no text"), std::string::npos);
}

TEST_F(WorkerTest, AnErrorObjectInsideA200IsNoOutageForTheBudget) {
  q_.enqueue("c", "ping");
  const std::string error =
      R"({"error":{"message":"The model `nope` does not exist","code":"model_not_found"}})";
  for (int i = 0; i < 10; ++i) shared_.script().push({200, {}, error});
  auto c = config();
  c.retry_budget = std::chrono::seconds(600);
  run(c);
  EXPECT_EQ(col("SELECT status FROM tasks"), "failed");
  EXPECT_EQ(num("SELECT attempts FROM tasks"), 3);  // the server answered: the attempt cap ends it
}

TEST_F(WorkerTest, RetriesAllowedByTheBudgetDoNotCountAsExpiredLeases) {
  const int64_t id = q_.enqueue("c", "ping");
  // Four attempts that ended in retries (an outage), then one worker that died mid-call.
  for (int i = 0; i < 4; ++i) {
    const auto t = q_.claim("w", common::from_unix_ms(1000 + 10 * i), std::chrono::seconds(1));
    ASSERT_TRUE(t);
    ASSERT_TRUE(q_.retry_later(*t, common::from_unix_ms(1000 + 10 * i), "503", {}));
  }
  ASSERT_TRUE(q_.claim("dead", common::from_unix_ms(2000), std::chrono::seconds(1)));
  shared_.script().push({200, {}, kOk});
  run(config());  // attempt 6 > TASK_MAX_ATTEMPTS, but only one lease expired
  EXPECT_EQ(col("SELECT status FROM tasks WHERE id = " + std::to_string(id)), "done");
}

TEST_F(WorkerTest, PastTheRetryBudgetTheAttemptCapEndsIt) {
  q_.enqueue("c", "ping");
  for (int i = 0; i < 40; ++i) shared_.script().push({503, {}, "{}"});
  auto c = config();
  c.retry_budget = std::chrono::seconds(30);
  run(c);
  EXPECT_EQ(col("SELECT status FROM tasks"), "failed");
  EXPECT_NE(col("SELECT error FROM tasks").find(" s)"), std::string::npos);
  EXPECT_LT(num("SELECT attempts FROM tasks"), 40);
  EXPECT_GE(num("SELECT attempts FROM tasks"), 3);
}

TEST_F(WorkerTest, FailsATaskWhoseLeasesKeptExpiring) {
  q_.enqueue("c", "crashy");
  // Three claims whose workers "died": the next claim is attempt 4 > max 3.
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(q_.claim("dead", common::from_unix_ms(1000 + 2000 * i), std::chrono::seconds(1)));
  run(config());
  EXPECT_EQ(col("SELECT status FROM tasks"), "failed");
  EXPECT_EQ(col("SELECT json_extract(payload, '$.reason') FROM events WHERE type = 'turn.failed'"),
            "lease_expired");
  EXPECT_TRUE(shared_.script().requests.empty());  // no LLM call was made
}

TEST_F(WorkerTest, SecondTaskOfAChatSeesTheFirstReply) {
  q_.enqueue("c", "first");
  q_.enqueue("c", "second");
  shared_.script().push({200, {}, kOk});
  shared_.script().push({200, {}, kOk});
  auto c = config();
  c.worker_concurrency = 4;
  run(c);
  ASSERT_EQ(shared_.script().requests.size(), 2u);
  const auto second = nlohmann::json::parse(shared_.script().requests[1].body);
  ASSERT_EQ(second["messages"].size(), 4u);  // system, first, pong, second
  EXPECT_EQ(second["messages"][1]["content"], "first");
  EXPECT_EQ(second["messages"][2]["content"], "pong");
  EXPECT_EQ(second["messages"][3]["content"], "second");
}

TEST_F(WorkerTest, InvalidUtf8InATaskNeverCrashesAndIsStoredRepaired) {
  SQLite::Statement ins(t_.db(), "INSERT INTO tasks(chat_id, text) VALUES ('c', ?)");
  const std::string raw("bad \xFF\xFE", 6);
  ins.bind(1, raw.data(), static_cast<int>(raw.size()));
  ins.exec();
  shared_.script().push({200, {}, kOk});
  run(config());
  EXPECT_EQ(col("SELECT status FROM tasks"), "done");
  EXPECT_NO_THROW(nlohmann::json::parse(shared_.script().requests[0].body));
  EXPECT_EQ(col("SELECT text FROM history WHERE role = 'user'"), "bad \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE NOT json_valid(payload)"), 0);
}

TEST_F(WorkerTest, AReplyThatCannotBeStoredIsRetriedAndNeverClaimsTheTurnCompleted) {
  q_.enqueue("c", "ping");
  // The completion transaction fails (a trigger stands in for a full disk).
  t_.db().exec(
      "CREATE TRIGGER no_pong BEFORE INSERT ON history WHEN NEW.text = 'pong' "
      "BEGIN SELECT RAISE(ABORT, 'disk full'); END");
  for (int i = 0; i < 3; ++i) shared_.script().push({200, {}, kOk});
  run(config());
  EXPECT_EQ(col("SELECT status FROM tasks"), "failed");
  EXPECT_NE(col("SELECT error FROM tasks").find("could not store the reply"), std::string::npos);
  EXPECT_EQ(num("SELECT count(*) FROM history"), 0);
  // Every answer arrived (llm.response), none completed the turn.
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'llm.response'"), 3);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'turn.completed'"), 0);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'llm.retry'"), 2);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'turn.failed'"), 1);
}

// An overflow in a wording no table knows (a hosted Llama's plain 400).
const openai::HttpResponse kVague{400, {}, "Input is too long for requested model."};
const openai::HttpResponse kSure{
    400,
    {},
    R"({"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}})"};

class ProbableOverflowTest : public WorkerTest {
 protected:
  // 20 rows of 200 characters: a prompt of about 1 000 tokens that a rebuild can cut.
  void add_history() {
    for (int i = 0; i < 20; ++i)
      t_.db().exec("INSERT INTO history(chat_id, role, text) VALUES ('c', '" +
                   std::string(i % 2 ? "assistant" : "user") + "', '" + std::string(200, 'h') +
                   "')");
  }
  int64_t learned_count() { return num("SELECT count(*) FROM learned_limits"); }
};

TEST_F(ProbableOverflowTest, NothingToCutMeansNoSecondCallAndNothingLearned) {
  q_.enqueue("c", "ping");
  shared_.script().push(kVague);
  run(config());
  EXPECT_EQ(col("SELECT status FROM tasks"), "failed");
  EXPECT_EQ(shared_.script().requests.size(), 1u);  // the rebuild was no smaller: not sent
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'llm.retry'"), 0);
  EXPECT_EQ(col("SELECT json_extract(payload, '$.reason') FROM events WHERE type = "
                "'turn.failed'"),
            "probable_context_overflow");
  EXPECT_EQ(learned_count(), 0);
}

TEST_F(ProbableOverflowTest, AnsweredSmallerItIsLearnedAsAGuessAfterTheAnswerAtMostHalving) {
  add_history();
  q_.enqueue("c", "ping");
  shared_.script().push(kVague);
  shared_.script().push({200, {}, kOk});
  run(config());
  EXPECT_EQ(col("SELECT status FROM tasks"), "done");
  ASSERT_EQ(learned_count(), 1);
  EXPECT_EQ(num("SELECT stated_limit IS NULL FROM learned_limits"), 1);
  EXPECT_EQ(col("SELECT substr(message, 1, 17) FROM learned_limits"), "probable overflow");
  const int64_t budget = num("SELECT budget_tokens FROM learned_limits");
  const int64_t refused =
      num("SELECT json_extract(payload, '$.budget_tokens') FROM events WHERE type = "
          "'context.compressed' ORDER BY id LIMIT 1");
  EXPECT_GE(budget, refused / 2);  // one guess halves the budget at most
  // Stored after the answer: its event follows the retry and the rebuilt context (not paired
  // with the refusal, as a sure overflow's is), stamped no earlier than the retry.
  EXPECT_GT(num("SELECT id FROM events WHERE type = 'context.limit_learned'"),
            num("SELECT max(id) FROM events WHERE type = 'context.compressed'"));
  EXPECT_GE(col("SELECT created_at FROM events WHERE type = 'context.limit_learned'"),
            col("SELECT created_at FROM events WHERE type = 'llm.retry'"));
}

TEST_F(ProbableOverflowTest, ASureOverflowAfterAProbableOneIsWhatIsLearned) {
  add_history();
  q_.enqueue("c", "ping");
  shared_.script().push(kVague);
  shared_.script().push(kSure);
  shared_.script().push({200, {}, kOk});
  run(config());
  EXPECT_EQ(col("SELECT status FROM tasks"), "done");
  ASSERT_EQ(learned_count(), 1);
  EXPECT_EQ(num("SELECT stated_limit FROM learned_limits"), 8192);
  ASSERT_EQ(num("SELECT count(*) FROM events WHERE type = 'context.limit_learned'"), 1);
  EXPECT_EQ(num("SELECT json_extract(payload, '$.stated_limit') FROM events WHERE type = "
                "'context.limit_learned'"),
            8192);
  // Paired with the sure answer's retry (the second), not the probable one's.
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'llm.retry'"), 2);
  EXPECT_LT(num("SELECT id FROM events WHERE type = 'context.limit_learned'"),
            num("SELECT max(id) FROM events WHERE type = 'llm.retry'"));
  EXPECT_GT(num("SELECT id FROM events WHERE type = 'context.limit_learned'"),
            num("SELECT min(id) FROM events WHERE type = 'llm.retry'"));
}

TEST_F(WorkerTest, ASlotErrorOutsideATaskStopsTheWorkerAndIsRethrown) {
  q_.enqueue("c", "ping");
  // An error that waiting cannot cure (a schema someone broke): the claim fails, the worker
  // stops and says why.
  t_.db().exec("DROP TABLE chat_heads");
  EXPECT_THROW(run(config()), SQLite::Exception);
  EXPECT_EQ(col("SELECT status FROM tasks"), "queued");  // untouched, ready for a restart
}

TEST_F(WorkerTest, ALockHeldPastTheBusyTimeoutIsWaitedOutNotAReasonToStop) {
  q_.enqueue("c", "ping");
  shared_.script().push({200, {}, kOk});
  // Another connection holds the write lock for longer than the busy timeout: the claim is
  // refused for now (Session::transient), the slot backs off and claims once it is free.
  auto holder = t_.open_connection();
  holder->exec("BEGIN IMMEDIATE");
  auto c = config();
  c.sqlite_busy_timeout = std::chrono::milliseconds(200);
  std::thread worker([&] { run(c); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  holder->exec("ROLLBACK");
  worker.join();
  EXPECT_EQ(col("SELECT status FROM tasks"), "done");
  EXPECT_EQ(num("SELECT attempts FROM tasks"), 1);
}

}  // namespace
}  // namespace autonous::worker
