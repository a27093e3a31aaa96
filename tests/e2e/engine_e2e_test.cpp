// The context engine end to end: the real binary, the loopback stub and a real SQLite file.
// Per-chat settings (chat show/set/reset/clear) override the environment and survive restarts,
// bad values are refused with nothing written, `chat clear` takes effect on the next turn, a
// provider's "context length exceeded" is recompressed and retried once, levels and stats show
// in events.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class EngineE2eTest : public E2eTest {
 protected:
  ProcessResult cli(const std::vector<std::string>& args, Env extra = {}) {
    Env e = db_env();
    for (auto& [k, v] : extra) e[k] = v;
    return autonous(dir_, args, e);
  }
  // The context.compressed payload of a task (the last one when it has several).
  json compressed(int64_t task) {
    return json::parse(
        str("SELECT payload FROM events WHERE type = 'context.compressed' AND "
            "task_id = " +
            std::to_string(task) + " ORDER BY id DESC LIMIT 1"));
  }
  void add_history(const std::string& chat, int n, size_t chars) {
    cli({"migrate"});
    std::vector<std::vector<std::string>> rows;
    for (int i = 0; i < n; ++i)
      rows.push_back({chat, i % 2 == 0 ? "user" : "assistant",
                      "turn " + std::to_string(i) + " " + std::string(chars, 'w')});
    insert_many("INSERT INTO history(chat_id, role, text) VALUES ($1, $2, $3)", rows);
  }
};

TEST_F(EngineE2eTest, ChatShowSetResetClear) {
  auto r = cli({"chat", "show", "c1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["settings"], json::object());
  EXPECT_EQ(j["effective"]["strategy"]["value"], "token_budget");
  EXPECT_EQ(j["effective"]["strategy"]["from"], "env");
  EXPECT_EQ(j["effective"]["max_tokens"]["value"], 111616);  // gpt-4o-mini preset

  r = cli({"chat", "set", "c1", "--strategy", "sliding_window", "--recent", "4", "--max-tokens",
           "3000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = cli({"chat", "set", "c1", "--soft", "0.5", "--warn", "0.6", "--target", "0.4"});  // merges
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = json::parse(cli({"chat", "show", "c1"}).out);
  EXPECT_EQ(j["settings"],
            json::parse(R"({"strategy":"sliding_window","max_tokens":3000,)"
                        R"("recent_messages":4,"soft":0.5,"warn":0.6,"target":0.4})"));
  EXPECT_EQ(j["effective"]["recent_messages"]["from"], "chat");
  EXPECT_EQ(j["effective"]["hard"]["from"], "env");
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'chat.settings'"), 2);

  r = cli({"chat", "reset", "c1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(str("SELECT settings FROM chat_settings WHERE chat_id = 'c1'"), "{}");
  r = cli({"chat", "reset", "c1"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("nothing to reset"), std::string::npos);

  add_history("c1", 3, 10);
  r = cli({"chat", "clear", "c1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("after history id 3"), std::string::npos) << r.out;
  EXPECT_EQ(num("SELECT cleared_through FROM chat_settings WHERE chat_id = 'c1'"), 3);
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE chat_id = 'c1'"), 3);  // kept for audit
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'chat.cleared'"), 1);
}

TEST_F(EngineE2eTest, BadChatSettingsAreRefusedWithExitTwoAndNothingWritten) {
  ASSERT_EQ(cli({"chat", "set", "c1", "--recent", "7"}).exit_code, 0);
  const std::string before = str("SELECT settings FROM chat_settings WHERE chat_id = 'c1'");
  const int64_t events = num("SELECT count(*) FROM events");
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--strategy", "magic"}, "--strategy"},
      {{"--max-tokens", "0"}, "--max-tokens"},
      {{"--max-tokens", "20"}, "--max-tokens"},       // too small for the system prompt
      {{"--max-tokens", "5000000"}, "--max-tokens"},  // above gpt-4o-mini's window − reserve
      {{"--recent", "0"}, "--recent"},
      {{"--soft", "1.5"}, "--soft"},
      {{"--soft", "0.9"}, "--soft"},      // above warn 0.85
      {{"--target", "0.8"}, "--target"},  // above soft 0.70
      {{"--warn", "abc"}, "--warn"},
      {{}, "at least one"}};
  for (const auto& [flags, named] : bad) {
    std::vector<std::string> args = {"chat", "set", "c1"};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto r = cli(args);
    SCOPED_TRACE(r.err);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(named), std::string::npos);
  }
  EXPECT_EQ(str("SELECT settings FROM chat_settings WHERE chat_id = 'c1'"), before);
  EXPECT_EQ(num("SELECT count(*) FROM events"), events);
  EXPECT_EQ(cli({"chat", "set", "", "--recent", "3"}).exit_code, 2);
  EXPECT_EQ(cli({"chat", "show"}).exit_code, 2);
}

TEST_F(EngineE2eTest, ChatSettingsOverrideTheEnvironmentAndSurviveRestarts) {
  StubServer stub(dir_.path().string());
  add_history("a", 30, 20);
  add_history("b", 30, 20);
  ASSERT_EQ(cli({"chat", "set", "a", "--strategy", "sliding_window", "--recent", "3"}).exit_code,
            0);
  const int64_t a1 = enqueue("a", "first");
  const int64_t b1 = enqueue("b", "first");
  drain(stub);
  EXPECT_EQ(compressed(a1)["strategy"], "sliding_window");
  // sliding_window with 3: reads up to 3 x 3 + 8, compacts down to 3, or 4 to start on a user
  // message without cutting into the floor.
  EXPECT_EQ(compressed(a1)["original_count"], 17);
  EXPECT_EQ(compressed(a1)["compaction"], "window");
  const int64_t kept = compressed(a1)["compressed_count"].get<int64_t>();
  EXPECT_GE(kept, 3);
  EXPECT_LE(kept, 4);
  EXPECT_EQ(compressed(a1)["settings"], "chat");
  EXPECT_EQ(compressed(b1)["strategy"], "token_budget");
  EXPECT_EQ(compressed(b1)["original_count"], 30);
  // A new worker process (a restart) reads the same stored settings.
  const int64_t a2 = enqueue("a", "second");
  drain(stub, {{"CONTEXT_STRATEGY", "token_budget"}, {"HISTORY_WINDOW", "40"}});
  EXPECT_EQ(compressed(a2)["strategy"], "sliding_window");
  // The stored state survived the restart: the prompt only grew at its end (+ the last pair).
  EXPECT_EQ(compressed(a2)["original_count"], kept + 2);
  EXPECT_EQ(compressed(a2)["compaction"], nullptr);
  // Reset: back to the environment on the next turn.
  ASSERT_EQ(cli({"chat", "reset", "a"}).exit_code, 0);
  const int64_t a3 = enqueue("a", "third");
  drain(stub, {{"HISTORY_WINDOW", "40"}});
  EXPECT_EQ(compressed(a3)["strategy"], "token_budget");
  EXPECT_EQ(compressed(a3)["original_count"], kept + 4);
}

TEST_F(EngineE2eTest, ChatClearTakesEffectOnTheNextTurn) {
  StubServer stub(dir_.path().string());
  enqueue("c", "my name is Ada");
  drain(stub);
  ASSERT_EQ(cli({"chat", "clear", "c"}).exit_code, 0);
  const int64_t t2 = enqueue("c", "what is my name?");
  drain(stub);
  EXPECT_EQ(compressed(t2)["original_count"], 0);
  // The request the stub saw: system + the new user message only.
  const json last = json::parse(stub.log_lines().back());
  ASSERT_EQ(last["body"]["messages"].size(), 2u);
  EXPECT_EQ(last["body"]["messages"][1]["content"], "what is my name?");
  const int64_t t3 = enqueue("c", "and now?");
  drain(stub);
  EXPECT_EQ(compressed(t3)["original_count"], 2);  // history after the clear point counts again
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE chat_id = 'c'"), 6);
}

TEST_F(EngineE2eTest, ContextOverflowRecompressesAndRetriesOnceThenFails) {
  StubServer stub(dir_.path().string());
  add_history("ok", 20, 200);
  add_history("bad", 20, 200);
  const int64_t ok = enqueue("ok", "[[stub:overflow*1]] hello");
  const int64_t bad = enqueue("bad", "[[stub:overflow*5]] hello");
  drain(stub, {{"TASK_MAX_ATTEMPTS", "3"}});
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(ok)), "done");
  EXPECT_EQ(num("SELECT attempts FROM tasks WHERE id = " + std::to_string(ok)), 1);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'context.compressed' AND task_id = " +
                std::to_string(ok)),
            2);
  const json second = compressed(ok);
  EXPECT_EQ(second["after_overflow"], true);
  EXPECT_NE(second["level"], "none");
  EXPECT_LE(second["budget_tokens"].get<int64_t>(), 111616 * 60 / 100);
  EXPECT_EQ(field("llm.retry", ok, "reason"), "context_length_exceeded");
  // Twice too long: failed at once with that reason, no queue-level retries.
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(bad)), "failed");
  EXPECT_EQ(num("SELECT attempts FROM tasks WHERE id = " + std::to_string(bad)), 1);
  EXPECT_EQ(field("turn.failed", bad, "reason"), "context_length_exceeded");
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE chat_id = 'bad'"), 20);  // nothing lost
}

TEST_F(EngineE2eTest, AnOverflowInAnUnknownWordingGetsOneSmallerTryAndIsLearnedOnlyIfAnswered) {
  StubServer stub(dir_.path().string());
  add_history("vague", 20, 200);
  add_history("never", 20, 200);
  // "Input is too long for requested model." (a plain 400): probably an overflow.
  const int64_t ok = enqueue("vague", "[[stub:vagueoverflow*1]] hello");
  drain(stub, {{"TASK_MAX_ATTEMPTS", "3"}});
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(ok)), "done");
  EXPECT_EQ(field("llm.retry", ok, "reason"), "probable_context_overflow");
  EXPECT_EQ(compressed(ok)["after_overflow"], true);
  // Answered at the smaller budget: learned for later turns.
  ASSERT_EQ(payloads("context.limit_learned").size(), 1u);
  const int64_t learned = payloads("context.limit_learned")[0]["budget_tokens"].get<int64_t>();
  EXPECT_LE(learned, 111616 * 60 / 100);
  EXPECT_GE(learned, 111616 / 2);  // a guess halves the budget at most
  // Refused again at the smaller budget: fails as any 400 does, and nothing more is learned.
  const int64_t bad = enqueue("never", "[[stub:vagueoverflow*5]] hello");
  drain(stub, {{"TASK_MAX_ATTEMPTS", "3"}});
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(bad)), "failed");
  EXPECT_EQ(num("SELECT attempts FROM tasks WHERE id = " + std::to_string(bad)), 1);
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'llm.request' AND task_id = " +
                std::to_string(bad)),
            2);
  EXPECT_EQ(payloads("context.limit_learned").size(), 1u);
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE chat_id = 'never'"), 20);  // nothing lost
}

TEST_F(EngineE2eTest, LevelsShowInEventsAndContextStats) {
  StubServer stub(dir_.path().string());
  add_history("big", 40, 400);  // ~100 tokens each: 4 000 tokens of history
  add_history("small", 2, 10);
  const int64_t big = enqueue("big", "hello");
  const int64_t small = enqueue("small", "hello");
  drain(stub, {{"MAX_CONTEXT_TOKENS", "2000"}, {"TOKEN_COUNTER", "chars4"}});
  const json b = compressed(big);
  EXPECT_EQ(b["level"], "emergency");
  EXPECT_GT(b["tokens_before"].get<int64_t>(), 4000);
  EXPECT_LE(b["tokens_after"].get<int64_t>(), 2000);
  EXPECT_GT(b["dropped_count"].get<int64_t>(), 0);
  EXPECT_EQ(b["rounds"], 1);
  EXPECT_EQ(b["summary_used"], false);
  EXPECT_EQ(compressed(small)["level"], "none");
  EXPECT_EQ(num("SELECT count(*) FROM context_compressions WHERE level = 'emergency'"), 1);

  const auto r = cli({"context", "stats"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = json::parse(r.out);
  EXPECT_EQ(s["turns"], 2);
  EXPECT_EQ(s["compressions"]["emergency"], 1);
  EXPECT_EQ(s["compressions"]["none"], 1);
  EXPECT_EQ(s["emergency"], 1);
  EXPECT_EQ(s["tokens_saved"],
            b["tokens_before"].get<int64_t>() - b["tokens_after"].get<int64_t>());
  EXPECT_GT(s["average_compression_ratio"].get<double>(), 0.0);
  EXPECT_LT(s["average_compression_ratio"].get<double>(), 1.0);
  EXPECT_EQ(s["models"][0]["calls"], 2);  // the estimate vs the API's prompt_tokens
  const json only_small = json::parse(cli({"context", "stats", "--chat", "small"}).out);
  EXPECT_EQ(only_small["turns"], 1);
  EXPECT_EQ(only_small["emergency"], 0);

  // The turn compacted and stored where the verbatim part starts: the dry run of the next turn
  // needs no compaction, its prompt only grows at the end.
  EXPECT_EQ(b["compaction"], "threshold");
  const auto dry = cli({"context", "--chat", "big", "--text", "next"},
                       {{"MAX_CONTEXT_TOKENS", "2000"}, {"TOKEN_COUNTER", "chars4"}});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  const json d = json::parse(dry.out);
  EXPECT_EQ(d["compaction"], nullptr);
  EXPECT_EQ(d["verbatim_after"], b["verbatim_after"]);
  EXPECT_NE(d["decision"].get<std::string>().find("no compaction"), std::string::npos)
      << d["decision"];
}

TEST_F(EngineE2eTest, BadEngineEnvironmentIsRefusedAtStartNamingTheVariable) {
  StubServer stub(dir_.path().string());
  const std::vector<std::pair<Env, std::string>> bad = {
      {{{"CONTEXT_STRATEGY", "magic"}}, "CONTEXT_STRATEGY"},
      {{{"CONTEXT_SOFT_THRESHOLD", "0.9"}}, "CONTEXT_SOFT_THRESHOLD"},
      {{{"CONTEXT_TARGET", "0"}}, "CONTEXT_TARGET"},
      {{{"CONTEXT_HARD_THRESHOLD", "1.5"}}, "CONTEXT_HARD_THRESHOLD"},
      {{{"RECENT_MESSAGE_COUNT", "0"}}, "RECENT_MESSAGE_COUNT"},
      {{{"RESERVE_OUTPUT_TOKENS", "200000"}}, "RESERVE_OUTPUT_TOKENS"},
      {{{"CONTEXT_WINDOW", "100"}, {"RESERVE_OUTPUT_TOKENS", "90"}}, "CONTEXT_WINDOW"}};
  for (const auto& [extra, variable] : bad) {
    const auto r = autonous(dir_, {"worker", "--drain"}, env(stub, extra));
    SCOPED_TRACE(r.err);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(variable), std::string::npos);
  }
}

}  // namespace
}  // namespace autonous::testing
