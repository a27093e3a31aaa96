// Token counting through the real binary: `autonous tokens`, and the promise that
// with OPENAI_MODEL=gpt-4o-mini a Chinese chat's prompt never exceeds MAX_CONTEXT_TOKENS by
// the exact o200k count (chars4 would overflow it).

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/tokens/bpe_counter.h"
#include "tests/e2e/e2e_support.h"
#include "tests/support/token_data.h"

namespace autonous::testing {
namespace {

class TokensE2eTest : public E2eTest {
 protected:
  // Ollama with num_ctx: the server cuts every prompt to 1 500 of its tokens and says so only
  // through its count. A chat grows past it, a few percent a turn; its count stays put; the
  // window is learned and later prompts stay within it.
  void silent_window_is_learned(const std::string& model, int turns) {
    StubServer stub(dir_.path().string(), 0, {"--silent-limit", "1500"});
    const Env env = db_env({{"OPENAI_BASE_URL", stub.base_url()},
                            {"OPENAI_MODEL", model},
                            {"TOKEN_COUNTER", "estimate"},
                            {"POLL_INTERVAL_MS", "20"},
                            {"SQLITE_SYNCHRONOUS", "NORMAL"}});
    std::string text = "Tell me about sourdough bread: its flour, its starter and its crumb.";
    for (int i = 0; i < 2; ++i) text += " " + text;  // ~300 characters: ~75 of the stub's tokens
    for (int i = 0; i < turns; ++i)
      ASSERT_EQ(
          autonous(dir_, {"enqueue", "--chat", "c", "Turn " + std::to_string(i) + ". " + text}, env)
              .exit_code,
          0);
    drain(env);
    EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), turns);
    const auto learned = payloads("context.limit_learned");
    ASSERT_EQ(learned.size(), 1u);
    const int64_t plateau = learned[0]["server_tokens"].get<int64_t>();
    EXPECT_GE(plateau, 1500);  // the stub's count: its limit, plus what it adds (1)
    EXPECT_LE(plateau, 1501);
    EXPECT_TRUE(learned[0]["stated_limit"].is_null());
    const int64_t budget = learned[0]["budget_tokens"].get<int64_t>();
    EXPECT_GT(budget, 1000);
    EXPECT_LT(budget, 1500);
    // Before it was learned at most three prompts were cut (the count at 1 500); after it, none:
    // the prompts built after the learned budget never reached the window (the turn that learned
    // it records it before its own answer).
    const auto responses = payloads("llm.response");
    ASSERT_EQ(responses.size(), static_cast<size_t>(turns));
    int cut = 0;
    for (const auto& r : responses)
      cut += r["usage"]["prompt_tokens"].get<int64_t>() >= 1500 ? 1 : 0;
    EXPECT_GE(cut, 2);
    EXPECT_LE(cut, 3);
    bool learned_seen = false;
    bool checking = false;
    int after = 0;
    for (const auto& e : events()) {
      if (e["type"] == "context.limit_learned") learned_seen = true;
      if (learned_seen && e["type"] == "llm.request") checking = true;
      if (checking && e["type"] == "llm.response") {
        ++after;
        EXPECT_LT(e["payload"]["usage"]["prompt_tokens"].get<int64_t>(), 1500) << e.dump();
      }
    }
    EXPECT_GE(after, 5);
    int told = 0;
    for (const auto& w : payloads("context.warning"))
      told += w["message"].get<std::string>().find("context limits --clear") != std::string::npos;
    EXPECT_EQ(told, 1);
  }
};

TEST_F(TokensE2eTest, TokensCommandCountsFilesAndStdin) {
  const std::string file = dir_.file("t.txt");
  std::ofstream(file) << "你好，世界！Hello world\n";
  auto r = autonous(dir_, {"tokens", "--encoding", "o200k_base", file}, db_env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto o200k = tokens::load_bpe_counter("o200k_base", tokenizer_data_dir());
  EXPECT_EQ(j["encoding"], "o200k_base");
  EXPECT_EQ(j["tokens"], o200k->count_text("你好，世界！Hello world\n"));
  EXPECT_EQ(j["bytes"], 30);
  // Default: what auto picks for the model.
  r = autonous(dir_, {"tokens"}, db_env({{"OPENAI_MODEL", "gpt-3.5-turbo"}}), "hello");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["encoding"], "cl100k_base");
  // An open family's model: its exact counter.
  r = autonous(dir_, {"tokens"}, db_env({{"OPENAI_MODEL", "llama3.1:8b"}}), "hello world");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["encoding"], "llama3");
  EXPECT_EQ(nlohmann::json::parse(r.out)["tokens"], 2);
  // Unknown model: the fallback, with a warning.
  r = autonous(dir_, {"tokens"}, db_env({{"OPENAI_MODEL", "claude-sonnet-4-5"}}), "hello");
  EXPECT_EQ(nlohmann::json::parse(r.out)["encoding"], "estimate");
  EXPECT_NE(r.err.find("claude-sonnet-4-5"), std::string::npos) << r.err;
}

TEST_F(TokensE2eTest, MissingRanksForAnExplicitEncodingIsAConfigurationError) {
  const auto r = autonous(
      dir_, {"tokens"},
      db_env({{"TOKEN_COUNTER", "o200k_base"}, {"TOKENIZER_DATA_DIR", dir_.file("none")}}), "x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("TOKEN_COUNTER"), std::string::npos) << r.err;
  EXPECT_EQ(autonous(dir_, {"tokens", "--encoding", "p50k_base"}, db_env(), "x").exit_code, 2);
  const auto q = autonous(
      dir_, {"tokens"},
      db_env({{"TOKEN_COUNTER", "qwen3"}, {"TOKENIZER_DATA_DIR", dir_.file("none")}}), "x");
  EXPECT_EQ(q.exit_code, 2);
  EXPECT_NE(q.err.find("qwen3.tokenizer.json is missing"), std::string::npos) << q.err;
}

TEST_F(TokensE2eTest, ChineseChatPromptFitsTheBudgetByTheExactO200kCount) {
  autonous(dir_, {"migrate"}, db_env());
  {
    std::vector<std::vector<std::string>> rows;
    for (int i = 0; i < 120; ++i)
      rows.push_back(
          {i % 2 == 0 ? "user" : "assistant",
           "第" + std::to_string(i) +
               "条消息：我们的面包店每天早上七点开门，顾客从黎明就开始排队。酸面团面包需要发"
               "酵三十六个小时，"
               "订单超过五十元免运费。请问周六能预留两根法棍吗？当然可以！"});
    insert_many("INSERT INTO history(chat_id, role, text) VALUES ('zh', $1, $2)", rows);
  }
  const auto o200k = tokens::load_bpe_counter("o200k_base", tokenizer_data_dir());
  auto exact_prompt_tokens = [&](const nlohmann::json& out) {
    std::vector<common::Message> messages;
    for (const auto& m : out["messages"])
      messages.push_back(
          {*common::parse_role(m["role"].get<std::string>()), m["content"].get<std::string>(), 0});
    return o200k->count_prompt(messages);
  };
  const Env env = db_env({{"OPENAI_MODEL", "gpt-4o-mini"},
                          {"MAX_CONTEXT_TOKENS", "1000"},
                          {"HISTORY_WINDOW", "120"},
                          // The counter's fit is measured on the history alone: recall's evidence
                          // reserve would lower the history's share (RecallE2eTest covers recall).
                          {"RECALL", "off"},
                          {"SYSTEM_PROMPT", "你是一个乐于助人的面包店助手。"}});
  auto r = autonous(dir_, {"context", "--chat", "zh", "--text", "我的订单什么时候到？"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto exact = nlohmann::json::parse(r.out);
  EXPECT_EQ(exact["token_counter"], "o200k_base");
  EXPECT_EQ(exact["estimated_tokens"].get<int64_t>(), exact_prompt_tokens(exact));
  EXPECT_LE(exact_prompt_tokens(exact), 1000);
  // A compaction aims at the 0.60 target (the next turns then only append): used, not wasted.
  EXPECT_GT(exact_prompt_tokens(exact), 550);
  EXPECT_GT(exact["dropped_count"].get<int>(), 0);

  // The seed's chars/4 believes the same budget holds far more: by the real count it overflows.
  Env chars4 = env;
  chars4["TOKEN_COUNTER"] = "chars4";
  r = autonous(dir_, {"context", "--chat", "zh", "--text", "我的订单什么时候到？"}, chars4);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto naive = nlohmann::json::parse(r.out);
  EXPECT_LE(naive["estimated_tokens"].get<int64_t>(), 1000);
  EXPECT_GT(exact_prompt_tokens(naive), 1000);
}

TEST_F(TokensE2eTest, ContextStatsReportsEstimateErrorPerModelAndCounter) {
  StubServer stub(dir_.path().string());
  const Env env = db_env({{"OPENAI_BASE_URL", stub.base_url()},
                          {"OPENAI_MODEL", "gpt-4o-mini"},
                          {"POLL_INTERVAL_MS", "20"},
                          {"SQLITE_SYNCHRONOUS", "NORMAL"}});
  for (const char* chat : {"a", "b", "a"})
    ASSERT_EQ(
        autonous(dir_, {"enqueue", "--chat", chat, "你好，请介绍一下你们的面包。"}, env).exit_code,
        0);
  ASSERT_EQ(autonous(dir_, {"worker", "--drain"}, env).exit_code, 0);

  auto r = autonous(dir_, {"context", "stats"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["models"].size(), 1u);
  const auto& m = j["models"][0];
  EXPECT_EQ(m["model"], "gpt-4o-mini");
  EXPECT_EQ(m["token_counter"], "o200k_base");
  EXPECT_EQ(m["calls"], 3);
  // The stub counts chars/4 + 1: it reports fewer tokens than o200k counts for Chinese.
  EXPECT_LT(m["actual_over_estimate"]["p50"].get<double>(), 1.0);
  EXPECT_GT(m["actual_over_estimate"]["p50"].get<double>(), 0.0);
  EXPECT_EQ(m["share_underestimated"], 0.0);

  r = autonous(dir_, {"context", "stats", "--chat", "b"}, env);
  EXPECT_EQ(nlohmann::json::parse(r.out)["models"][0]["calls"], 1);
  r = autonous(dir_, {"context", "stats", "--since", "2999-01-01"}, env);
  EXPECT_TRUE(nlohmann::json::parse(r.out)["models"].empty());
  EXPECT_EQ(autonous(dir_, {"context"}, env).exit_code, 2);  // --chat still required without stats
}

// Migration 0018 through the worker: every row of a chat ends with its exact count stored under
// its counter (the turns' rows when written, a front end's rows when a turn first reads them); an
// edited row's count is cleared and counted again by the next turn; the estimate stores none.
TEST_F(TokensE2eTest, EachHistoryRowsExactCountIsStoredOnceWithItsCounter) {
  StubServer stub(dir_.path().string());
  ASSERT_EQ(autonous(dir_, {"migrate"}, db_env()).exit_code, 0);
  std::vector<std::vector<std::string>> rows;
  for (int i = 0; i < 6; ++i)
    rows.push_back(
        {i % 2 ? "assistant" : "user", "Imported message " + std::to_string(i) +
                                           ": 我们的面包店每天早上七点开门, "
                                           "and the sourdough takes thirty-six hours. 🍞 " +
                                           std::string(i * 40, 'x')});
  insert_many("INSERT INTO history(chat_id, role, text) VALUES ('c', $1, $2)", rows);
  const Env env = db_env({{"OPENAI_BASE_URL", stub.base_url()},
                          {"OPENAI_MODEL", "gpt-4o-mini"},
                          {"POLL_INTERVAL_MS", "20"},
                          {"SQLITE_SYNCHRONOUS", "NORMAL"}});
  const auto o200k = tokens::load_bpe_counter("o200k_base", tokenizer_data_dir());
  const auto check_all_counted = [&](int64_t rows_expected) {
    EXPECT_EQ(num("SELECT count(*) FROM history WHERE chat_id = 'c'"), rows_expected);
    for (int64_t id = 1; id <= rows_expected; ++id) {
      const std::string where = " FROM history WHERE id = " + std::to_string(id);
      EXPECT_EQ(str("SELECT token_counter" + where), "o200k_base@1") << id;
      EXPECT_EQ(num("SELECT token_count" + where), o200k->count_text(str("SELECT text" + where)))
          << id;
    }
  };
  for (const char* text : {"When do you open on Saturday?", "周六能预留两根法棍吗？"})
    ASSERT_EQ(autonous(dir_, {"enqueue", "--chat", "c", text}, env).exit_code, 0);
  ASSERT_EQ(autonous(dir_, {"worker", "--drain"}, env).exit_code, 0);
  check_all_counted(10);

  // An edit clears the row's count; a dry run stores nothing; the next turn counts it again.
  insert_many("UPDATE history SET text = $1 WHERE id = 3",
              {{"An edited message, much longer than before: " + std::string(300, 'y')}});
  EXPECT_EQ(str("SELECT token_counter FROM history WHERE id = 3"), "");
  ASSERT_EQ(autonous(dir_, {"context", "--chat", "c", "--text", "hello"}, env).exit_code, 0);
  EXPECT_EQ(str("SELECT token_counter FROM history WHERE id = 3"), "");
  ASSERT_EQ(autonous(dir_, {"enqueue", "--chat", "c", "And on Sunday?"}, env).exit_code, 0);
  ASSERT_EQ(autonous(dir_, {"worker", "--drain"}, env).exit_code, 0);
  check_all_counted(12);

  // The estimate's counts are not stored.
  Env estimate = env;
  estimate["TOKEN_COUNTER"] = "estimate";
  ASSERT_EQ(autonous(dir_, {"enqueue", "--chat", "e", "hello there"}, estimate).exit_code, 0);
  ASSERT_EQ(autonous(dir_, {"worker", "--drain"}, estimate).exit_code, 0);
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE chat_id = 'e'"), 2);
  EXPECT_EQ(num("SELECT count(*) FROM history WHERE chat_id = 'e' AND token_count IS NULL AND "
                "token_counter IS NULL"),
            2);
}

TEST_F(TokensE2eTest, CalibrationFollowsTheServersCountBothWaysPerEndpoint) {
  StubServer stub(dir_.path().string(), 0, {"--usage-scale", "5"});  // the API counts 5x more
  // TOKEN_CALIBRATION is on by default.
  const Env env = db_env({{"OPENAI_BASE_URL", stub.base_url()},
                          {"OPENAI_MODEL", "claude-3-5-haiku"},  // a known window, no exact counter
                          {"TOKEN_COUNTER", "estimate"},
                          {"POLL_INTERVAL_MS", "20"},
                          {"SQLITE_SYNCHRONOUS", "NORMAL"}});
  // Prompts long enough to teach the calibration (kCalibrationMinTokens).
  std::string bread = "Tell me about sourdough bread: its flour, its starter, its crust and crumb.";
  for (int i = 0; i < 4; ++i) bread += " " + bread;
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(autonous(dir_, {"enqueue", "--chat", "c", bread}, env).exit_code, 0);
  drain(env);
  const double scale =
      std::stod(str("SELECT scale FROM token_calibration WHERE model = 'claude-3-5-haiku'"));
  EXPECT_GT(scale, 1.0);
  // The first turn ran at scale 1; later turns used the raised scale (the same process).
  const auto requests = payloads("llm.request");
  ASSERT_FALSE(requests.empty());
  EXPECT_EQ(requests.front()["calibration_scale"].get<double>(), 1.0);
  EXPECT_GT(requests.back()["calibration_scale"].get<double>(), 1.0);
  // Another endpoint that counts less (the stub's own count, chars / 4, is about 0.4 of the
  // estimate for English) has its own scale, lowered; the first one's stays.
  StubServer low(dir_.path().string());
  Env env2 = env;
  env2["OPENAI_BASE_URL"] = low.base_url();
  // (Long enough that the stub, which counts no framing, counts more than the framing.)
  std::string rye = "And rye? Tell me about rye bread: its flour, its starter and its crumb.";
  for (int i = 0; i < 4; ++i) rye += " " + rye;
  ASSERT_EQ(autonous(dir_, {"enqueue", "--chat", "d", rye}, env2).exit_code, 0);
  ASSERT_EQ(autonous(dir_, {"worker", "--drain"}, env2).exit_code, 0);
  EXPECT_EQ(num("SELECT count(*) FROM token_calibration"), 2);
  EXPECT_LT(std::stod(str("SELECT min(scale) FROM token_calibration")), 1.0);
  EXPECT_DOUBLE_EQ(std::stod(str("SELECT max(scale) FROM token_calibration")), scale);
}

TEST_F(TokensE2eTest,
       AModelOfUnknownWindowIsCalibratedBothWaysWithinWhatTheServerTookAndAfterARestart) {
  // A local model with no preset: calibrated both ways, the worker says at start how its
  // prompts grow (a server that counts less may be one that cuts prompts silently).
  StubServer stub(dir_.path().string());  // counts chars / 4: about 0.4 of the estimate
  const Env env = db_env({{"OPENAI_BASE_URL", stub.base_url()},
                          {"OPENAI_MODEL", "my-local-model"},
                          {"POLL_INTERVAL_MS", "20"},
                          {"SQLITE_SYNCHRONOUS", "NORMAL"}});
  std::string text = "Tell me about sourdough bread: its flour, its starter and its crumb.";
  for (int i = 0; i < 4; ++i) text += " " + text;
  for (int i = 0; i < 6; ++i)
    ASSERT_EQ(autonous(dir_, {"enqueue", "--chat", "c", text}, env).exit_code, 0);
  const ProcessResult run = drain(env);
  EXPECT_NE(run.err.find("has no known window"), std::string::npos) << run.err;
  EXPECT_LT(std::stod(str("SELECT coalesce(min(scale), 1) FROM token_calibration")), 0.6);
  const auto responses = payloads("llm.response");
  ASSERT_EQ(responses.size(), 6u);
  // The first answer of a chat teaches nothing downward for a model of unknown window (it may
  // have been cut); the second, whose count grew with the prompt, does.
  EXPECT_EQ(payloads("llm.request")[1]["calibration_scale"], 1.0);
  const double last = responses.back()["prompt_tokens_per_estimated"].get<double>();
  EXPECT_LE(last, 1.0);
  EXPECT_GE(last, 1.0 / 1.15);
  // Nothing was cut, nothing learned.
  EXPECT_EQ(num("SELECT count(*) FROM events WHERE type = 'context.limit_learned'"), 0);

  // Its prompts may be a quarter larger than the largest taken whole (window_probe.h). That size
  // is kept with the calibration, so a restarted worker (each `worker --drain` here) starts from
  // it instead of from the raw estimate's room.
  EXPECT_GT(num("SELECT proven_raw FROM token_calibration"), 0);
  // The prompts were capped at the raw estimate's room (8 000, the unknown model's budget, at the
  // scale it learned): under the budget.
  EXPECT_LT(payloads("llm.request").back()["budget_tokens"].get<int64_t>(), 8000);
  // A larger prompt taken whole by an earlier process lifts the cap in the next one.
  insert_many("UPDATE token_calibration SET proven_raw = $1", {{"100000"}});
  ASSERT_EQ(autonous(dir_, {"enqueue", "--chat", "c", text}, env).exit_code, 0);
  drain(env);
  EXPECT_EQ(payloads("llm.request").back()["budget_tokens"], 8000);
  EXPECT_EQ(num("SELECT proven_raw FROM token_calibration"), 100000);  // never lowered
}

TEST_F(TokensE2eTest, ASilentWindowIsLearnedForAModelOfKnownWindow) {
  // "llama3-local" takes Llama 3's preset (8 192): an Ollama model served under a plain name.
  // Before the probe, its scale went down with every cut count and every later answer was cut.
  silent_window_is_learned("llama3-local", 28);
}

TEST_F(TokensE2eTest, ASilentWindowIsLearnedForAModelOfUnknownWindow) {
  silent_window_is_learned("my-local-model", 28);
}

TEST_F(TokensE2eTest, AProxysHiddenPromptIsLearnedAsAnAddedPartNotASilentWindow) {
  // A server that adds 1 000 tokens of its own to every prompt counts far more per token on
  // average than per token of growth; its counts still rise with the chat. The calibration
  // learns the part as added tokens (a scale alone would fit it as a multiple of the text, and
  // the estimate of a longer prompt would land far above the server's count).
  StubServer stub(dir_.path().string(), 0, {"--hidden-prompt", "1000"});
  const Env env = db_env({{"OPENAI_BASE_URL", stub.base_url()},
                          {"OPENAI_MODEL", "my-local-model"},
                          {"POLL_INTERVAL_MS", "20"},
                          {"SQLITE_SYNCHRONOUS", "NORMAL"}});
  const std::string rye =
      "a question about rye bread, its sourdough starter, the crumb and the crust, and how "
      "long the dough should rest before it goes into a very hot oven";
  // Two chats in turn: the part is learned once two chats' lines imply it (the smallest).
  for (int i = 0; i < 40; ++i)
    ASSERT_EQ(
        autonous(dir_,
                 {"enqueue", "--chat", i % 2 ? "d" : "c", "Turn " + std::to_string(i) + ": " + rye},
                 env)
            .exit_code,
        0);
  drain(env);
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 40);
  EXPECT_TRUE(payloads("context.limit_learned").empty());
  const int64_t added = num("SELECT added_tokens FROM token_calibration");
  EXPECT_GE(added, 800);
  EXPECT_LE(added, 1100);
  const auto responses = payloads("llm.response");
  ASSERT_EQ(responses.size(), 40u);
  // The events carry it (two slots may store it in either order: near the table's).
  EXPECT_NEAR(responses.back()["calibration_added_tokens"].get<double>(), added, 100);
  EXPECT_NEAR(payloads("llm.request").back()["calibration_added_tokens"].get<double>(), added, 100);
  // The last turns' estimates: at most ~15 % above the server's count, never below it.
  for (size_t i = 32; i < responses.size(); ++i) {
    const double per = responses[i]["prompt_tokens_per_estimated"].get<double>();
    EXPECT_LE(per, 1.0) << i << responses[i].dump();
    EXPECT_GE(per, 1.0 / 1.15) << i << responses[i].dump();
  }
}

TEST_F(TokensE2eTest, CalibratedEstimateLandsJustAboveTheServersCountWithinAFewTurns) {
  // A server that counts less than the estimate, as Claude's and Mistral's do for English: the
  // stub counts chars / 4, about 0.4 of the estimate.
  StubServer stub(dir_.path().string());
  const Env env = db_env({{"OPENAI_BASE_URL", stub.base_url()},
                          {"OPENAI_MODEL", "claude-sonnet-4-5"},
                          {"POLL_INTERVAL_MS", "20"},
                          {"SQLITE_SYNCHRONOUS", "NORMAL"}});
  std::string bread = "tell me about sourdough bread, its starter, its crust and its crumb.";
  for (int i = 0; i < 4; ++i) bread += " " + bread;  // over kCalibrationMinTokens
  for (int i = 0; i < 6; ++i)
    ASSERT_EQ(
        autonous(dir_, {"enqueue", "--chat", "c", "Turn " + std::to_string(i) + ": " + bread}, env)
            .exit_code,
        0);
  drain(env);
  const auto responses = payloads("llm.response");
  ASSERT_EQ(responses.size(), 6u);
  // The first answer: the raw estimate, well above the server's count.
  EXPECT_LT(responses.front()["prompt_tokens_per_estimated"].get<double>(), 0.8);
  // From the fourth on: at most ~15 % above, never below.
  for (size_t i = 3; i < responses.size(); ++i) {
    const double per = responses[i]["prompt_tokens_per_estimated"].get<double>();
    EXPECT_LE(per, 1.0) << responses[i].dump();
    EXPECT_GE(per, 1.0 / 1.15) << responses[i].dump();
  }
}

TEST_F(TokensE2eTest, AnImplausibleUsageLeavesTheCalibrationAndLaterPromptsWhole) {
  // One reply says its prompt took nearly INT64_MAX tokens: it says nothing about the prompt.
  StubServer stub(dir_.path().string());
  const Env env = db_env({{"OPENAI_BASE_URL", stub.base_url()},
                          {"OPENAI_MODEL", "local-llama"},
                          {"TOKEN_COUNTER", "estimate"},
                          {"TOKEN_CALIBRATION", "on"},
                          {"POLL_INTERVAL_MS", "20"}});
  for (const std::string text :
       {"Tell me about sourdough bread.", "[[stub:usage:9223372036854775000]] And rye bread?",
        "What did I ask about first?"})
    ASSERT_EQ(autonous(dir_, {"enqueue", "--chat", "c", text}, env).exit_code, 0);
  drain(env);
  EXPECT_EQ(num("SELECT count(*) FROM tasks WHERE status = 'done'"), 3);
  // The poisoned reply raised nothing (without the fix: 2.9e17, and every later count overflowed
  // to a negative number; clamped instead of ignored, it would have taken the scale to 2, a
  // reply's most). The stub's honest replies count about what the estimate did.
  EXPECT_LT(std::stod(str("SELECT coalesce(max(scale), 1.0) FROM token_calibration")), 2.0);
  for (const auto& p : payloads("llm.request"))
    EXPECT_LT(p["calibration_scale"].get<double>(), 2.0) << p.dump();
  // The last prompt still carries the history and the user's whole message.
  const nlohmann::json last = nlohmann::json::parse(stub.log_lines().back());
  const auto& messages = last["body"]["messages"];
  ASSERT_EQ(messages.size(), 6u) << last.dump();  // system, two turns, the question
  EXPECT_EQ(messages[1]["content"], "Tell me about sourdough bread.");
  EXPECT_EQ(messages.back()["content"], "What did I ask about first?");
}

}  // namespace
}  // namespace autonous::testing
