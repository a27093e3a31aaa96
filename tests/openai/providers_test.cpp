// #31, providers as they are: a base URL with a query and the key in another header (Azure),
// extra headers (OpenRouter's attribution), what a content filter, a refusal and a 402 mean,
// DeepSeek's cache fields.

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "internal/openai/client.h"
#include "internal/openai/errors.h"
#include "tests/openai/client_fixture.h"

namespace autonous::openai {
namespace {

using common::Message;
using common::Role;

using testing_support::expect_throw;
using testing_support::kOk;

class ProvidersTest : public testing_support::ClientFixture {};

// #31's provider plumbing: a base URL's query goes after the endpoint's path (Azure's
// api-version), the key in the header named (Azure's api-key) instead of Authorization, extra
// headers on every call; a server echoing a header's value has it redacted like the key.
TEST_F(ProvidersTest, TheQueryTheKeysHeaderAndExtraHeadersReachTheWire) {
  ClientOptions o{"https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
                  "azure-key", "gpt-4o", std::chrono::seconds(5)};
  o.key_header = "api-key";
  o.extra_headers = {{"X-Title", "My bot"}, {"X-Gateway-Secret", "gw-s3cret"}};
  Client c(transport_, o);
  transport_.push({200, {}, kOk});
  c.chat(messages_);
  const auto& req = transport_.requests[0];
  EXPECT_EQ(
      req.url,
      "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21");
  std::map<std::string, std::string> h(req.headers.begin(), req.headers.end());
  EXPECT_EQ(h["api-key"], "azure-key");
  EXPECT_EQ(h.count("Authorization"), 0u);
  EXPECT_EQ(h["X-Title"], "My bot");
  EXPECT_EQ(h["X-Gateway-Secret"], "gw-s3cret");
  transport_.push({200, {}, R"({"data":[{"embedding":[0.5,0.5]}]})"});
  c.embed("e", {"x"}, std::chrono::seconds(1));
  EXPECT_EQ(transport_.requests[1].url,
            "https://r.openai.azure.com/openai/deployments/d/embeddings?api-version=2024-10-21");
  transport_.push({401, {}, R"({"error":{"message":"bad header gw-s3cret or key azure-key"}})"});
  const auto e = expect_throw<ApiError>(c, messages_);
  EXPECT_EQ(std::string(e.what()).find("gw-s3cret"), std::string::npos) << e.what();
  EXPECT_EQ(std::string(e.what()).find("azure-key"), std::string::npos) << e.what();
  EXPECT_EQ(endpoint_url("http://h/v1", "/chat/completions"), "http://h/v1/chat/completions");
  EXPECT_EQ(url_host("https://API.OpenAI.com/v1"), "api.openai.com");
  EXPECT_EQ(url_host("https://api.openai.com:443?x=1"), "api.openai.com");
  EXPECT_EQ(url_host("http://127.0.0.1:9/v1?via=https://api.openai.com/v1"), "127.0.0.1");
  EXPECT_EQ(url_host("http://[::1]:8443/v1"), "[::1]");
  EXPECT_EQ(url_host("not a url"), "");
}

// #31: replies classified as providers mean them. A content filter's empty reply and a 402
// fail at once, each saying why; DeepSeek's cache hits are read as cached tokens.
TEST_F(ProvidersTest, ContentFilterAndPaymentRequiredFailAtOnceAndDeepSeeksCacheIsRead) {
  transport_.push({200, {}, R"({"choices":[{"index":0,"finish_reason":"content_filter",
    "message":{"role":"assistant","content":null},"content_filter_results":{"hate":
    {"filtered":true,"severity":"high"}}}]})"});
  try {
    (void)client().chat(messages_);
    FAIL() << "a filtered reply was accepted";
  } catch (const ReplyWithheldError& e) {
    EXPECT_EQ(e.reason(), "content_filter");
    EXPECT_FALSE(e.retryable());
  }
  // A partial text cut by the filter is still the reply (Azure sometimes sends one).
  transport_.push({200, {}, R"({"choices":[{"finish_reason":"content_filter",
    "message":{"content":"Here is the first part"}}]})"});
  EXPECT_EQ(client().chat(messages_).content, "Here is the first part");
  transport_.push(
      {402,
       {},
       R"({"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/credits"}})"});
  const auto e = expect_throw<ApiError>(client(), messages_);
  EXPECT_EQ(e.reason(), "payment_required");
  EXPECT_FALSE(e.retryable());
  EXPECT_NE(std::string(e.what()).find("HTTP 402: payment required: Insufficient credits"),
            std::string::npos)
      << e.what();
  transport_.push({200, {}, R"({"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],
    "usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,
             "prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}})"});
  const ChatResult r = client().chat(messages_);
  ASSERT_TRUE(r.usage);
  EXPECT_EQ(r.usage->cached_tokens, 64);
  EXPECT_EQ(r.usage->prompt_tokens, 100);
  // OpenAI's own field wins when both are there.
  transport_.push({200, {}, R"({"choices":[{"message":{"content":"hi"}}],"usage":{
    "prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":3},"prompt_cache_hit_tokens":9}})"});
  EXPECT_EQ(client().chat(messages_).usage->cached_tokens, 3);
}

// The review's cases: only credential-like headers are redacted (a bot's title stays in its
// replies), a secret found inside "[redacted]" ends, Azure's prompt filter (a 400 with code
// content_filter), a 402 inside a 200 body, a 402 with Retry-After (a budget that refills),
// a refusal that is not text, and cached tokens kept within the prompt.
TEST_F(ProvidersTest, WhatTheReviewFoundIsClassifiedAndRedactedRight) {
  ClientOptions o{"http://h/v1", "redacted", "m", std::chrono::seconds(5)};
  o.extra_headers = {{"X-Title", "My bot"}, {"X-Api-Token", "tok-s3cret"}};
  Client c(transport_, o);
  transport_.push({200, {}, R"({"choices":[{"message":{"content":
    "I am My bot. The token is tok-s3cret; redacted redacted."}}]})"});
  const ChatResult r = c.chat(messages_);
  EXPECT_EQ(r.content, "I am My bot. The token is [redacted]; [redacted] [redacted].");
  transport_.push(
      {400,
       {},
       R"({"error":{"code":"content_filter","message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy."}})"});
  auto e = expect_throw<ApiError>(client(), messages_);
  EXPECT_EQ(e.reason(), "content_filter");
  EXPECT_FALSE(e.retryable());
  transport_.push({200, {}, R"({"error":{"code":402,"message":"Insufficient credits"}})"});
  e = expect_throw<ApiError>(client(), messages_);
  EXPECT_EQ(e.status(), 402);
  EXPECT_EQ(e.reason(), "payment_required");
  EXPECT_FALSE(e.retryable());
  transport_.push({402, {{"retry-after", "5"}}, R"({"error":{"message":"over budget"}})"});
  e = expect_throw<ApiError>(client(), messages_);
  EXPECT_TRUE(e.retryable());
  transport_.push({200, {}, R"({"choices":[{"message":{"content":null,"refusal":false}}]})"});
  try {
    (void)client().chat(messages_);
    FAIL() << "accepted";
  } catch (const ResponseError& re) {
    EXPECT_EQ(re.reason(), "empty_reply");
  }
  transport_.push({200, {}, R"({"choices":[{"message":{"content":"x"}}],"usage":{
    "prompt_tokens":10,"prompt_cache_hit_tokens":99}})"});
  EXPECT_EQ(client().chat(messages_).usage->cached_tokens, 10);
}

}  // namespace
}  // namespace autonous::openai
