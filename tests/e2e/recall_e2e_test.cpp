// Recall end to end, under the default settings (only the budget is the 4 000 tokens):
// the real binary, the stub, a real SQLite file. A long chat imported by plain SQL (as a front
// end would write it), a fact stated early; the question's prompt carries it as a recalled
// message, the event says why; pinned facts ride in the system message; the dry run shows the
// blocks; RECALL=off sends none.

#include <map>
#include <set>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <SQLiteCpp/Transaction.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/recall_e2e_fixture.h"

namespace autonous::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

TEST_F(RecallE2eTest, AnEarlyFactReachesThePromptAsARecalledMessageAndTheEventSaysWhy) {
  StubServer stub(dir_.path().string());
  const int64_t fact = import_chat("c");
  const int64_t t = enqueue("c", "What is my locker code at the gym?");
  drain(defaults(stub));
  const json messages = last_request(stub);
  const std::string user = messages.back()["content"];
  EXPECT_EQ(messages.back()["role"], "user");
  const size_t block = user.find("<recalled_messages>");
  ASSERT_NE(block, std::string::npos) << user;
  EXPECT_NE(user.find("my locker code at the gym is 4471", block), std::string::npos);
  // The user's own text comes first, the block after it; the forged closing tag is inert.
  EXPECT_EQ(user.find("What is my locker code at the gym?"), 0u);
  EXPECT_EQ(user.find("</recalled_messages>"), user.rfind("</recalled_messages>"));
  // Nothing recalled is verbatim in the prompt's history too.
  for (size_t i = 0; i + 1 < messages.size(); ++i)
    EXPECT_EQ(messages[i]["content"].get<std::string>().find("4471"), std::string::npos);
  const json ev = json::parse(
      str("SELECT payload FROM events WHERE type = 'context.compressed' AND task_id = " +
          std::to_string(t)));
  EXPECT_LE(ev["estimated_tokens"].get<int64_t>(), 4000);
  bool hit = false;
  for (const auto& item : ev["recall"]["items"])
    if (item["id"] == fact) {
      hit = true;
      EXPECT_GT(item["score"].get<double>(), 0.0);
      EXPECT_GE(item["relevance"].get<double>(), 0.15);
      EXPECT_EQ(item["at"].get<std::string>().size(), 24u);  // 2026-01-01T00:00:00.000Z
    }
  EXPECT_TRUE(hit) << ev["recall"].dump();
  EXPECT_NE(std::find(ev["recall"]["terms"].begin(), ev["recall"]["terms"].end(), "locker"),
            ev["recall"]["terms"].end());
  bool evidence_block = false;
  for (const auto& b : ev["blocks"])
    if (b["name"] == "evidence") evidence_block = b["tier"] == "P2" && b["tokens"].get<int>() > 0;
  EXPECT_TRUE(evidence_block) << ev["blocks"].dump();
}

TEST_F(RecallE2eTest, OffSendsNoEvidenceAndTheFactIsLost) {
  StubServer stub(dir_.path().string());
  import_chat("c");
  enqueue("c", "What is my locker code at the gym?");
  drain(defaults(stub, {{"RECALL", "off"}}));
  std::string all;
  for (const auto& m : last_request(stub)) all += m["content"].get<std::string>();
  EXPECT_EQ(all.find("4471"), std::string::npos);
  EXPECT_EQ(all.find("<recalled_messages>"), std::string::npos);
}

TEST_F(RecallE2eTest, ACustomBlockFromPlainSqlRidesAfterTheEvidence) {
  StubServer stub(dir_.path().string());
  import_chat("c");
  {
    exec_sql(
        "INSERT INTO custom_blocks(chat_id, name, text) VALUES (NULL, 'Store hours', "
        "'Open 9 to 17 on weekdays.')");
    exec_sql("INSERT INTO custom_blocks(chat_id, name, text) VALUES ('other', 'Other', 'not c')");
  }
  const int64_t t = enqueue("c", "What is my locker code at the gym?");
  drain(defaults(stub));
  const std::string user = last_request(stub).back()["content"];
  ASSERT_NE(user.find("- Store hours:"), std::string::npos) << user;
  EXPECT_LT(user.find("<recalled_messages>"), user.find("<custom_context>"));
  EXPECT_EQ(user.find("not c"), std::string::npos);
  const json ev = json::parse(
      str("SELECT payload FROM events WHERE type = 'context.compressed' AND task_id = " +
          std::to_string(t)));
  EXPECT_EQ(ev["blocks"].back()["name"], "custom") << ev["blocks"].dump();
  EXPECT_EQ(ev["blocks"].back()["tier"], "P4");
  EXPECT_EQ(ev["custom"]["left_out"], 0);
}

TEST_F(RecallE2eTest, PinnedFactsRideInTheSystemMessageUntilUnpinned) {
  StubServer stub(dir_.path().string());
  auto r = autonous(dir_, {"chat", "pin", "p", "The user's name is Ada; she prefers metric units."},
                    db_env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string pin_id = r.out.substr(0, r.out.find('\n'));
  const json shown = json::parse(autonous(dir_, {"chat", "show", "p"}, db_env()).out);
  ASSERT_EQ(shown["pins"].size(), 1u);
  enqueue("p", "hello");
  drain(defaults(stub));
  json messages = last_request(stub);
  EXPECT_EQ(messages[0]["role"], "system");
  EXPECT_NE(messages[0]["content"].get<std::string>().find("<pinned_facts>"), std::string::npos);
  EXPECT_NE(messages[0]["content"].get<std::string>().find("prefers metric units"),
            std::string::npos);
  EXPECT_EQ(autonous(dir_, {"chat", "unpin", "p", "999"}, db_env()).exit_code, 2);
  EXPECT_EQ(autonous(dir_, {"chat", "pin", "p", "   "}, db_env()).exit_code, 2);
  ASSERT_EQ(autonous(dir_, {"chat", "unpin", "p", pin_id}, db_env()).exit_code, 0);
  enqueue("p", "again");
  drain(defaults(stub));
  messages = last_request(stub);
  EXPECT_EQ(messages[0]["content"].get<std::string>().find("pinned_facts"), std::string::npos);
}

TEST_F(RecallE2eTest, TheDryRunShowsTheBlocksAndRecallsFromAnImportedChat) {
  StubServer stub(dir_.path().string());
  const int64_t fact = import_chat("c");
  const auto r =
      autonous(dir_, {"context", "--chat", "c", "--text", "locker code?"}, defaults(stub));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  std::vector<std::string> names;
  for (const auto& b : j["blocks"]) names.push_back(b["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"system", "history", "user", "evidence"}));
  EXPECT_NE(j["messages"].back()["content"].get<std::string>().find("4471"), std::string::npos);
  EXPECT_EQ(j["recall"]["items"].size() >= 1, true);
  // A dry run stores no chat state.
  EXPECT_EQ(num("SELECT count(*) FROM context_state"), 0);
  (void)fact;
}

TEST_F(RecallE2eTest, SmallTalkRecallsNothingWhileAQuestionNamingItsSubjectDoes) {
  // Small talk every 40 messages of an 800-message chat, the fact at 6 (#28: "haha nice" pulled
  // in 900-3 000 tokens of old messages before the relevance gate).
  std::map<int, std::string> special{{6, "Remember: my locker code at the gym is 4471."}};
  for (int i = 20; i < 700; i += 40) special[i] = "haha nice";
  for (int i = 40; i < 700; i += 40) special[i + 2] = "good morning! see you tomorrow";
  E2eTest::import_chat("talk", special);
  StubServer stub(dir_.path().string());
  // Each dry run's catch-up indexes what its 100 ms allow: on a loaded machine (PostgreSQL under
  // ctest -j3) 800 rows took more than one, and a half-indexed chat counts its words as rarer
  // than they are. The worker indexes a backlog while idle; here the dry runs do it first.
  for (int i = 0; i < 50 && num("SELECT count(*) FROM search_queue") > 0; ++i)
    autonous(dir_, {"context", "--chat", "talk", "--text", "warm up"}, defaults(stub));
  ASSERT_EQ(num("SELECT count(*) FROM search_queue"), 0);
  for (const std::string text : {"haha nice", "good morning!", "see you tomorrow"}) {
    const auto r = autonous(dir_, {"context", "--chat", "talk", "--text", text}, defaults(stub));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["evidence_tokens"], 0) << text << ": " << j["recall"].dump();
  }
  const auto r =
      autonous(dir_, {"context", "--chat", "talk", "--text", "What is my locker code at the gym?"},
               defaults(stub));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(json::parse(r.out)["messages"].back()["content"].get<std::string>().find("4471"),
            std::string::npos);
}

TEST_F(RecallE2eTest, TheDeltaBuilderSeesTheLastAnsweredPromptAndTheCacheKeyIsPerChat) {
  StubServer stub(dir_.path().string());
  enqueue("a", "first question about gardens");
  enqueue("a", "second question about gardens");
  enqueue("a", "third question about gardens");  // the first with history to reuse
  enqueue("b", "a question in another chat");
  drain(defaults(stub, {{"PROMPT_CACHE_KEY", "on"}}));
  const json second = json::parse(
      str("SELECT payload FROM events WHERE type = 'context.compressed' AND chat_id = 'a' "
          "ORDER BY id DESC LIMIT 1"));
  EXPECT_EQ(second["delta"]["reused"], json::array({"system", "history"})) << second["delta"];
  EXPECT_GT(second["delta"]["predicted_cached_tokens"].get<int64_t>(), 0);
  EXPECT_EQ(num("SELECT count(*) FROM context_blocks WHERE chat_id = 'a'"), 2);
  std::map<std::string, std::set<std::string>> keys;  // chat's first user text -> keys
  for (const auto& line : stub.log_lines()) {
    const json body = json::parse(line)["body"];
    ASSERT_TRUE(body.contains("prompt_cache_key")) << body.dump();
    const std::string text = body["messages"][1]["content"];
    keys[text.substr(0, 5)].insert(body["prompt_cache_key"].get<std::string>());
  }
  // One key for chat a's three requests (each starts with its first message), another for b's.
  EXPECT_EQ(keys["first"].size(), 1u);
  EXPECT_NE(*keys["first"].begin(), *keys["a que"].begin());
  // Off by default for an endpoint that is not OpenAI's.
  enqueue("a", "fourth");
  drain(defaults(stub));
  EXPECT_FALSE(json::parse(stub.log_lines().back())["body"].contains("prompt_cache_key"));
  // ... also when OpenAI's host name is only in the URL's query (#31: a query is kept).
  enqueue("a", "fifth");
  drain(defaults(stub, {{"OPENAI_BASE_URL", stub.base_url() + "?via=https://api.openai.com/v1"}}));
  EXPECT_FALSE(json::parse(stub.log_lines().back())["body"].contains("prompt_cache_key"));
  EXPECT_FALSE(json::parse(stub.log_lines().back())["body"].contains("user"));  // off by default
  EXPECT_FALSE(json::parse(stub.log_lines().back())["body"].contains("prompt_cache_retention"));
  // #31: OpenAI's `user` (the chat's hash, as the cache key) and prompt_cache_retention, when on.
  enqueue("a", "sixth");
  drain(defaults(
      stub,
      {{"OPENAI_SEND_USER", "on"}, {"PROMPT_CACHE_RETENTION", "24h"}, {"PROMPT_CACHE_KEY", "on"}}));
  const json sixth = json::parse(stub.log_lines().back())["body"];
  EXPECT_EQ(sixth["prompt_cache_retention"], "24h");
  EXPECT_EQ(sixth["user"], sixth["prompt_cache_key"]);
  EXPECT_EQ(sixth["user"].get<std::string>().rfind("autonous-", 0), 0u);
  // A dry run writes no blocks.
  const int64_t before = num("SELECT count(*) FROM context_blocks");
  ASSERT_EQ(autonous(dir_, {"context", "--chat", "new", "--text", "x"}, defaults(stub)).exit_code,
            0);
  EXPECT_EQ(num("SELECT count(*) FROM context_blocks"), before);
}

}  // namespace
}  // namespace autonous::testing
