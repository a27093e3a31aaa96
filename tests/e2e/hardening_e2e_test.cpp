// Hardening: the real worker against the stub's hostile replies (cmd/autonous-stub/hostile.h),
// hostile front-end values and its own logs.

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {
namespace {

using std::chrono::seconds;

class HardeningE2eTest : public E2eTest {
 protected:
};

TEST_F(HardeningE2eTest, HostileRepliesFailTheirTaskWithoutCrashingOrBloatingTheWorker) {
  StubServer stub(dir_.path().string());
  // Before: 100 000 nested arrays crashed the worker (stack overflow in dump()); a 64 MiB body
  // and a gzip bomb were read whole; an endless body grew until bad_alloc.
  enqueue("deep", "[[stub:deep]]");
  enqueue("huge", "[[stub:huge:67108864]]");
  enqueue("endless", "[[stub:endless]]");
  enqueue("bomb", "[[stub:gzipbomb:1073741824]]");
  enqueue("fine", "hello");
  drain(stub, {{"WORKER_CONCURRENCY", "4"}, {"TASK_MAX_ATTEMPTS", "2"}});
  EXPECT_EQ(str("SELECT status FROM tasks WHERE chat_id = 'fine'"), "done");
  EXPECT_EQ(str("SELECT status FROM tasks WHERE chat_id = 'deep'"), "failed");
  EXPECT_NE(str("SELECT error FROM tasks WHERE chat_id = 'deep'").find("nested deeper"),
            std::string::npos);
  for (const char* chat : {"huge", "endless", "bomb"}) {
    SCOPED_TRACE(chat);
    EXPECT_EQ(str(std::string("SELECT status FROM tasks WHERE chat_id = '") + chat + "'"),
              "failed");
    EXPECT_NE(str(std::string("SELECT error FROM tasks WHERE chat_id = '") + chat + "'")
                  .find("MAX_RESPONSE_BYTES"),
              std::string::npos);
    // Too large is permanent: one attempt, no retry.
    EXPECT_EQ(num(std::string("SELECT attempts FROM tasks WHERE chat_id = '") + chat + "'"), 1);
  }
  (void)events();  // every payload reads back as a JSON object
}

TEST_F(HardeningE2eTest, AnErrorPageOverTheBodyCapIsStillRetriedAsItsStatus) {
  StubServer stub(dir_.path().string());
  enqueue("a", "[[stub:hugeerror:100000*1]]");
  drain(stub, {{"MAX_RESPONSE_BYTES", "4096"}});
  // A 502 with an oversized page is a 502 (retried), not response_too_large (failed for good).
  EXPECT_EQ(str("SELECT status FROM tasks"), "done");
  EXPECT_EQ(field("llm.retry", 0, "reason"), "http_502");
}

TEST_F(HardeningE2eTest, AnEchoedKeyReachesNoTableEventOrLog) {
  StubServer stub(dir_.path().string());
  enqueue("a", "[[stub:echokey]]");
  const auto r = drain(stub);
  EXPECT_EQ(str("SELECT status FROM tasks"), "failed");
  EXPECT_NE(str("SELECT error FROM tasks").find("[redacted]"), std::string::npos);
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE error LIKE '%" + kKey + "%'"), 0);
  for (const auto& e : events()) EXPECT_EQ(e.dump().find(kKey), std::string::npos) << e.dump();
  EXPECT_EQ(r.err.find(kKey), std::string::npos);
  const auto status = autonous(dir_, {"status"}, db_env());
  EXPECT_EQ(status.out.find(kKey), std::string::npos);
}

TEST_F(HardeningE2eTest, JsonLogsStayValidJsonThroughFailuresRetriesAndShutdown) {
  StubServer stub(dir_.path().string());
  enqueue("ok", "hello");
  enqueue("retried", "[[stub:503*1]]");
  enqueue("failed", "[[stub:401]]");  // its error message has spaces: the line that was lost
  enqueue("forger level=critical message=owned", "hi");
  const auto r = drain(stub, {{"LOG_FORMAT", "json"}});
  std::istringstream lines(r.err);
  std::string line;
  int n = 0;
  bool failed = false;
  bool retried = false;
  bool stopped = false;
  bool claimed_forger = false;
  while (std::getline(lines, line)) {
    ++n;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    ASSERT_TRUE(j.contains("level") && j.contains("message")) << line;
    EXPECT_NE(j["level"], "critical") << line;                  // a chat id cannot forge the level
    if (j["message"] == "task claimed" && j["task_id"] == 4) {  // a number, not "4"
      // The chat id is one escaped value, not words parsed into forged fields.
      EXPECT_EQ(j["chat_id"], "forger level=critical message=owned") << line;
      EXPECT_FALSE(j.contains("field_level")) << line;
      claimed_forger = true;
    }
    if (j["message"] == "task claimed") {
      EXPECT_TRUE(j["attempt"].is_number_integer()) << line;
      EXPECT_TRUE(j["reclaimed"].is_boolean()) << line;
    }
    if (j["message"] == "worker started") {
      EXPECT_TRUE(j["concurrency"].is_number_integer()) << line;
      EXPECT_TRUE(j["drain"].is_boolean()) << line;
    }
    if (j["message"] == "task retry") {
      EXPECT_TRUE(j["delay_ms"].is_number_integer()) << line;
    }
    failed |= j["message"] == "task failed";
    retried |= j["message"] == "task retry";
    stopped |= j["message"] == "worker stopped";
  }
  EXPECT_EQ(r.err.find("LOG ERROR"), std::string::npos) << r.err;
  EXPECT_GT(n, 5);
  EXPECT_TRUE(failed);
  EXPECT_TRUE(retried);
  EXPECT_TRUE(stopped);
  EXPECT_TRUE(claimed_forger);
}

TEST_F(HardeningE2eTest, UnderTheJournalEveryLineCarriesItsPriority) {
  StubServer stub(dir_.path().string());
  // systemd sets JOURNAL_STREAM to stderr's "device:inode"; the shell does it for the file the
  // test harness gives stderr. A stale value (another stream) leaves the lines as they were.
  const std::string same = "JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec \"$0\" \"$@\"";
  for (const bool journal : {true, false}) {
    SCOPED_TRACE(journal);
    enqueue("failed", "[[stub:401]]");
    enqueue("fine", "hello");
    const auto r = run({"/bin/sh", "-c", journal ? same : "JOURNAL_STREAM=1:1 exec \"$0\" \"$@\"",
                        autonous_bin(), "worker", "--drain"},
                       env(stub), dir_.path().string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.err);
    bool error = false;
    bool info = false;
    for (std::string line; std::getline(lines, line);) {
      EXPECT_EQ(line.rfind('<', 0) == 0, journal) << line;
      error |= line.rfind("<3>", 0) == 0 && line.find("task failed") != std::string::npos;
      info |= line.rfind("<6>", 0) == 0 && line.find("task done") != std::string::npos;
    }
    EXPECT_EQ(error, journal) << r.err;  // `journalctl -p err` finds the failure
    EXPECT_EQ(info, journal) << r.err;
  }
}

TEST_F(HardeningE2eTest, UnderJsonLogsEvenTheExitReasonIsAJsonLine) {
  // Whatever LOG_LEVEL says, and even when the configuration itself is refused.
  for (const Env& e : std::vector<Env>{
           {{"DB_PATH", "/nonexistent/dir/x.db"}, {"LOG_FORMAT", "json"}, {"LOG_LEVEL", "off"}},
           db_env({{"LOG_FORMAT", "JSON"}, {"HISTORY_WINDOW", "abc"}})}) {
    const auto r = autonous(dir_, {"status"}, e);
    EXPECT_NE(r.exit_code, 0);
    const auto j = nlohmann::json::parse(r.err, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.err;
    EXPECT_EQ(j["message"], "autonous exiting");
    EXPECT_EQ(j["exit_code"], r.exit_code);  // a number
    EXPECT_FALSE(j["error"].get<std::string>().empty());
  }
}

TEST_F(HardeningE2eTest, AChatIdOverItsLimitIsAUsageErrorNamingTheFlag) {
  const auto r = autonous(dir_, {"enqueue", "--chat", std::string(257, 'c'), "hi"}, db_env());
  EXPECT_EQ(r.exit_code, 2) << r.err;  // was 1: the CHECK constraint's runtime error
  EXPECT_NE(r.err.find("--chat"), std::string::npos) << r.err;
}

TEST_F(HardeningE2eTest, ANewlineInAChatIdCannotStartAForgedTextLogLine) {
  StubServer stub(dir_.path().string());
  enqueue("a\n2026-01-01T00:00:00.000 error forged", "hi");
  const auto r = drain(stub);
  std::istringstream lines(r.err);
  std::string line;
  while (std::getline(lines, line))
    EXPECT_NE(line.rfind("2026-01-01T00:00:00.000 error", 0), 0u) << line;
  EXPECT_NE(r.err.find("a\\n2026-01-01"), std::string::npos);
}

TEST_F(HardeningE2eTest, AProviderOutageWithinTheRetryBudgetLosesNoTask) {
  StubServer stub(dir_.path().string());
  // Every request of these messages gets 503 for 3 s: longer than two attempts' backoff.
  for (int i = 0; i < 6; ++i) enqueue("c" + std::to_string(i), "[[stub:down:3]] hello");
  drain(stub, {{"RETRY_BASE_MS", "200"},
               {"TASK_MAX_ATTEMPTS", "2"},
               {"RETRY_BUDGET_SECONDS", "600"}});  // the default
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 6);
  EXPECT_GT(num("SELECT max(attempts) FROM tasks"), 2);
}

TEST_F(HardeningE2eTest, ALeaseOutlivesASlowSummaryCallInsideTheContextBuild) {
  // The build of the first turn that compacts calls the summarizer, which takes longer than the
  // whole lease (3 s). The lease is renewed during that call: no other slot takes the task over.
  StubServer stub(dir_.path().string());
  enqueue("slow", "[[stub:sumslow:5000*1]] my name is Di");
  for (int i = 0; i < 8; ++i) enqueue("slow", "filler " + std::string(300, 's'));
  for (int i = 0; i < 6; ++i) enqueue("other-" + std::to_string(i), "hello");
  const auto r = drain(stub, {{"TASK_LEASE_SECONDS", "3"},
                              {"WORKER_CONCURRENCY", "3"},
                              {"CONTEXT_STRATEGY", "summarize"},
                              {"MAX_CONTEXT_TOKENS", "1200"},
                              {"SUMMARY_MAX_TOKENS", "200"},
                              {"TOKEN_COUNTER", "chars4"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 15);
  EXPECT_GE(num("SELECT count(*) FROM events WHERE type = 'context.summarized'"), 1);
  int64_t slowest = 0;
  for (const auto& p : payloads("context.summarized"))
    slowest = std::max(slowest, p.value("latency_ms", int64_t{0}));
  EXPECT_GE(slowest, 4500);  // the slow call did happen inside a build
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE lease_expiries > 0 OR attempts > 1"), 0);
  EXPECT_EQ(count_flagged("agent.started", "reclaimed"), 0);
}

TEST_F(HardeningE2eTest, ALeaseOutlivesTheBuildOfAHugeHistory) {
  // Counting a history of four 4 MiB messages takes longer than the whole lease (1 s): the
  // lease is renewed between the build's counts, so the idle second slot never takes the task
  // over (#27: a 12 MiB message failed with "leases expired" while its builds still ran).
  StubServer stub(dir_.path().string());
  std::string huge;
  uint32_t seed = 7;
  while (huge.size() < 4u << 20) {
    seed = seed * 1103515245u + 12345u;
    huge += std::string(1 + (seed >> 16) % 9, static_cast<char>('a' + (seed >> 8) % 26)) + " ";
  }
  autonous(dir_, {"migrate"}, db_env());
  // The lease is renewed between counts, so it must outlast the longest single count: a 4 MiB
  // message takes about 0.4 s here (more on a loaded machine: a 1 s lease expired under ctest
  // beside a compiler), several times that in the sanitizer pass. The build takes several leases.
  const bool sanitizer = std::getenv("AUTONOUS_TEST_BIN") != nullptr;
  const char* lease = sanitizer ? "4" : "2";
  std::vector<std::vector<std::string>> rows;
  for (int i = 0; i < (sanitizer ? 4 : 8); ++i)
    rows.push_back({"huge", i % 2 ? "assistant" : "user", huge});
  insert_many("INSERT INTO history(chat_id, role, text) VALUES ($1, $2, $3)", rows);
  enqueue("huge", "and now a short question");
  const auto r = drain(
      stub,
      {{"TASK_LEASE_SECONDS", lease}, {"WORKER_CONCURRENCY", "2"}, {"POLL_INTERVAL_MS", "20"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(str("SELECT status FROM tasks"), "done");
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE lease_expiries > 0 OR attempts > 1"), 0);
  EXPECT_EQ(count_flagged("agent.started", "reclaimed"), 0);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'llm.request'"), 1);
}

TEST_F(HardeningE2eTest, WithoutARetryBudgetTheSameOutageFailsItsTasks) {
  StubServer stub(dir_.path().string());
  for (int i = 0; i < 3; ++i) enqueue("c" + std::to_string(i), "[[stub:down:3]] hello");
  drain(stub,
        {{"RETRY_BASE_MS", "200"}, {"TASK_MAX_ATTEMPTS", "2"}, {"RETRY_BUDGET_SECONDS", "0"}});
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'failed'"), 3);
}

TEST_F(HardeningE2eTest, StatusNeverSendsServerTextsEscapeSequencesToTheTerminal) {
  ASSERT_EQ(autonous(dir_, {"migrate"}, db_env()).exit_code, 0);
  // ESC, CR and U+009B (a one-character CSI some terminals honour), as a server might send them.
  insert_many(
      "INSERT INTO tasks(chat_id, text, status, error, finished_at) VALUES ('a', 'x', 'failed', "
      "$1, "
      "'2026')",
      {{"boom \x1b[2J\rcleared\xC2\x9B"
        "2J"}});
  insert_many("INSERT INTO events(type, chat_id) VALUES ('x', $1)", {{"c\xC2\x9B"
                                                                      "2J"}});
  const auto r = autonous(dir_, {"status"}, db_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("boom \\x1b[2J\\x0dcleared\\u009b2J"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\xC2\x9B"), std::string::npos) << r.out;  // U+009B, a one-byte CSI
  const auto as_json = autonous(dir_, {"status", "--json"}, db_env());
  EXPECT_EQ(as_json.out.find("\xC2\x9B"), std::string::npos) << as_json.out;
  EXPECT_TRUE(nlohmann::json::accept(as_json.out)) << as_json.out;
  const auto events = autonous(dir_, {"events"}, db_env());
  EXPECT_EQ(events.out.find("\xC2\x9B"), std::string::npos) << events.out;
  EXPECT_NE(events.out.find("c\\u009b2J"), std::string::npos) << events.out;
}

}  // namespace
}  // namespace autonous::testing
