#include "internal/openai/client.h"

#include <cctype>

#include <curl/curl.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "internal/openai/errors.h"
#include "tests/openai/client_fixture.h"

namespace autonous::openai {
namespace {

using common::Message;
using common::Role;

using testing_support::expect_throw;
using testing_support::kOk;

class ClientTest : public testing_support::ClientFixture {};

TEST_F(ClientTest, SendsModelMessagesAndBearerKey) {
  transport_.push({200, {}, kOk});
  const ChatResult r = client().chat(messages_);
  ASSERT_EQ(transport_.requests.size(), 1u);
  const auto& req = transport_.requests[0];
  EXPECT_EQ(req.url, "http://127.0.0.1:1/v1/chat/completions");
  const auto body = nlohmann::json::parse(req.body);
  EXPECT_EQ(body["model"], "m1");
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["messages"][1]["content"], "hi");
  bool auth = false;
  for (const auto& [k, v] : req.headers) auth |= (k == "Authorization" && v == "Bearer sk-secret");
  EXPECT_TRUE(auth);
  EXPECT_EQ(req.timeout, std::chrono::seconds(5));
  EXPECT_EQ(r.content, "Hello!");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.model, "gpt-4o-mini-2024");
  ASSERT_TRUE(r.usage);
  EXPECT_EQ(r.usage->prompt_tokens, 12);
  EXPECT_EQ(r.usage->completion_tokens, 3);
  EXPECT_EQ(r.usage->cached_tokens, 8);
}

TEST_F(ClientTest, NoKeyMeansNoAuthorizationHeader) {
  transport_.push({200, {}, kOk});
  Client c(transport_, {"http://x/v1", "", "m", std::chrono::seconds(1)});
  c.chat(messages_);
  for (const auto& [k, v] : transport_.requests[0].headers) EXPECT_NE(k, "Authorization");
}

TEST_F(ClientTest, ToleratesMissingUsageNullContentAndUnknownFields) {
  transport_.push(
      {200,
       {},
       R"({"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't."},"finish_reason":"content_filter","logprobs":null}],"timings":{}})"});
  // A refusal is withheld, not an answer (#31): fails at once, the refusal's text in the error.
  try {
    (void)client().chat(messages_);
    FAIL() << "a refusal was accepted";
  } catch (const ReplyWithheldError& e) {
    EXPECT_EQ(e.reason(), "refusal");
    EXPECT_FALSE(e.retryable());
    EXPECT_NE(std::string(e.what()).find("I can't."), std::string::npos) << e.what();
  }
  transport_.push(
      {200,
       {},
       R"({"choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop","logprobs":null}],"timings":{}})"});
  const ChatResult r = client().chat(messages_);
  EXPECT_EQ(r.content, "ok");
  EXPECT_FALSE(r.usage);
  // A tool_calls-only or null reply is not an answer: retried with a clear reason, never
  // stored as an empty "done" reply.
  transport_.push(
      {200, {}, R"({"choices":[{"message":{"content":null},"finish_reason":"tool_calls"}]})"});
  try {
    (void)client().chat(messages_);
    FAIL() << "an empty reply was accepted";
  } catch (const ResponseError& e) {
    EXPECT_TRUE(e.retryable());
    EXPECT_EQ(e.reason(), "empty_reply");
    EXPECT_NE(std::string(e.what()).find("tool_calls"), std::string::npos);
  }
}

TEST_F(ClientTest, ARefusedTlsCertificateIsPermanentNotANetworkBlip) {
  transport_.push_error(CURLE_PEER_FAILED_VERIFICATION, "SSL certificate problem");
  try {
    (void)client().chat(messages_);
    FAIL();
  } catch (const TransportError& e) {
    EXPECT_FALSE(e.retryable());
    EXPECT_EQ(e.reason(), "tls_certificate");
  }
  transport_.push_error(CURLE_COULDNT_CONNECT, "refused");
  try {
    (void)client().chat(messages_);
    FAIL();
  } catch (const TransportError& e) {
    EXPECT_TRUE(e.retryable());
    EXPECT_EQ(e.reason(), "network");
  }
}

TEST_F(ClientTest, ContentPartsAreJoinedAndNulBytesSurvive) {
  transport_.push(
      {200,
       {},
       R"({"choices":[{"message":{"content":[{"type":"text","text":"Hel"},)"
       R"({"type":"image_url","image_url":{}},{"type":"text","text":"lo\u0000!"}]}}]})"});
  EXPECT_EQ(client().chat(messages_).content, "Hello\xEF\xBF\xBD!");
}

TEST_F(ClientTest, DeeplyNestedRepliesAreRefusedWithoutRecursion) {
  // 100 000 levels in ~200 KB: dump() or a recursive walk of this overflowed the stack.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const std::string& body :
       {R"({"choices":[{"message":{"content":)" + deep + "}}]}",
        R"({"choices":[{"message":{"content":"x"},"finish_reason":)" + deep + "}]}",
        R"({"model":)" + deep + R"(,"choices":[{"message":{"content":"x"}}]})"}) {
    transport_.push({200, {}, body});
    try {
      (void)client().chat(messages_);
      FAIL() << "accepted";
    } catch (const ResponseError& e) {
      EXPECT_NE(std::string(e.what()).find("nested deeper"), std::string::npos);
    }
  }
  // An error body as deep: the status is still classified, with the body clipped as text.
  transport_.push({503, {}, R"({"error":{"message":"x","code":)" + deep + "}}"});
  try {
    (void)client().chat(messages_);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 503);
    EXPECT_TRUE(e.retryable());
    EXPECT_LT(std::string(e.what()).size(), 400u);
  }
  // Structured values where text is expected are not text (and not dumped).
  transport_.push(
      {200,
       {},
       R"({"model":{"a":[1]},"choices":[{"message":{"content":"ok"},"finish_reason":[1]}]})"});
  const ChatResult r = client().chat(messages_);
  EXPECT_EQ(r.content, "ok");
  EXPECT_EQ(r.model, "");
  EXPECT_EQ(r.finish_reason, "");
}

TEST_F(ClientTest, AnEchoedKeyIsRedactedFromEveryErrorText) {
  const std::string key = "sk-secret";
  transport_.push({401,
                   {},
                   R"({"error":{"message":"Incorrect API key provided: )" + key + R"(. Bearer )" +
                       key + R"(","type":")" + key + R"(","code":"k"}})"});
  try {
    (void)client().chat(messages_);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(std::string(e.what()).find(key), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[redacted]"), std::string::npos);
    EXPECT_EQ(e.type().find(key), std::string::npos);
  }
  transport_.push({200,
                   {},
                   R"({"model":"m-)" + key + R"(","choices":[{"message":{"content":"k=)" + key +
                       R"("},"finish_reason":")" + key + R"("}]})"});
  const ChatResult ok = client().chat(messages_);
  for (const std::string& text : {ok.model, ok.content, ok.finish_reason})
    EXPECT_EQ(text.find(key), std::string::npos) << text;
  transport_.push({502, {}, "<html>bad gateway for " + key + "</html>"});
  try {
    (void)client().chat(messages_);
    FAIL();
  } catch (const ApiError& e) {
    EXPECT_EQ(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

TEST_F(ClientTest, MalformedOrTruncatedBodiesAreRetryableResponseErrors) {
  for (const std::string body : {"", "{\"choices\": [", "[]", "{\"choices\":[]}",
                                 "<html>oops</html>", "{\"choices\":[{\"text\":\"legacy\"}]}"}) {
    SCOPED_TRACE(body);
    transport_.push({200, {}, body});
    const auto e = expect_throw<ResponseError>(client(), messages_);
    EXPECT_TRUE(e.retryable());
    EXPECT_EQ(e.reason(), "malformed_response");
  }
}

TEST_F(ClientTest, ClassifiesHttpErrorsLikeTheOfficialClient) {
  struct Case {
    long status;
    bool retryable;
  };
  for (const Case c : {Case{400, false}, Case{401, false}, Case{403, false}, Case{404, false},
                       Case{422, false}, Case{408, true}, Case{409, true}, Case{429, true},
                       Case{500, true}, Case{502, true}, Case{503, true}}) {
    SCOPED_TRACE(c.status);
    transport_.push(
        {c.status, {}, R"({"error":{"message":"nope","type":"t","param":null,"code":null}})"});
    const auto e = expect_throw<ApiError>(client(), messages_);
    EXPECT_EQ(e.status(), c.status);
    EXPECT_EQ(e.retryable(), c.retryable);
    EXPECT_EQ(e.reason(), "http_" + std::to_string(c.status));
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
  }
}

TEST_F(ClientTest, KeepsTheServersMessageFromEveryErrorShape) {
  transport_.push(
      {400, {}, R"({"error":{"message":"llama says","type":"invalid_request_error","code":400}})"});
  auto e = expect_throw<ApiError>(client(), messages_);
  EXPECT_EQ(e.api_code(), "400");  // llama.cpp's numeric code
  EXPECT_NE(std::string(e.what()).find("llama says"), std::string::npos);
  transport_.push({502, {}, "<html><body>Bad Gateway</body></html>"});
  e = expect_throw<ApiError>(client(), messages_);
  EXPECT_NE(std::string(e.what()).find("Bad Gateway"), std::string::npos);
  transport_.push({500, {}, ""});
  e = expect_throw<ApiError>(client(), messages_);
  EXPECT_NE(std::string(e.what()).find("empty body"), std::string::npos);
}

TEST_F(ClientTest, ContextOverflowIsRecognisedInBothDialects) {
  transport_.push(
      {400,
       {},
       R"({"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded"}})"});
  auto e = expect_throw<ApiError>(client(), messages_);
  EXPECT_TRUE(e.context_overflow());
  EXPECT_FALSE(e.retryable());  // the worker recompresses and retries once itself
  EXPECT_EQ(e.reason(), "context_length_exceeded");
  transport_.push(
      {400,
       {},
       R"({"error":{"message":"x","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}})"});
  e = expect_throw<ApiError>(client(), messages_);
  EXPECT_TRUE(e.context_overflow());
}

TEST_F(ClientTest, RetryAfterAndShouldRetryHeadersAreHonoured) {
  transport_.push({429, {{"retry-after", "7"}}, "{}"});
  auto e = expect_throw<ApiError>(client(), messages_);
  EXPECT_EQ(e.retry_after(), std::chrono::milliseconds(7000));
  transport_.push({500, {{"x-should-retry", "false"}}, "{}"});
  e = expect_throw<ApiError>(client(), messages_);
  EXPECT_FALSE(e.retryable());
  transport_.push({400, {{"x-should-retry", "true"}}, "{}"});
  e = expect_throw<ApiError>(client(), messages_);
  EXPECT_TRUE(e.retryable());
}

TEST_F(ClientTest, TransportFailuresAreRetryableExceptAborts) {
  transport_.push_error(CURLE_OPERATION_TIMEDOUT, "timed out");
  auto e = expect_throw<TransportError>(client(), messages_);
  EXPECT_TRUE(e.retryable());
  EXPECT_EQ(e.reason(), "timeout");
  transport_.push_error(CURLE_COULDNT_CONNECT, "refused");
  e = expect_throw<TransportError>(client(), messages_);
  EXPECT_EQ(e.reason(), "network");
  transport_.push_error(CURLE_ABORTED_BY_CALLBACK, "aborted");
  e = expect_throw<TransportError>(client(), messages_);
  EXPECT_FALSE(e.retryable());
  EXPECT_EQ(e.code().category().name(), std::string("curl"));
}

TEST_F(ClientTest, ErrorMessagesNeverContainTheApiKey) {
  transport_.push({401, {}, R"({"error":{"message":"Incorrect API key provided"}})"});
  const auto e = expect_throw<ApiError>(client(), messages_);
  EXPECT_EQ(std::string(e.what()).find("sk-secret"), std::string::npos);
}

TEST_F(ClientTest, InvalidUtf8InContentStillMakesValidJson) {
  transport_.push({200, {}, kOk});
  client().chat({{Role::kUser, "bad \xFF byte", 0}});
  EXPECT_NO_THROW(nlohmann::json::parse(transport_.requests[0].body));
}

}  // namespace
}  // namespace autonous::openai

namespace autonous::openai {
namespace {

// #29's wire: tools offered, calls parsed, calls and results replayed.
const std::string kCalls = R"({"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",
  "message":{"role":"assistant","content":"Let me add.","tool_calls":[
    {"id":"call_a","type":"function","function":{"name":"get_sum","arguments":"{\"a\":1,\"b\":2}"},
     "extra_content":{"google":{"thought_signature":"sig"}}},
    {"type":"function","function":{"name":"echo","arguments":{"text":"key sk-secret"}}},
    {"id":"call_a","type":"function","function":{"name":"noop","arguments":""}}]}}]})";
const std::string kTools =
    R"([{"type":"function","function":{"name":"get_sum","parameters":{"type":"object"}}}])";

bool nine_letters_and_digits(const std::string& id) {
  if (id.size() != 9) return false;
  for (const char c : id)
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  return true;
}

class ClientToolsTest : public ::testing::Test {
 protected:
  Client client() {
    return Client(transport_,
                  {"http://127.0.0.1:1/v1", "sk-secret", "m1", std::chrono::seconds(5)});
  }
  CallOptions offered() const {
    CallOptions call;
    call.tools = kTools;
    return call;
  }
  const std::vector<common::Message> messages_ = {{common::Role::kUser, "add 1 and 2", 0}};
  testing::ScriptedTransport transport_;
};

TEST_F(ClientToolsTest, OfferedToolsAreSentAndTheCallsReadAsTheServerWroteThem) {
  transport_.push({200, {}, kCalls});
  const ChatResult r = client().chat(messages_, {}, offered());
  const auto body = nlohmann::json::parse(transport_.requests.at(0).body);
  EXPECT_EQ(body["tools"], nlohmann::json::parse(kTools));
  EXPECT_EQ(r.content, "Let me add.");  // text and calls together: both kept
  EXPECT_EQ(r.finish_reason, "tool_calls");
  ASSERT_EQ(r.tool_calls.size(), 3u);
  EXPECT_EQ(r.tool_calls[0].id, "call_a");
  EXPECT_EQ(r.tool_calls[0].name, "get_sum");
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"a":1,"b":2})");
  // No id: one made up, of the strictest shape servers accept (Mistral's: 9 letters and digits).
  EXPECT_TRUE(nine_letters_and_digits(r.tool_calls[1].id)) << r.tool_calls[1].id;
  // Arguments as an object: its JSON text, the key redacted.
  EXPECT_EQ(r.tool_calls[1].arguments, R"({"text":"key [redacted]"})");
  // A repeated id is replaced (results are matched by id); "" arguments are none.
  EXPECT_TRUE(nine_letters_and_digits(r.tool_calls[2].id)) << r.tool_calls[2].id;
  EXPECT_EQ(r.tool_calls[2].arguments, "{}");
  const auto wire = nlohmann::json::parse(r.tool_calls_json);
  ASSERT_EQ(wire.size(), 3u);
  // Replayed whole: a server's own fields (Gemini's thought signature) go back with the call.
  EXPECT_EQ(wire[0]["extra_content"]["google"]["thought_signature"], "sig");
  EXPECT_EQ(wire[1]["id"], r.tool_calls[1].id);
  EXPECT_EQ(wire[1]["type"], "function");
  EXPECT_EQ(wire[1]["function"]["arguments"], R"({"text":"key [redacted]"})");
  EXPECT_EQ(r.tool_calls_json.find("sk-secret"), std::string::npos);
}

TEST_F(ClientToolsTest, WithoutToolsOfferedACallsOnlyReplyIsStillAnEmptyReply) {
  const std::string calls_only = R"({"choices":[{"message":{"content":null,"tool_calls":[
    {"id":"x","type":"function","function":{"name":"get_sum","arguments":"{}"}}]}}]})";
  for (const std::string tools : {"", "[]"}) {
    transport_.push({200, {}, calls_only});
    CallOptions call;
    call.tools = tools;
    try {
      client().chat(messages_, {}, call);
      FAIL() << "a calls-only reply to a request without tools was taken as an answer";
    } catch (const ResponseError& e) {
      EXPECT_EQ(e.reason(), "empty_reply");
    }
    EXPECT_FALSE(nlohmann::json::parse(transport_.requests.back().body).contains("tools"));
  }
}

TEST_F(ClientToolsTest, ACallWithoutAFunctionNameIsMalformed) {
  transport_.push({200, {}, R"({"choices":[{"message":{"content":null,"tool_calls":[
    {"id":"x","type":"function","function":{"arguments":"{}"}}]}}]})"});
  try {
    client().chat(messages_, {}, offered());
    FAIL() << "a call without a name was read";
  } catch (const ResponseError& e) {
    EXPECT_NE(e.reason(), "empty_reply");
    EXPECT_NE(std::string(e.what()).find("has no function name"), std::string::npos) << e.what();
  }
}

TEST_F(ClientToolsTest, CallsAndResultsAreReplayedAsTheWireWantsThem) {
  common::Message asked(common::Role::kAssistant, "", 2);
  asked.tool_calls =
      R"([{"id":"call_a","type":"function","function":{"name":"get_sum","arguments":"{}"}}])";
  common::Message result(common::Role::kTool, "3", 3);
  result.tool_call_id = "call_a";
  const auto body = nlohmann::json::parse(
      request_body("m", {{common::Role::kUser, "add", 1}, asked, result}, {}));
  const auto& m = body["messages"];
  EXPECT_TRUE(m[1]["content"].is_null());
  EXPECT_EQ(m[1]["tool_calls"][0]["id"], "call_a");
  EXPECT_EQ(m[2]["role"], "tool");
  EXPECT_EQ(m[2]["tool_call_id"], "call_a");
  EXPECT_EQ(m[2]["content"], "3");
  EXPECT_FALSE(m[0].contains("tool_calls"));
  EXPECT_FALSE(m[0].contains("tool_call_id"));
  // What only a bug makes is refused before anything is sent: calls that are not a JSON array
  // (their results would be orphans), a result without the id it answers, tools not an array.
  common::Message bad_calls = asked;
  bad_calls.tool_calls = "not json";
  EXPECT_THROW(request_body("m", {bad_calls}, {}), std::invalid_argument);
  common::Message orphan = result;
  orphan.tool_call_id.clear();
  EXPECT_THROW(request_body("m", {orphan}, {}), std::invalid_argument);
  CallOptions bad;
  bad.tools = "{}";
  EXPECT_THROW(request_body("m", {asked}, bad), std::invalid_argument);
  EXPECT_THROW(client().chat({orphan}), std::invalid_argument);
  EXPECT_TRUE(transport_.requests.empty());
}

}  // namespace
}  // namespace autonous::openai
