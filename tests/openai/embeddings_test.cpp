// Client::embed against scripted responses: the request it sends, the vectors in input order,
// and every malformed reply refused as a ResponseError (never a crash or a wrong vector).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/openai/client.h"
#include "internal/openai/errors.h"
#include "tests/support/scripted_transport.h"

namespace autonous::openai {
namespace {

class EmbeddingsTest : public ::testing::Test {
 protected:
  EmbeddingResult embed(const std::string& body, int status = 200) {
    transport_.push({status, {}, body});
    Client c(transport_,
             {"http://127.0.0.1:1/v1", "sk-secret", "chat-model", std::chrono::seconds(60)});
    return c.embed("emb-model", {"first", "second"}, std::chrono::milliseconds(1500));
  }
  void expect_malformed(const std::string& body) {
    EXPECT_THROW(embed(body), ResponseError) << body;
  }
  testing::ScriptedTransport transport_;
};

TEST_F(EmbeddingsTest, SendsTheModelAndInputsAndReadsVectorsInInputOrder) {
  const EmbeddingResult r = embed(R"({"object":"list","data":[
      {"object":"embedding","index":1,"embedding":[0.5,-1]},
      {"object":"embedding","index":0,"embedding":[1,2.5]}],
      "model":"emb-model","usage":{"prompt_tokens":4,"total_tokens":4}})");
  ASSERT_EQ(transport_.requests.size(), 1u);
  const auto& req = transport_.requests[0];
  EXPECT_EQ(req.url, "http://127.0.0.1:1/v1/embeddings");
  EXPECT_EQ(req.timeout, std::chrono::milliseconds(1500));
  const auto body = nlohmann::json::parse(req.body);
  EXPECT_EQ(body["model"], "emb-model");
  EXPECT_EQ(body["input"], nlohmann::json::array({"first", "second"}));
  EXPECT_EQ(body["encoding_format"], "float");
  ASSERT_EQ(r.vectors.size(), 2u);
  EXPECT_EQ(r.vectors[0], (std::vector<float>{1, 2.5}));
  EXPECT_EQ(r.vectors[1], (std::vector<float>{0.5, -1}));
  ASSERT_TRUE(r.usage);
  EXPECT_EQ(r.usage->prompt_tokens, 4);
}

TEST_F(EmbeddingsTest, ItemsWithoutAnIndexAreTakenInOrder) {
  const EmbeddingResult r = embed(R"({"data":[{"embedding":[1]},{"embedding":[2]}]})");
  EXPECT_EQ(r.vectors[0], std::vector<float>{1});
  EXPECT_EQ(r.vectors[1], std::vector<float>{2});
}

TEST_F(EmbeddingsTest, MalformedRepliesAreResponseErrors) {
  expect_malformed("not json");
  expect_malformed("[]");
  expect_malformed(R"({"data":"x"})");
  expect_malformed(R"({"data":[{"index":0,"embedding":[1]}]})");  // one vector for two inputs
  expect_malformed(R"({"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[2]}]})");
  expect_malformed(R"({"data":[{"index":0,"embedding":[1]},{"index":7,"embedding":[2]}]})");
  expect_malformed(R"({"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[2]}]})");
  expect_malformed(R"({"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[]}]})");
  expect_malformed(R"({"data":[{"index":0,"embedding":["1"]},{"index":1,"embedding":[2]}]})");
  expect_malformed(R"({"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":[2]}]})");
  expect_malformed(R"({"data":[1,2]})");
  expect_malformed(R"({"data":[{"index":0,"embedding":[1e39]},{"index":1,"embedding":[2]}]})");
  expect_malformed(std::string(100, '[') + std::string(100, ']'));
}

TEST_F(EmbeddingsTest, ErrorsAreApiErrorsWithTheKeyRedacted) {
  try {
    embed(R"({"error":{"message":"bad key sk-secret","type":"invalid_request_error"}})", 401);
    FAIL() << "no exception";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 401);
    EXPECT_EQ(std::string(e.what()).find("sk-secret"), std::string::npos) << e.what();
  }
  // Some servers answer 200 with an error object.
  EXPECT_THROW(embed(R"({"error":{"message":"model not found"}})"), ApiError);
}

}  // namespace
}  // namespace autonous::openai
