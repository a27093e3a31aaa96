// The front-end contract (#32) through the real binary, on both backends: the reply webhook
// against the stub's real loopback receiver (down, then up across a kill -9; failing, rude, slow
// past its timeout; never holding up replies), signed as documented; `autonous cancel` of
// queued and running tasks; `autonous wait`.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/common/sha256.h"
#include "tests/e2e/e2e_support.h"

namespace autonous::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kSecret[] = "whsec-test-123";

class FrontEndE2eTest : public E2eTest {
 protected:
  // The receiver's requests: {path, headers, body (the raw text)}.
  static std::vector<nlohmann::json> hooks(const StubServer& receiver) {
    std::vector<nlohmann::json> out;
    for (const std::string& line : receiver.log_lines()) {
      nlohmann::json j = nlohmann::json::parse(line);
      if (j["path"].get<std::string>().rfind("/hook/", 0) == 0) out.push_back(std::move(j));
    }
    return out;
  }
  Env hook_env(const StubServer& llm, const std::string& url, Env extra = {}) {
    Env e = env(llm, {{"REPLY_WEBHOOK_URL", url},
                      {"REPLY_WEBHOOK_SECRET", kSecret},
                      {"REPLY_WEBHOOK_RETRY_BASE_MS", "100"}});
    for (auto& [k, v] : extra) e[k] = v;
    return e;
  }
  static std::string hook_url(int port, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(port) + path;
  }
  // Polls `sql` until it reads `want`, at most `timeout`.
  bool await(const std::string& sql, int64_t want, seconds timeout = seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (num(sql) == want) return true;
      std::this_thread::sleep_for(milliseconds(30));
    }
    return false;
  }
};

TEST_F(FrontEndE2eTest, EveryEndingIsPostedSignedAndSurvivesAReceiverDownAndAKillNine) {
  StubServer llm(dir_.path().string());
  int port = 0;
  {
    StubServer gone(dir_.path().string());  // a port nobody listens on once it is gone
    port = gone.port();
  }
  const Env e = hook_env(llm, hook_url(port, "/hook/ok"), {{"REPLY_WEBHOOK_RETRY_BASE_MS", "200"}});
  autonous(dir_, {"migrate"}, db_env());
  const int64_t done = enqueue("a", "hello there");
  const int64_t failed = enqueue("b", "doomed [[stub:400]]");
  const int64_t slow = enqueue("c", "take your time [[stub:slow:1500]]");
  const int64_t withdrawn = enqueue("c", "never mind");
  {
    Process worker({autonous_bin(), "worker"}, e, dir_.path().string());
    ASSERT_TRUE(await(
        "SELECT count(*) FROM tasks WHERE status = 'running' AND id = " + std::to_string(slow), 1));
    const auto cancel = autonous(dir_, {"cancel", "--task", std::to_string(withdrawn)}, db_env());
    EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
    EXPECT_EQ(cancel.out, "cancelled task " + std::to_string(withdrawn) + " (was queued)\n");
    ASSERT_TRUE(
        await("SELECT count(*) FROM tasks WHERE status IN ('done', 'failed', "
              "'cancelled')",
              4));
    // The receiver is down: attempts fail and are retried; replies were not held up.
    ASSERT_TRUE(
        await("SELECT count(*) FROM reply_outbox WHERE attempts > 0 AND last_error IS NOT "
              "NULL",
              4));
    worker.signal(SIGKILL);
    ASSERT_TRUE(worker.wait(seconds(10)));
  }
  EXPECT_EQ(num("SELECT count(*) FROM reply_outbox"), 4);
  StubServer receiver(dir_.path().string(), 0, {"--port", std::to_string(port)});
  drain(e);
  EXPECT_EQ(num("SELECT count(*) FROM reply_outbox"), 0);
  const std::vector<nlohmann::json> got = hooks(receiver);
  ASSERT_EQ(got.size(), 4u);
  std::map<int64_t, nlohmann::json> by_task;
  std::set<std::string> deliveries;  // one per ending
  for (const nlohmann::json& h : got) {
    const std::string raw = h["body"].get<std::string>();
    // The signature a receiver recomputes: HMAC-SHA256 of the raw body with the secret.
    EXPECT_EQ(h["headers"]["x-autonous-signature"],
              "sha256=" + common::hmac_sha256_hex(kSecret, raw));
    EXPECT_EQ(h["headers"]["content-type"], "application/json");
    const nlohmann::json body = nlohmann::json::parse(raw);
    EXPECT_EQ(h["headers"]["idempotency-key"], std::to_string(body["task_id"].get<int64_t>()));
    EXPECT_EQ(body["idempotency_key"], std::to_string(body["task_id"].get<int64_t>()));
    deliveries.insert(h["headers"]["x-autonous-delivery"].get<std::string>());
    for (const char* key :
         {"task_id", "chat_id", "status", "reply", "error", "attempts", "finished_at"})
      EXPECT_TRUE(body.contains(key)) << key << " in " << raw;
    by_task[body["task_id"].get<int64_t>()] = body;
  }
  EXPECT_EQ(deliveries.size(), 4u);
  EXPECT_EQ(by_task[done]["status"], "done");
  EXPECT_EQ(by_task[done]["reply"],
            str("SELECT reply FROM tasks WHERE id = " + std::to_string(done)));
  EXPECT_EQ(by_task[failed]["status"], "failed");
  EXPECT_FALSE(by_task[failed]["error"].get<std::string>().empty());
  EXPECT_TRUE(by_task[failed]["reply"].is_null());
  EXPECT_EQ(by_task[slow]["status"], "done");
  EXPECT_EQ(by_task[withdrawn]["status"], "cancelled");
  EXPECT_EQ(payloads("reply.delivered").size(), 4u);
  EXPECT_GE(payloads("reply.delivery_failed").size(), 4u);
  EXPECT_EQ(payloads("task.cancelled", withdrawn).at(0)["was"], "queued");
}

TEST_F(FrontEndE2eTest, AFailingOrRudeReceiverIsRetriedAndASlowOneIsGivenUpAfterTheCap) {
  StubServer llm(dir_.path().string());
  StubServer receiver(dir_.path().string());
  autonous(dir_, {"migrate"}, db_env());
  const int64_t a = enqueue("a", "one");
  drain(hook_env(llm, hook_url(receiver.port(), "/hook/fail/2")));
  const auto failures = payloads("reply.delivery_failed", a);
  ASSERT_EQ(failures.size(), 2u);
  EXPECT_EQ(failures[0]["status"], 500);
  EXPECT_EQ(failures[0]["final"], false);
  EXPECT_EQ(payloads("reply.delivered", a).at(0)["attempt"], 3);

  const int64_t b = enqueue("b", "two");
  drain(hook_env(llm, hook_url(receiver.port(), "/hook/close/2")));
  EXPECT_EQ(payloads("reply.delivery_failed", b).size(), 2u);
  EXPECT_EQ(payloads("reply.delivered", b).size(), 1u);

  const int64_t c = enqueue("c", "three");
  const auto r =
      drain(hook_env(llm, hook_url(receiver.port(), "/hook/slow/3000"),
                     {{"REPLY_WEBHOOK_TIMEOUT_MS", "300"}, {"REPLY_WEBHOOK_MAX_ATTEMPTS", "2"}}));
  const auto slow = payloads("reply.delivery_failed", c);
  ASSERT_EQ(slow.size(), 2u);
  EXPECT_EQ(slow[0]["error"], "timed out");
  EXPECT_EQ(slow[1]["final"], true);
  EXPECT_TRUE(payloads("reply.delivered", c).empty());
  EXPECT_EQ(num("SELECT count(*) FROM reply_outbox WHERE gave_up_at IS NOT NULL AND task_id = " +
                std::to_string(c)),
            1);
  EXPECT_NE(r.err.find("reply webhook gave up task_id=" + std::to_string(c)), std::string::npos);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(c)), "done");
  EXPECT_EQ(r.err.find(kSecret), std::string::npos);  // the secret is never logged
}

TEST_F(FrontEndE2eTest, ASlowReceiverNeverHoldsUpReplies) {
  StubServer llm(dir_.path().string());
  StubServer receiver(dir_.path().string());
  autonous(dir_, {"migrate"}, db_env());
  // One chat: its tasks run one after the other; a delivery made in line would hold each next
  // one up by the receiver's 700 ms.
  for (int i = 0; i < 3; ++i) enqueue("chat", "hi " + std::to_string(i));
  drain(hook_env(llm, hook_url(receiver.port(), "/hook/slow/700")));
  const std::string last_done = str("SELECT max(finished_at) FROM tasks");
  const auto delivered = events({"--type", "reply.delivered"});
  ASSERT_EQ(delivered.size(), 3u);
  EXPECT_LT(last_done, delivered[0]["created_at"].get<std::string>());
}

TEST_F(FrontEndE2eTest, AReceiverThatAnswersWithABigBodyHasItDelivered) {
  StubServer llm(dir_.path().string());
  StubServer receiver(dir_.path().string());
  const int64_t t = enqueue("a", "hello");
  drain(hook_env(llm, hook_url(receiver.port(), "/hook/big")));
  EXPECT_EQ(payloads("reply.delivered", t).at(0)["attempt"], 1);
  EXPECT_TRUE(payloads("reply.delivery_failed", t).empty());
}

TEST_F(FrontEndE2eTest, AWorkerWithoutTheWebhookNeverTurnsItOffForTheOthers) {
  StubServer llm(dir_.path().string());
  StubServer receiver(dir_.path().string());
  const Env hooked = hook_env(llm, hook_url(receiver.port(), "/hook/ok"));
  enqueue("a", "one");
  drain(hooked);
  // A one-off worker without REPLY_WEBHOOK_URL (a rolling deploy, a drain by hand).
  const int64_t second = enqueue("b", "two");
  drain(llm);
  EXPECT_EQ(num("SELECT count(*) FROM reply_outbox WHERE task_id = " + std::to_string(second)), 1);
  drain(hooked);
  EXPECT_EQ(payloads("reply.delivered", second).size(), 1u);
}

TEST_F(FrontEndE2eTest, ARunningTaskCancelledStopsAtOnceCommitsNothingAndItsChatGoesOn) {
  StubServer llm(dir_.path().string());
  autonous(dir_, {"migrate"}, db_env());
  const int64_t stuck = enqueue("a", "think for a long time [[stub:slow:30000]]");
  const int64_t next = enqueue("a", "and then this");
  Process waiter({autonous_bin(), "wait", "--task", std::to_string(next), "--timeout", "60"},
                 db_env(), dir_.path().string());
  Process worker({autonous_bin(), "worker"}, env(llm), dir_.path().string());
  ASSERT_TRUE(await(
      "SELECT count(*) FROM tasks WHERE status = 'running' AND id = " + std::to_string(stuck), 1));
  const auto started = std::chrono::steady_clock::now();
  const auto cancel = autonous(dir_, {"cancel", "--task", std::to_string(stuck)}, db_env());
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(cancel.out, "cancelled task " + std::to_string(stuck) + " (was running)\n");
  const auto waited = waiter.wait(seconds(20));
  ASSERT_TRUE(waited);
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(10));  // not the 30 s call
  EXPECT_EQ(waited->exit_code, 0) << waited->err;
  EXPECT_EQ(waited->out, str("SELECT reply FROM tasks WHERE id = " + std::to_string(next)) + "\n");
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(stuck)), "cancelled");
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE task_id = " + std::to_string(stuck)), 0);
  EXPECT_EQ(payloads("task.cancelled", stuck).at(0)["was"], "running");
  EXPECT_TRUE(payloads("turn.completed", stuck).empty());
  worker.signal(SIGTERM);
  const auto stopped = worker.wait(seconds(20));
  ASSERT_TRUE(stopped);
  EXPECT_NE(stopped->err.find("task cancelled while running"), std::string::npos)
      << stopped->err.substr(0, 3000);
  // A second cancel, and one of an ended task, say what they found.
  EXPECT_EQ(autonous(dir_, {"cancel", "--task", std::to_string(stuck)}, db_env()).exit_code, 0);
  const auto late = autonous(dir_, {"cancel", "--task", std::to_string(next)}, db_env());
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_NE(late.err.find("already ended (done)"), std::string::npos) << late.err;
  EXPECT_EQ(autonous(dir_, {"cancel", "--task", "999999"}, db_env()).exit_code, 1);
}

TEST_F(FrontEndE2eTest, WaitPrintsTheReplyTheErrorOrTimesOut) {
  StubServer llm(dir_.path().string());
  autonous(dir_, {"migrate"}, db_env());
  const int64_t ok = enqueue("a", "hello");
  const int64_t bad = enqueue("b", "no [[stub:400]]");
  const int64_t gone = enqueue("c", "withdrawn");
  autonous(dir_, {"cancel", "--task", std::to_string(gone)}, db_env());
  const auto timed_out =
      autonous(dir_, {"wait", "--task", std::to_string(ok), "--timeout", "0.2"}, db_env());
  EXPECT_EQ(timed_out.exit_code, 124);
  EXPECT_NE(timed_out.err.find("still queued"), std::string::npos) << timed_out.err;
  Process waiter({autonous_bin(), "wait", "--task", std::to_string(ok), "--json"}, db_env(),
                 dir_.path().string());
  drain(llm);
  const auto w = waiter.wait(seconds(20));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->exit_code, 0) << w->err;
  const nlohmann::json j = nlohmann::json::parse(w->out);
  EXPECT_EQ(j["status"], "done");
  EXPECT_EQ(j["task_id"], ok);
  EXPECT_EQ(j["reply"], str("SELECT reply FROM tasks WHERE id = " + std::to_string(ok)));
  const auto f = autonous(dir_, {"wait", "--task", std::to_string(bad)}, db_env());
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_NE(f.err.find("failed: "), std::string::npos) << f.err;
  const auto c = autonous(dir_, {"wait", "--task", std::to_string(gone)}, db_env());
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.err.find("was cancelled"), std::string::npos);
  EXPECT_EQ(autonous(dir_, {"wait", "--task", "424242"}, db_env()).exit_code, 1);
  EXPECT_EQ(autonous(dir_, {"wait", "--task", "1", "--timeout", "-1"}, db_env()).exit_code, 2);
  EXPECT_EQ(autonous(dir_, {"wait"}, db_env()).exit_code, 2);
  if (!pg_) {  // a mistyped DB_PATH is said so, not created empty
    const std::string typo = dir_.file("typo.db");
    EXPECT_EQ(autonous(dir_, {"wait", "--task", "1"}, {{"DB_PATH", typo}}).exit_code, 2);
    EXPECT_EQ(autonous(dir_, {"cancel", "--task", "1"}, {{"DB_PATH", typo}}).exit_code, 2);
    EXPECT_FALSE(std::filesystem::exists(typo));
  }
}

}  // namespace
}  // namespace autonous::testing
