// Tools through the real binary (#29): TOOLS_FILE's HTTP tools called by the worker against the
// stub (which asks for them, serves them at /tool/..., and with --rules strict refuses any
// conversation whose roles do not alternate), the loop's limits, what is stored and replayed,
// and the events.

#include <csignal>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/common/utf8.h"
#include "tests/e2e/tools_e2e_fixture.h"

namespace autonous::testing {
namespace {

TEST_F(ToolsE2eTest, AToolTurnIsStoredAndReplayedToAServerThatWantsRolesToAlternate) {
  StubServer stub(dir_.path().string(), 0, {"--rules", "strict"});
  const Env e = tools_env(stub);
  const int64_t first = enqueue("c", R"(Where is order 42? [[stub:tool:echo:{"q":"order 42"}]])");
  const int64_t second = enqueue("c", "Thanks. And when will it arrive?");
  drain(e);
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 2);
  // The turn's rows: the question, the call, its result, the reply; then the next turn's pair.
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE task_id = " + std::to_string(first)), 4);
  EXPECT_EQ(str("SELECT role FROM history WHERE task_id = " + std::to_string(first) +
                " AND tool_calls IS NOT NULL"),
            "assistant");
  const std::string id = str("SELECT tool_call_id FROM history WHERE role = 'tool'");
  EXPECT_FALSE(id.empty());
  EXPECT_NE(str("SELECT tool_calls FROM history WHERE tool_calls IS NOT NULL").find(id),
            std::string::npos);
  // The reply saw the tool's answer, which saw the model's arguments.
  EXPECT_NE(str("SELECT reply FROM tasks WHERE id = " + std::to_string(first)).find("order 42"),
            std::string::npos);
  // The second turn replayed the unit as the wire wants it, and the strict server took it.
  const std::vector<std::string> log = stub.log_lines();
  const nlohmann::json last = nlohmann::json::parse(log.back());
  const auto& messages = last["body"]["messages"];
  ASSERT_GE(messages.size(), 6u);
  bool replayed = false;
  for (size_t i = 0; i + 1 < messages.size(); ++i)
    if (messages[i].contains("tool_calls"))
      replayed = messages[i + 1]["role"] == "tool" && messages[i + 1]["tool_call_id"] == id;
  EXPECT_TRUE(replayed) << messages.dump();
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(second)), "done");
  // One tool.call event, without the tool's secret header anywhere in the events.
  const auto calls = payloads("tool.call", first);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["name"], "echo");
  EXPECT_EQ(calls[0]["source"], "http");
  EXPECT_EQ(calls[0]["status"], "ok");
  EXPECT_EQ(calls[0]["tool_call_id"], id);
  EXPECT_GT(calls[0]["result_bytes"].get<int64_t>(), 0);
  for (const auto& ev : events()) EXPECT_EQ(ev.dump().find("tool-secret-123"), std::string::npos);
  // The tool got the header, the model's arguments as its body.
  bool tool_seen = false;
  for (const std::string& line : log) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("path", "") == "/tool/echo") {
      tool_seen = true;
      EXPECT_EQ(j["body"], R"({"q":"order 42"})");
    }
  }
  EXPECT_TRUE(tool_seen);
}

TEST_F(ToolsE2eTest, AFailingHangingHugeOrUnknownToolIsAResultTheModelReadsNotAFailedTask) {
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub);
  const int64_t t = enqueue("c",
                            "all at once [[stub:tool:fail]] [[stub:tool:hang]] [[stub:tool:huge]] "
                            "[[stub:tool:badutf8]] [[stub:tool:nope]]");
  drain(e);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  const auto calls = payloads("tool.call", t);
  ASSERT_EQ(calls.size(), 5u);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& c : calls) by_name[c["name"]] = c;
  EXPECT_EQ(by_name["fail"]["status"], "error");
  EXPECT_EQ(by_name["fail"]["http_status"], 503);
  EXPECT_EQ(by_name["hang"]["status"], "error");
  EXPECT_GE(by_name["hang"]["latency_ms"].get<int64_t>(), 400);
  EXPECT_LT(by_name["hang"]["latency_ms"].get<int64_t>(), 5000);
  EXPECT_EQ(by_name["huge"]["status"], "error");
  EXPECT_LE(by_name["huge"]["result_bytes"].get<int64_t>(), 1 << 20);
  EXPECT_EQ(by_name["badutf8"]["status"], "ok");
  EXPECT_EQ(by_name["nope"]["status"], "error");
  // Stored as the model read them: one result per call, valid UTF-8, errors in words.
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE role = 'tool'"), 5);
  std::string results;
  for (int64_t id = 1; id <= num("SELECT max(id) FROM history"); ++id)
    results +=
        str("SELECT text FROM history WHERE role = 'tool' AND id = " + std::to_string(id)) + " | ";
  EXPECT_TRUE(common::is_valid_utf8(results));
  EXPECT_NE(results.find("HTTP 503"), std::string::npos) << results;
  EXPECT_NE(results.find("did not answer within 500 ms"), std::string::npos) << results;
  EXPECT_NE(results.find("it was not read"), std::string::npos) << results;
  EXPECT_NE(results.find("no tool named"), std::string::npos) << results;
}

TEST_F(ToolsE2eTest, AToolThatEchoesItsHeadersNeverLeaksThem) {
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub);
  const int64_t t = enqueue("c", "who am I [[stub:tool:whoami]]");
  drain(e);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  const std::string result = str("SELECT text FROM history WHERE role = 'tool'");
  EXPECT_NE(result.find("[redacted]"), std::string::npos) << result;  // the server did quote
  for (const std::string& where :
       {result, str("SELECT reply FROM tasks WHERE id = " + std::to_string(t))}) {
    EXPECT_EQ(where.find("tool-secret-123"), std::string::npos) << where;
    EXPECT_EQ(where.find("key-456789"), std::string::npos) << where;
  }
  for (const auto& ev : events()) {
    EXPECT_EQ(ev.dump().find("tool-secret-123"), std::string::npos) << ev.dump();
    EXPECT_EQ(ev.dump().find("key-456789"), std::string::npos) << ev.dump();
  }
  const auto calls = payloads("tool.call", t);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["error"], "error: the tool answered HTTP 401");  // no body in the event
}

TEST_F(ToolsE2eTest, TheNewestResultReachesTheModelWhenTheBudgetIsTight) {
  // History near the budget, then a result larger than the room left: it is cut to the room,
  // never replaced by the cleared marker (the review's case).
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub, {{"MAX_CONTEXT_TOKENS", "2000"}});
  for (int i = 0; i < 8; ++i) enqueue("c", "filler " + std::to_string(i) + std::string(600, 'f'));
  std::string words;
  for (int i = 0; i < 600; ++i) words += "w" + std::to_string(i) + " ";
  const int64_t t = enqueue("c", "big [[stub:tool:echo:{\"q\":\"" + words + "\"}]]");
  drain(e);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  const nlohmann::json last = nlohmann::json::parse(stub.log_lines().back());
  const auto& messages = last["body"]["messages"];
  ASSERT_EQ(messages.back()["role"], "tool") << last.dump().substr(0, 2000);
  EXPECT_EQ(messages.back()["content"].get<std::string>().find("result cleared"),
            std::string::npos);
  EXPECT_NE(messages.back()["content"].get<std::string>().find("w0 "), std::string::npos);
  EXPECT_TRUE(payloads("tool.call", t)[0]["cut"].get<bool>());
}

TEST_F(ToolsE2eTest, AStepRequestKeepsTheBudgetWhenTheQuestionLeftNoRoom) {
  // A question that takes nearly the whole budget leaves a result no room: the step's request
  // leaves the oldest history out, a user turn at a time, rather than go over (before: the
  // result's least 64 tokens and its framing went over the budget), and a strict server takes it.
  StubServer stub(dir_.path().string(), 0, {"--rules", "strict"});
  const Env e = tools_env(stub, {{"MAX_CONTEXT_TOKENS", "2000"}});
  for (int i = 0; i < 4; ++i) enqueue("c", "filler " + std::to_string(i) + std::string(300, 'f'));
  std::string words;
  for (int i = 0; i < 1300; ++i) words += "q" + std::to_string(i % 97) + " ";
  const int64_t t = enqueue("c", words + R"([[stub:tool:echo:{"q":"a long answer please"}]])");
  drain(e);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  const auto requests = payloads("llm.request", t);
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& r : requests)
    EXPECT_LE(r["estimated_tokens"].get<int64_t>(), r["budget_tokens"].get<int64_t>()) << r.dump();
  const nlohmann::json last = nlohmann::json::parse(stub.log_lines().back());
  const auto& messages = last["body"]["messages"];
  ASSERT_EQ(messages.back()["role"], "tool");
  EXPECT_EQ(messages[messages.size() - 2]["role"], "assistant");
  EXPECT_EQ(messages[messages.size() - 3]["content"].get<std::string>().rfind("q0 q1", 0), 0u);
}

TEST_F(ToolsE2eTest, OneReplysCallsRunAtOnce) {
  // The stub's /tool/together answers "together" only when three of its calls are in flight at
  // once (within 3 s): run one after another, each would wait alone.
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub);
  const int64_t t =
      enqueue("c", "[[stub:tool:together:{}]] [[stub:tool:together:{}]] [[stub:tool:together:{}]]");
  drain(e);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  const auto calls = payloads("tool.call", t);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE role = 'tool' AND text = 'together'"), 3);
  // Stored in the calls' order, each result after its call's id.
  const nlohmann::json asked =
      nlohmann::json::parse(str("SELECT tool_calls FROM history WHERE tool_calls IS NOT NULL"));
  ASSERT_EQ(asked.size(), 3u);
  for (size_t k = 0; k < 3; ++k)
    EXPECT_EQ(str("SELECT tool_call_id FROM history WHERE role = 'tool' ORDER BY id LIMIT 1 "
                  "OFFSET " +
                  std::to_string(k)),
              asked[k]["id"].get<std::string>());
}

TEST_F(ToolsE2eTest, AReplyOfTooManyCallsKeepsSixteenAndOneThatOutgrowsTheBudgetFails) {
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub, {{"MAX_CONTEXT_TOKENS", "2000"}});
  // 40 calls in one reply: 16 are kept, run and stored, the rest neither.
  const int64_t many = enqueue("a", "[[stub:tool-many:echo:40:3]]");
  // Two calls whose arguments alone (2 x 20 KB) outgrow a 2 000-token budget: the task fails
  // with a reason rather than send a request over the budget.
  const int64_t big = enqueue("b", "[[stub:tool-many:echo:2:20000]]");
  drain(e);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(many)), "done");
  EXPECT_EQ(payloads("tool.call", many).size(), 16u);
  EXPECT_EQ(nlohmann::json::parse(str("SELECT tool_calls FROM history WHERE chat_id = 'a' AND "
                                      "tool_calls IS NOT NULL"))
                .size(),
            16u);
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE chat_id = 'a' AND role = 'tool'"), 16);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(big)), "failed");
  const auto failed = payloads("turn.failed", big);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]["reason"], "tool_budget");
  for (const auto& r : payloads("llm.request", big))
    EXPECT_LE(r["estimated_tokens"].get<int64_t>(), r["budget_tokens"].get<int64_t>());
}

TEST_F(ToolsE2eTest, OneStepMeansTheModelAnswersInText) {
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub, {{"TOOL_MAX_STEPS", "1"}});
  const int64_t t = enqueue("c", "[[stub:tool:echo]] please");
  drain(e);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  EXPECT_TRUE(payloads("tool.call", t).empty());
  const nlohmann::json last = nlohmann::json::parse(stub.log_lines().back());
  EXPECT_EQ(last["body"]["tool_choice"], "none");
}

TEST_F(ToolsE2eTest, TheLoopEndsAtToolMaxStepsWithATextAnswer) {
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub, {{"TOOL_MAX_STEPS", "3"}});
  const int64_t t = enqueue("c", "forever [[stub:tool-loop:echo]]");
  drain(e);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  EXPECT_EQ(payloads("tool.call", t).size(), 2u);  // three model calls, the last answers
  int chat_calls = 0;
  std::string last_choice;
  for (const std::string& line : stub.log_lines()) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("path", "").find("/chat/completions") == std::string::npos) continue;
    ++chat_calls;
    last_choice = j["body"].value("tool_choice", "");
  }
  EXPECT_EQ(chat_calls, 3);
  EXPECT_EQ(last_choice, "none");
  // Every call kept a distinct id although the server numbered each reply's calls from 0.
  EXPECT_EQ(num("SELECT count(DISTINCT tool_call_id) FROM history WHERE role = 'tool'"), 2);
}

TEST_F(ToolsE2eTest, ALongResultIsStoredCutWithItsHeadAndTail) {
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub, {{"TOOL_RESULT_MAX_TOKENS", "60"}});
  std::string words;
  for (int i = 0; i < 400; ++i) words += "word" + std::to_string(i) + " ";
  const int64_t t = enqueue("c", "long [[stub:tool:echo:{\"q\":\"" + words + "end\"}]]");
  drain(e);
  const auto calls = payloads("tool.call", t);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(calls[0]["cut"].get<bool>());
  EXPECT_LE(calls[0]["result_tokens"].get<int64_t>(), 60);
  const std::string stored = str("SELECT text FROM history WHERE role = 'tool'");
  EXPECT_NE(stored.find("word0 "), std::string::npos);
  EXPECT_NE(stored.find("end"), std::string::npos);
  EXPECT_EQ(stored.find("word200 "), std::string::npos);
}

TEST_F(ToolsE2eTest, ToolPairsSurviveCompactionsAtASmallBudgetOnAStrictServer) {
  StubServer stub(dir_.path().string(), 0, {"--rules", "strict"});
  const Env e = tools_env(stub, {{"MAX_CONTEXT_TOKENS", "1200"}, {"HISTORY_WINDOW", "12"}});
  for (int i = 0; i < 24; ++i)
    enqueue("c", "question " + std::to_string(i) +
                     (i % 2 ? R"( [[stub:tool:echo:{"q":"item )" + std::to_string(i) + R"("}]])"
                            : std::string(" about the weather")));
  drain(e);
  // Every request was accepted: no orphan result, no call without its result, before and after
  // the compactions.
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 24);
  int compactions = 0;
  for (const auto& p : payloads("context.compressed")) compactions += !p["compaction"].is_null();
  EXPECT_GT(compactions, 0);
  // Stored units were replayed as tool messages (not only each turn's own steps).
  int replays = 0;
  for (const std::string& line : stub.log_lines()) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("path", "").find("/chat/completions") == std::string::npos) continue;
    const auto& m = j["body"]["messages"];
    for (size_t i = 0; i + 1 < m.size(); ++i)
      replays += m[i].value("role", "") == "tool" && m[i + 1].value("role", "") == "assistant" &&
                 !m[i + 1].contains("tool_calls") && i + 2 < m.size();
  }
  EXPECT_GT(replays, 0);
  // The strict server does refuse what does not alternate: a front end's tool row after a user
  // message is user text after user text.
  insert_many("INSERT INTO history(chat_id, role, text) VALUES ($1, $2, $3)",
              {{"legacy", "user", "look it up"}, {"legacy", "tool", "{\"status\": 1}"}});
  const int64_t refused = enqueue("legacy", "and?");
  drain(e);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(refused)), "failed");
  EXPECT_NE(str("SELECT error FROM tasks WHERE id = " + std::to_string(refused))
                .find("roles must alternate"),
            std::string::npos);
  for (const auto& p : payloads("llm.response"))
    EXPECT_LE(p["estimated_tokens"].get<int64_t>(), 1200) << p.dump();
}

TEST_F(ToolsE2eTest, ABadToolsFileStopsTheWorkerAtStartNamingTheEntry) {
  StubServer stub(dir_.path().string());
  Env e = env(stub);
  const std::string path = dir_.file("bad.json");
  std::ofstream(path) << R"({"tools": [{"name": "ok", "url": "http://127.0.0.1:1/"},
                                      {"name": "bad name!", "url": "http://127.0.0.1:1/"}]})";
  e["TOOLS_FILE"] = path;
  const ProcessResult r = autonous(dir_, {"worker", "--drain"}, e);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("TOOLS_FILE"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tools[1]"), std::string::npos) << r.err;
  e["TOOLS_FILE"] = dir_.file("missing.json");
  EXPECT_EQ(autonous(dir_, {"worker", "--drain"}, e).exit_code, 2);
  // An MCP server is left out with a warning (this version runs HTTP tools only).
  std::ofstream(path) << R"({"tools": [{"name": "ok", "url": "http://127.0.0.1:1/"}],
                            "mcp_servers": [{"name": "fs", "command": ["/bin/true"]}]})";
  e["TOOLS_FILE"] = path;
  const ProcessResult ok = autonous(dir_, {"worker", "--drain"}, e);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.err.find("MCP server \"fs\" left out"), std::string::npos) << ok.err;
}

TEST_F(ToolsE2eTest, AStopDuringParallelCallsAbortsThemAndReleasesTheTask) {
  hang_ms_ = 20000;
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub, {{"SHUTDOWN_GRACE_SECONDS", "1"}});
  const int64_t t = enqueue("c", "[[stub:tool:hang]] [[stub:tool:hang]] [[stub:tool:hang]]");
  Process worker({autonous_bin(), "worker"}, e, dir_.path().string());
  for (int i = 0; i < 200; ++i) {  // until the three calls are in flight
    size_t calling = 0;
    for (const std::string& line : stub.log_lines())
      calling += line.find("/tool/hang") != std::string::npos;
    if (calling >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  worker.signal(SIGTERM);
  // The grace ends after 1 s: the calls are aborted (each would hang 20 s), the task released.
  const auto r = worker.wait(std::chrono::seconds(10));
  ASSERT_TRUE(r) << "the worker did not stop";
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "queued");
  EXPECT_EQ(num("SELECT count(*) FROM history"), 0);
}

TEST_F(ToolsE2eTest, AWorkerKilledDuringAToolCallAnswersOnceAfterARestart) {
  hang_ms_ = 20000;
  StubServer stub(dir_.path().string());
  const Env e = tools_env(stub, {{"TASK_LEASE_SECONDS", "2"}, {"SHUTDOWN_GRACE_SECONDS", "1"}});
  const int64_t t = enqueue("c", "slow [[stub:tool:hang]]");
  {
    Process worker({autonous_bin(), "worker"}, e, dir_.path().string());
    // Wait until the tool is being called, then kill -9.
    for (int i = 0; i < 100; ++i) {
      bool calling = false;
      for (const std::string& line : stub.log_lines())
        calling = calling || line.find("/tool/hang") != std::string::npos;
      if (calling) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    worker.signal(SIGKILL);
    worker.wait(std::chrono::seconds(5));
  }
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "running");
  EXPECT_EQ(num("SELECT count(*) FROM history"), 0);  // nothing of the turn was stored
  hang_ms_ = 300;  // the tool times out quickly on the second try
  const Env again = tools_env(stub, {{"TASK_LEASE_SECONDS", "2"}});
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // the lease expires
  drain(again);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE task_id = " + std::to_string(t) +
                " AND role = 'assistant' AND tool_calls IS NULL"),
            1);
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE role = 'tool'"), 1);
}

}  // namespace
}  // namespace autonous::testing
