// Optional embeddings end to end (EMBEDDING_MODEL): the real binary, the stub's deterministic
// vectors (spelling-similar texts are similar), a real SQLite file. A misspelt early fact that
// BM25 cannot match is recalled by its vector and the event says so; off by default (no
// embeddings request at all); a failing embeddings call costs the turn only its vector search.

#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_support.h"

namespace autonous::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class EmbeddingsE2eTest : public E2eTest {
 protected:
  // 400 turns imported by plain SQL; the misspelt fact is the user's turn 4.
  int64_t import_chat(const std::string& chat) {
    return E2eTest::import_chat(chat, {{6, "Remember: my pasport numbr is X7781."}})[6];
  }
  // The worker at a 4 000-token budget unless `extra` says otherwise.
  void drain(const StubServer& stub, Env extra) {
    extra.emplace("MAX_CONTEXT_TOKENS", "4000");
    E2eTest::drain(env(stub, std::move(extra)));
  }
  std::vector<json> requests(const StubServer& stub, const std::string& suffix) {
    std::vector<json> out;
    for (const std::string& line : stub.log_lines()) {
      json j = json::parse(line);
      const std::string path = j["path"];
      if (path.size() >= suffix.size() && path.substr(path.size() - suffix.size()) == suffix)
        out.push_back(std::move(j));
    }
    return out;
  }
  json event(int64_t task, const std::string& type) {
    return json::parse(str("SELECT payload FROM events WHERE type = '" + type +
                           "' AND task_id = " + std::to_string(task) + " ORDER BY id LIMIT 1"));
  }
};

TEST_F(EmbeddingsE2eTest, EmbeddingsMayComeFromTheirOwnEndpointWithTheirOwnKey) {
  // A chat provider without /v1/embeddings (Anthropic's): the embeddings go to another
  // endpoint with its own key; the chat key never reaches that host.
  StubServer chat_stub(dir_.path().string());
  const std::filesystem::path embed_dir = dir_.path() / "embed";
  std::filesystem::create_directories(embed_dir);
  StubServer embed_stub(embed_dir.string());
  const int64_t fact = import_chat("c");
  const int64_t t = enqueue("c", "What is my passport number?");
  drain(chat_stub, {{"EMBEDDING_MODEL", "stub-embed"},
                    {"EMBEDDING_BASE_URL", embed_stub.base_url()},
                    {"EMBEDDING_API_KEY", "sk-embeddings-only"}});
  EXPECT_TRUE(requests(chat_stub, "/embeddings").empty());
  const auto calls = requests(embed_stub, "/embeddings");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["authorization"], "Bearer sk-embeddings-only");
  EXPECT_TRUE(requests(embed_stub, "/chat/completions").empty());
  const json chat = requests(chat_stub, "/chat/completions").back()["body"]["messages"];
  EXPECT_NE(chat.back()["content"].get<std::string>().find("my pasport numbr is X7781"),
            std::string::npos);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  (void)fact;
}

TEST_F(EmbeddingsE2eTest, AMisspeltFactBm25CannotMatchIsRecalledByItsVector) {
  StubServer stub(dir_.path().string());
  const int64_t fact = import_chat("c");
  const int64_t t = enqueue("c", "What is my passport number?");
  drain(stub, {{"EMBEDDING_MODEL", "stub-embed"}});
  const auto calls = requests(stub, "/embeddings");
  ASSERT_EQ(calls.size(), 1u);
  const json& body = calls[0]["body"];
  EXPECT_EQ(body["model"], "stub-embed");
  ASSERT_EQ(body["input"].size(), 32u);  // the question and the chat's 31 oldest messages
  EXPECT_EQ(body["input"][0], "What is my passport number?");
  EXPECT_EQ(num("SELECT count(*) FROM history_vectors WHERE chat_id = 'c' AND model = "
                "'stub-embed'"),
            31);
  const json chat = requests(stub, "/chat/completions").back()["body"]["messages"];
  EXPECT_NE(chat.back()["content"].get<std::string>().find("my pasport numbr is X7781"),
            std::string::npos)
      << chat.back()["content"];
  const json ev = event(t, "context.compressed");
  bool hit = false;
  for (const auto& item : ev["recall"]["items"])
    if (item["id"] == fact && item.contains("score")) {
      hit = true;
      EXPECT_EQ(item["ranks"]["vector"], 1) << item.dump();
      EXPECT_EQ(item["ranks"]["bm25"], 0) << item.dump();
      EXPECT_GE(item["cosine"].get<double>(), 0.4);
    }
  EXPECT_TRUE(hit) << ev["recall"].dump();
  EXPECT_EQ(ev["recall"]["gatherers"][0]["name"], "embeddings");
  EXPECT_EQ(ev["recall"]["gatherers"][0]["candidates"], 31);
}

TEST_F(EmbeddingsE2eTest, OffByDefaultAndBm25AloneDoesNotFindIt) {
  StubServer stub(dir_.path().string());
  import_chat("c");
  enqueue("c", "What is my passport number?");
  drain(stub, {});
  EXPECT_TRUE(requests(stub, "/embeddings").empty());
  const json chat = requests(stub, "/chat/completions").back()["body"]["messages"];
  EXPECT_EQ(chat.back()["content"].get<std::string>().find("X7781"), std::string::npos);
  EXPECT_EQ(num("SELECT count(*) FROM history_vectors"), 0);
}

TEST_F(EmbeddingsE2eTest, AFailingEmbeddingsCallCostsOnlyTheVectorSearch) {
  StubServer stub(dir_.path().string());
  import_chat("c");
  const int64_t t = enqueue("c", "What is my passport number? [[stub:embed500]]");
  drain(stub, {{"EMBEDDING_MODEL", "stub-embed"}});
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  EXPECT_EQ(requests(stub, "/embeddings").size(), 1u);  // no retry
  const json warning = event(t, "context.warning");
  EXPECT_EQ(warning["reason"], "gatherer_failed") << warning.dump();
  EXPECT_NE(warning["message"].get<std::string>().find("embeddings"), std::string::npos);
  EXPECT_EQ(num("SELECT count(*) FROM history_vectors"), 0);
}

TEST_F(EmbeddingsE2eTest, ABadEmbeddingsReplyIsRefusedAndTheTurnGoesOn) {
  StubServer stub(dir_.path().string());
  import_chat("c");
  const int64_t t = enqueue("c", "What is my passport number? [[stub:embedbad]]");
  drain(stub, {{"EMBEDDING_MODEL", "stub-embed"}});
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  EXPECT_NE(event(t, "context.warning")["message"].get<std::string>().find("malformed"),
            std::string::npos);
}

TEST_F(EmbeddingsE2eTest, ARefusedMessageIsPassedOverAndTheRestGetVectors) {
  StubServer stub(dir_.path().string());
  E2eTest::import_chat("c", {{6, "a message the model refuses [[stub:embedtoolong]]"}});
  const Env e = {{"EMBEDDING_MODEL", "stub-embed"}};
  const int64_t t = enqueue("c", "What is my passport number?");
  drain(stub, e);
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  // Refused with the batch: the question alone, then the batch in halves until the one
  // message refused on its own; only it is passed over.
  EXPECT_GT(requests(stub, "/embeddings").size(), 3u);
  EXPECT_EQ(requests(stub, "/embeddings")[1]["body"]["input"].size(), 1u);
  EXPECT_NE(event(t, "context.warning")["message"].get<std::string>().find(
                "1 message(s) refused by the model"),
            std::string::npos);
  EXPECT_EQ(num("SELECT count(*) FROM history_vectors WHERE length(vector) = 0"), 1);
  EXPECT_EQ(num("SELECT count(*) FROM history_vectors WHERE length(vector) > 0"), 30);
  // The next turn embeds the next 31: nothing blocks the chat.
  enqueue("c", "And my locker?");
  drain(stub, e);
  EXPECT_EQ(num("SELECT count(*) FROM history_vectors WHERE length(vector) > 0"), 61);
}

TEST_F(EmbeddingsE2eTest, ASlowlyRefusingServerCostsTheStepOneTimeLimitNotOnePerCall) {
  // Every answer takes 400 ms and the batch is refused: halving it down to the one message
  // refused on its own would take about a dozen calls, each with its own limit before.
  StubServer stub(dir_.path().string(), 400);
  E2eTest::import_chat("c", {{6, "a message the model refuses [[stub:embedtoolong]]"}});
  const int64_t t = enqueue("c", "What is my passport number?");
  drain(stub, {{"EMBEDDING_MODEL", "stub-embed"}, {"EMBEDDING_TIMEOUT_MS", "1500"}});
  EXPECT_EQ(str("SELECT status FROM tasks WHERE id = " + std::to_string(t)), "done");
  // 1.5 s of 400-ms answers: at most four calls, the last one cut short.
  EXPECT_LE(requests(stub, "/embeddings").size(), 4u);
  bool stopped = false;  // what was got is kept; the untried rows wait for a later turn
  for (const auto& w : payloads("context.warning", t))
    stopped = stopped || w["message"].get<std::string>().find("stopped at EMBEDDING_TIMEOUT_MS") !=
                             std::string::npos;
  EXPECT_TRUE(stopped);
  const auto compressed = event(t, "context.compressed");
  const auto& runs = compressed["recall"]["gatherers"];
  bool timed = false;
  for (const auto& r : runs)
    if (r["name"] == "embeddings") timed = r["us"].get<int64_t>() < 2'100'000;
  EXPECT_TRUE(timed) << runs.dump();
}

}  // namespace
}  // namespace autonous::testing
