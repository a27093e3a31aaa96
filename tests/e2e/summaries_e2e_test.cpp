// The summarize strategy end to end: the real binary, the stub (which answers summary requests
// with the input lines that hold a digit or "name"), a real SQLite file. Summaries are stored
// and reused across restarts with no call on turns that need no compaction; a failing, blank
// or hanging summary call never loses history or blocks the reply; `chat clear` starts a new
// chain; early facts survive in the prompt.

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class SummariesE2eTest : public E2eTest {
 protected:
  Env summarize(const StubServer& stub, Env extra = {}) {
    Env e = env(stub, {{"CONTEXT_STRATEGY", "summarize"},
                       {"MAX_CONTEXT_TOKENS", "1200"},
                       {"SUMMARY_MAX_TOKENS", "200"},
                       {"TOKEN_COUNTER", "chars4"},
                       {"WORKER_CONCURRENCY", "1"}});
    for (auto& [k, v] : extra) e[k] = v;
    return e;
  }
  // The conversation: facts first, then filler turns long enough to need compaction.
  void converse(const std::string& chat, int turns) {
    enqueue(chat, "Hello, my name is Ada Lovelace.");
    enqueue(chat, "My order number is 4471 and delivery is on 2026-12-24.");
    for (int i = 0; i < turns; ++i)
      enqueue(chat, "Tell me more about bread, please. " + std::string(300, 'b'));
  }
  // Requests the stub saw, split into summary requests and chat requests.
  std::pair<std::vector<json>, std::vector<json>> requests(const StubServer& stub) {
    std::vector<json> summaries, chats;
    for (const auto& line : stub.log_lines()) {
      json j = json::parse(line);
      const auto& first = j["body"]["messages"][0];
      const bool summary =
          first["content"].get<std::string>().rfind("You maintain a running summary", 0) == 0;
      (summary ? summaries : chats).push_back(std::move(j));
    }
    return {summaries, chats};
  }
  static std::string prompt_text(const json& request) {
    std::string s;
    for (const auto& m : request["body"]["messages"]) s += m["content"].get<std::string>() + "\n";
    return s;
  }
};

TEST_F(SummariesE2eTest, SummariesAreStoredReusedAcrossRestartsAndKeepEarlyFacts) {
  StubServer stub(dir_.path().string());
  converse("c", 12);
  drain(summarize(stub));
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 14);
  const int64_t summaries = num("SELECT count(*) FROM context_summaries WHERE chat_id = 'c'");
  ASSERT_GE(summaries, 1);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'context.summarized'"), summaries);
  auto [summary_requests, chat_requests] = requests(stub);
  EXPECT_EQ(static_cast<int64_t>(summary_requests.size()), summaries);  // one call each, no retries
  // The summary request is structured, low temperature and capped, in the shape OpenAI's chat
  // models take (the default model, gpt-4o-mini): max_completion_tokens, not max_tokens.
  EXPECT_EQ(summary_requests[0]["body"]["temperature"], 0.2);
  EXPECT_EQ(summary_requests[0]["body"]["max_completion_tokens"], 200);
  EXPECT_FALSE(summary_requests[0]["body"].contains("max_tokens"));
  EXPECT_NE(summary_requests[0]["body"]["messages"][0]["content"].get<std::string>().find(
                "## Facts the user stated"),
            std::string::npos);
  // Rolling: each stored summary names its predecessor.
  EXPECT_EQ(num("SELECT count(*) FROM context_summaries WHERE previous_id IS NULL"), 1);
  // Early facts are still in the last prompt, through the summary.
  const std::string last = prompt_text(chat_requests.back());
  EXPECT_NE(last.find("<conversation_summary>"), std::string::npos);
  // As data in the user's turn: never in a system message.
  for (const auto& m : chat_requests.back()["body"]["messages"])
    if (m["role"] == "system") {
      EXPECT_EQ(m["content"].get<std::string>().find("conversation_summary"), std::string::npos);
    }
  EXPECT_NE(last.find("Ada Lovelace"), std::string::npos);
  EXPECT_NE(last.find("4471"), std::string::npos);
  EXPECT_NE(last.find("2026-12-24"), std::string::npos);
  // Every turn's prompt fit its budget.
  EXPECT_EQ(num("SELECT count(*) FROM context_compressions WHERE tokens_after > budget_tokens"), 0);

  // A restart and a turn that needs no compaction: the stored summary is used, no summary call.
  const int64_t t = enqueue("c", "ok");
  drain(summarize(stub));
  std::tie(summary_requests, chat_requests) = requests(stub);
  EXPECT_EQ(static_cast<int64_t>(summary_requests.size()), summaries);
  const json payload = json::parse(
      str("SELECT payload FROM events WHERE type = 'context.compressed' AND task_id = " +
          std::to_string(t)));
  EXPECT_EQ(payload["summary_used"], true);
  EXPECT_EQ(payload["summarized"], false);
  EXPECT_EQ(payload["summary_id"], num("SELECT max(id) FROM context_summaries"));
  // Nothing deleted: every message is still stored.
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE chat_id = 'c'"), 30);
  // The dry run shows the summary in use and calls nothing.
  const auto dry = autonous(dir_, {"context", "--chat", "c", "--text", "x"}, summarize(stub));
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(json::parse(dry.out)["summary_used"], true);
  EXPECT_EQ(requests(stub).first.size(), static_cast<size_t>(summaries));
}

TEST_F(SummariesE2eTest, AFailingBlankOrHangingSummaryCallNeverLosesHistoryOrBlocksTheReply) {
  StubServer stub(dir_.path().string());
  for (const std::string fault : {"sum500", "sumgarbage", "sumhang"}) {
    SCOPED_TRACE(fault);
    const std::string chat = "f-" + fault;
    enqueue(chat, "[[stub:" + fault + "]] my name is Bo");
    for (int i = 0; i < 8; ++i) enqueue(chat, "filler " + std::string(300, 'f'));
  }
  drain(summarize(stub, {{"LLM_TIMEOUT_SECONDS", "1"}}));
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 27);
  EXPECT_EQ(num("SELECT count(*) FROM context_summaries"), 0);
  for (const std::string fault : {"sum500", "sumgarbage", "sumhang"}) {
    SCOPED_TRACE(fault);
    EXPECT_GE(num("SELECT count(*) FROM events WHERE type = 'context.summary_failed' AND "
                  "chat_id = 'f-" +
                  fault + "'"),
              1);
    EXPECT_EQ(num("SELECT count(*) FROM history WHERE chat_id = 'f-" + fault + "'"), 18);
  }
  EXPECT_EQ(num("SELECT count(*) FROM context_compressions WHERE tokens_after > budget_tokens"), 0);
  const json stats = json::parse(autonous(dir_, {"context", "stats"}, db_env()).out);
  EXPECT_GE(stats["summary_failures"].get<int64_t>(), 3);
  EXPECT_EQ(stats["summaries"], 0);
}

TEST_F(SummariesE2eTest, AFailureIsRetriedAtTheNextCompaction) {
  StubServer stub(dir_.path().string());
  // Two failures: the summarizer retries a transient one once itself, so the first compaction
  // fails; the next compaction succeeds.
  enqueue("r", "[[stub:sum500*2]] my name is Cy");
  for (int i = 0; i < 10; ++i) enqueue("r", "filler " + std::string(300, 'r'));
  drain(summarize(stub));
  EXPECT_GE(num("SELECT count(*) FROM events WHERE type = 'context.summary_failed'"), 1);
  EXPECT_GE(num("SELECT count(*) FROM context_summaries"), 1);
  EXPECT_NE(str("SELECT text FROM context_summaries ORDER BY id LIMIT 1").find("Cy"),
            std::string::npos);
}

TEST_F(SummariesE2eTest, SwitchingAHundredThousandMessageChatToSummarizeIsBounded) {
  StubServer stub(dir_.path().string());
  ASSERT_EQ(autonous(dir_, {"migrate"}, db_env()).exit_code, 0);
  {
    std::vector<std::vector<std::string>> rows;
    for (int i = 0; i < 100'000; ++i)
      rows.push_back({i % 2 ? "assistant" : "user",
                      "message " + std::to_string(i) + " about bread and ovens and flour"});
    insert_many("INSERT INTO history(chat_id, role, text) VALUES ('long', $1, $2)", rows);
  }
  ASSERT_EQ(autonous(dir_, {"chat", "set", "long", "--strategy", "summarize"}, db_env()).exit_code,
            0);
  enqueue("long", "and now?");
  drain(env(stub));  // the defaults otherwise: gpt-4o-mini's budget, HISTORY_WINDOW 100
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 1);
  // One compaction, a bounded span folded: what a turn reads (125 rows) leaves 65, one call.
  const auto [summary_requests, chat_requests] = requests(stub);
  EXPECT_GE(summary_requests.size(), 1u);
  EXPECT_LE(summary_requests.size(), 3u);
  const json s = json::parse(str("SELECT payload FROM events WHERE type = 'context.summarized'"));
  EXPECT_GE(s["skipped"].get<int64_t>(), 99'000);  // never read, counted
  EXPECT_LE(s["messages_covered"].get<int64_t>(), 125);
}

TEST_F(SummariesE2eTest, AnOutageAcrossRetriesMovesNoStateAndDropsNothing) {
  // The summarizer and the chat call fail together for two attempts (an outage). Only the turn
  // that is answered stores the chat's state: the failed attempts leave no back-off behind that
  // would drop history unsummarized, and the fact folds in once the provider is back.
  StubServer stub(dir_.path().string());
  ASSERT_EQ(autonous(dir_, {"migrate"}, db_env()).exit_code, 0);
  {
    std::vector<std::vector<std::string>> rows;
    for (int i = 0; i < 24; ++i)
      rows.push_back({i % 2 ? "assistant" : "user", i == 0 ? "[[stub:sum500*4]] my name is Fay"
                                                           : "filler " + std::string(300, 'o')});
    insert_many("INSERT INTO history(chat_id, role, text) VALUES ('o', $1, $2)", rows);
  }
  enqueue("o", "[[stub:503*2]] hello again");
  drain(summarize(stub, {{"RETRY_BASE_MS", "20"}}));
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 1);
  EXPECT_EQ(num("SELECT attempts FROM tasks"), 3);
  EXPECT_GE(num("SELECT count(*) FROM events WHERE type = 'context.summary_failed'"), 2);
  for (const auto& p : payloads("context.warning"))
    EXPECT_NE(p.value("reason", ""), "summary_backoff");
  // The answered attempt's summary fold succeeded (the four faults were spent by then) and
  // holds the fact from the very first message.
  ASSERT_EQ(num("SELECT count(*) FROM context_summaries"), 1);
  EXPECT_NE(str("SELECT text FROM context_summaries").find("Fay"), std::string::npos);
  EXPECT_EQ(num("SELECT summary_failures FROM context_state WHERE chat_id = 'o'"), 0);
}

TEST_F(SummariesE2eTest, ChatClearStartsANewSummaryChain) {
  StubServer stub(dir_.path().string());
  converse("k", 10);
  drain(summarize(stub));
  ASSERT_GE(num("SELECT count(*) FROM context_summaries"), 1);
  ASSERT_EQ(autonous(dir_, {"chat", "clear", "k"}, db_env()).exit_code, 0);
  const int64_t cleared = num("SELECT cleared_through FROM chat_settings WHERE chat_id = 'k'");
  const int64_t t = enqueue("k", "what is my name?");
  drain(summarize(stub));
  const json payload = json::parse(
      str("SELECT payload FROM events WHERE type = 'context.compressed' AND task_id = " +
          std::to_string(t)));
  EXPECT_EQ(payload["summary_used"], false);
  EXPECT_EQ(prompt_text(requests(stub).second.back()).find("Ada"), std::string::npos);
  for (int i = 0; i < 10; ++i) enqueue("k", "filler " + std::string(300, 'k'));
  drain(summarize(stub));
  EXPECT_GE(
      num("SELECT count(*) FROM context_summaries WHERE chain_start = " + std::to_string(cleared)),
      1);
  EXPECT_EQ(str("SELECT text FROM context_summaries WHERE chain_start = " +
                std::to_string(cleared) + " ORDER BY id DESC LIMIT 1")
                .find("Ada"),
            std::string::npos);
}

}  // namespace
}  // namespace autonous::testing
